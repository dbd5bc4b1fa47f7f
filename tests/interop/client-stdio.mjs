// Interop check: `mcpd --stdio`, launched as a child process.
//
// Usage: node client-stdio.mjs /path/to/mcpd sdk   -> "stdio-ts:" checks
//        node client-stdio.mjs /path/to/mcpd raw   -> "stdio-raw:" checks
//
// sdk: the official TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2) StdioClientTransport
//      launches `mcpd --stdio` with MCPD_LOG_LEVEL=debug and runs the session-era flows of
//      session-flows.mjs (no session id, no DELETE), then closes: the SDK ends stdin and mcpd must
//      exit 0 on its own, before the SDK's 2 s SIGTERM escalation.
// raw: spawns `mcpd --stdio` (MCPD_LOG_LEVEL=debug) with plain pipes and writes JSON-RPC lines by
//      hand: initialize, initialized, a tools/call with a progress token, an invalid line (want a
//      -32700 line, then the server keeps answering), a multi-line echo, big_payload, a cancelled
//      call; closes stdin (exit 0 within a few seconds); every stdout line must be one JSON-RPC
//      object; stderr must carry the debug logs. Then SIGTERM after initialize, and EOF with a call
//      in flight: both exit 0 within a few seconds.
// Prints "PASS <prefix><name>" / "FAIL <prefix><name>: <reason>", exits 0 only if all passed.

import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ResourceUpdatedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { assert, errText, makeReporter, sleep, tapTransportEarly, withTimeout } from './common.mjs';
import { runSessionFlows } from './session-flows.mjs';

const [bin, mode] = process.argv.slice(2);
if (!bin || !['sdk', 'raw'].includes(mode)) {
    console.error('usage: node client-stdio.mjs <path to mcpd> sdk|raw');
    process.exit(2);
}

const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

const rep = makeReporter(mode === 'sdk' ? 'stdio-ts:' : 'stdio-raw:');
function finish() {
    if (backgroundErrors.length > 0) {
        console.error(`${rep.prefix} background errors (informational):`);
        for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
    }
    process.exit(rep.failed === 0 ? 0 : 1);
}

// Each stdout line must be exactly one JSON-RPC 2.0 message object (no batch, no log text, no blank
// line) and the output must end with a newline. Returns [messages, problems].
function parseStdout(buf) {
    const text = buf.toString('utf8');
    const problems = [];
    if (text.length > 0 && !text.endsWith('\n')) problems.push(`output does not end with a newline: …${JSON.stringify(text.slice(-80))}`);
    const lines = text.split('\n');
    lines.pop(); // after the final newline
    const messages = [];
    lines.forEach((line, i) => {
        if (line.includes('\r')) problems.push(`line ${i + 1} contains a carriage return`);
        let m;
        try {
            m = JSON.parse(line);
        } catch (e) {
            problems.push(`line ${i + 1} is not JSON (${errText(e)}): ${JSON.stringify(line.slice(0, 120))}`);
            return;
        }
        if (m === null || typeof m !== 'object' || Array.isArray(m)) {
            problems.push(`line ${i + 1} is not a single JSON-RPC object: ${line.slice(0, 120)}`);
            return;
        }
        if (m.jsonrpc !== '2.0') problems.push(`line ${i + 1} has jsonrpc ${JSON.stringify(m.jsonrpc)}: ${line.slice(0, 120)}`);
        const kind = 'method' in m || 'result' in m || 'error' in m;
        if (!kind) problems.push(`line ${i + 1} is neither request, notification nor response: ${line.slice(0, 120)}`);
        messages.push(m);
    });
    return [messages, problems, lines.length];
}

function debugLines(stderr) {
    return stderr.split('\n').filter(l => /\bDEBUG\b/.test(l) || /"level":\s*"DEBUG"/i.test(l));
}

// ===================================== sdk ======================================================
async function runSdk() {
    let stderr = '';
    const transport = new StdioClientTransport({
        command: bin,
        args: ['--stdio'],
        env: { MCPD_LOG_LEVEL: 'debug' },
        stderr: 'pipe'
    });
    transport.stderr?.on('data', d => {
        stderr += d.toString('utf8');
    });
    const client = new Client(
        { name: 'mcpd-interop-ts-stdio', version: '0.0.0' },
        { capabilities: { sampling: {}, elicitation: {} } }
    );
    const transportErrors = [];
    client.onerror = e => {
        const t = errText(e);
        // Progress notifications dropped by the SDK itself (typescript-sdk#2580) are informational.
        if (/progress notification for an unknown token/.test(t)) backgroundErrors.push(t);
        else transportErrors.push(t);
    };
    const elicitations = [];
    client.setRequestHandler(ElicitRequestSchema, async request => {
        elicitations.push(request.params);
        return { action: 'accept', content: { answer: 'blue' } };
    });
    const samplings = [];
    client.setRequestHandler(CreateMessageRequestSchema, async request => {
        samplings.push(request.params);
        return {
            role: 'assistant',
            content: { type: 'text', text: 'sampled!' },
            model: 'mcpd-interop-fake-model',
            stopReason: 'endTurn'
        };
    });
    const resourceUpdates = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, n => {
        resourceUpdates.push({ at: Date.now(), uri: n.params.uri });
    });

    const sent = [];
    const received = [];
    tapTransportEarly(transport, sent, received);
    const negotiated = () =>
        received.find(r => r.msg.id === sent.find(m => m.method === 'initialize')?.id)?.msg.result?.protocolVersion;

    let child = null;
    const connected = await runSessionFlows({
        rep,
        url: null,
        client,
        transport,
        noSessionId: true,
        skipDelete: true,
        progressFromWire: true,
        protocolVersion: negotiated,
        connect: async () => {
            await client.connect(transport);
            // Private, but the only handle on the child's exit status (close() forgets it).
            child = transport._process;
        },
        afterConnect: async () => `pid ${transport.pid}`,
        callTool: (params, options) => client.callTool(params, undefined, options),
        sent,
        received,
        elicitations,
        samplings,
        resourceUpdates
    });

    // The SDK parses every stdout line; anything that is not a JSON-RPC message lands in onerror.
    await rep.check('stdout_clean', async () => {
        assert(connected, 'skipped: initialize failed');
        assert(transportErrors.length === 0, `the transport reported ${transportErrors.length} error(s): ${transportErrors.slice(0, 3).join(' | ')}`);
        return `${received.length} messages from stdout, none unparseable`;
    });

    // Closing: the SDK ends stdin, waits up to 2 s, then SIGTERMs. mcpd must exit 0 on the EOF.
    await rep.check('eof_exit', async () => {
        assert(connected && child, 'skipped: initialize failed');
        const exited = new Promise(resolve => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else child.once('exit', () => resolve());
        });
        const started = Date.now();
        await withTimeout(client.close(), 8000, 'closing the stdio client');
        await withTimeout(exited, 3000, 'waiting for the exit status');
        const took = Date.now() - started;
        assert(child.signalCode === null, `mcpd was killed by ${child.signalCode} ${took} ms after stdin closed (it did not exit on EOF)`);
        assert(child.exitCode === 0, `mcpd exited with status ${child.exitCode}`);
        assert(took < 2000, `mcpd took ${took} ms to exit after EOF`);
        const dbg = debugLines(stderr).length;
        return `exit 0 ${took} ms after EOF; stderr ${stderr.split('\n').filter(Boolean).length} lines (${dbg} DEBUG)`;
    });
    finish();
}

// ===================================== raw ======================================================
// A child with plain pipes and a line reader over its stdout.
function launch() {
    const child = spawn(bin, ['--stdio'], {
        env: { ...process.env, MCPD_LOG_LEVEL: 'debug', NO_COLOR: '1' },
        stdio: ['pipe', 'pipe', 'pipe']
    });
    const p = {
        child,
        out: Buffer.alloc(0),
        err: '',
        messages: [], // parsed stdout lines, in order
        waiters: [],
        exit: null,
        exited: null
    };
    let pending = Buffer.alloc(0);
    child.stdout.on('data', chunk => {
        p.out = Buffer.concat([p.out, chunk]);
        pending = Buffer.concat([pending, chunk]);
        let i;
        while ((i = pending.indexOf(0x0a)) >= 0) {
            const line = pending.subarray(0, i).toString('utf8');
            pending = pending.subarray(i + 1);
            try {
                p.messages.push({ at: Date.now(), msg: JSON.parse(line) });
            } catch {
                p.messages.push({ at: Date.now(), msg: null, line });
            }
        }
        const w = p.waiters;
        p.waiters = [];
        w.forEach(f => f());
    });
    child.stderr.on('data', d => {
        p.err += d.toString('utf8');
    });
    child.stdin.on('error', () => {});
    p.exited = new Promise(resolve => {
        child.on('exit', (code, signal) => {
            p.exit = { code, signal, at: Date.now() };
            const w = p.waiters;
            p.waiters = [];
            w.forEach(f => f());
            resolve(p.exit);
        });
    });
    p.send = obj => child.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n');
    // Resolves with the first message (from index `from`) matching pred.
    p.waitFor = async (pred, ms = 5000, what = 'a message', from = 0) => {
        const deadline = Date.now() + ms;
        for (;;) {
            const hit = p.messages.slice(from).find(x => x.msg && pred(x.msg));
            if (hit) return hit.msg;
            if (p.exit) throw new Error(`mcpd exited (${JSON.stringify(p.exit)}) before ${what}; stderr: ${p.err.slice(-300)}`);
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no ${what} within ${ms} ms`);
            await new Promise(r => {
                const t = setTimeout(r, left);
                p.waiters.push(() => {
                    clearTimeout(t);
                    r();
                });
            });
        }
    };
    p.response = (id, ms, what) => p.waitFor(m => m.id === id && ('result' in m || 'error' in m), ms, what ?? `a response to id ${id}`);
    p.kill = () => {
        if (!p.exit) child.kill('SIGKILL');
    };
    return p;
}

const INIT = id => ({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'mcpd-interop-raw-stdio', version: '0.0.0' }
    }
});

async function initialize(p) {
    p.send(INIT(1));
    const r = await p.response(1, 10000, 'the initialize response');
    assert(r.result, `initialize failed: ${JSON.stringify(r)}`);
    p.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r.result;
}

async function exitWithin(p, ms, what) {
    const e = await withTimeout(p.exited, ms, `waiting for mcpd to exit after ${what}`);
    assert(e.signal === null, `mcpd died of ${e.signal} after ${what}`);
    assert(e.code === 0, `mcpd exited with status ${e.code} after ${what}; stderr: ${p.err.slice(-300)}`);
    return e;
}

async function runRaw() {
    const p = launch();
    let ok = false;
    let nextId = 10;
    const callTool = (name, args, meta) => {
        const id = nextId++;
        p.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
        return id;
    };
    const toolText = r => {
        assert(r.result && Array.isArray(r.result.content), `not a tool result: ${JSON.stringify(r).slice(0, 200)}`);
        return r.result.content.find(c => c.type === 'text')?.text;
    };

    await rep.check('initialize', async () => {
        const result = await initialize(p);
        assert(typeof result.protocolVersion === 'string', `no protocolVersion: ${JSON.stringify(result)}`);
        assert(result.serverInfo?.name, `no serverInfo: ${JSON.stringify(result)}`);
        ok = true;
        return `protocol ${result.protocolVersion}, server ${result.serverInfo.name}`;
    });

    async function step(name, fn) {
        if (!ok) return rep.fail(name, 'skipped: initialize failed');
        await rep.check(name, fn);
    }

    await step('progress', async () => {
        const from = p.messages.length;
        const id = callTool('countdown', { steps: 3, interval_ms: 50 }, { progressToken: 'raw-progress-1' });
        const r = await p.response(id, 5000);
        assert(toolText(r) === 'done', `countdown answered ${JSON.stringify(r).slice(0, 200)}`);
        const resAt = p.messages.findIndex(x => x.msg?.id === id && 'result' in x.msg);
        const prog = p.messages
            .map((x, i) => ({ i, m: x.msg }))
            .slice(from)
            .filter(x => x.m?.method === 'notifications/progress' && x.m.params?.progressToken === 'raw-progress-1');
        assert(prog.length === 3, `${prog.length} progress notifications, want 3`);
        assert(prog.every(x => x.i < resAt), 'a progress notification came after the response');
        assert(prog.every((x, k) => x.m.params.progress === k + 1 && x.m.params.total === 3), `progress ${JSON.stringify(prog.map(x => x.m.params))}`);
        return 'progress 1,2,3 then the result';
    });

    await step('parse_error', async () => {
        const from = p.messages.length;
        p.send('not json');
        const e = await p.waitFor(m => 'error' in m && m.id === null, 5000, 'an error line for "not json"', from);
        assert(e.error.code === -32700, `error code ${e.error.code}, want -32700: ${JSON.stringify(e)}`);
        return `-32700 ${JSON.stringify(e.error.message).slice(0, 80)}`;
    });

    await step('keeps_going', async () => {
        // The server still answers, and a text with newlines travels escaped inside one line.
        const message = 'line one\nline two\r\nünïcödé ✓\u2028end';
        const id = callTool('echo', { message });
        const r = await p.response(id, 5000);
        assert(toolText(r) === message, `echo returned ${JSON.stringify(toolText(r))}`);
        return 'echo after the invalid line, newlines escaped';
    });

    await step('big_payload', async () => {
        const bytes = 200000;
        const id = callTool('big_payload', { bytes });
        const r = await p.response(id, 10000);
        const got = Buffer.byteLength(toolText(r) ?? '', 'utf8');
        assert(got === bytes, `got ${got} bytes, want ${bytes}`);
        return `${bytes} bytes in one line`;
    });

    await step('cancel', async () => {
        const id = callTool('countdown', { steps: 50, interval_ms: 100 }, { progressToken: 'raw-cancel' });
        await sleep(300);
        p.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'interop' } });
        // No answer for the cancelled request, and the server's request is gone.
        let stats;
        const deadline = Date.now() + 3000;
        for (;;) {
            const sid = callTool('server_stats', {});
            stats = JSON.parse(toolText(await p.response(sid, 5000)));
            if (stats.in_flight_requests === 1 || Date.now() > deadline) break;
            await sleep(100);
        }
        assert(stats.in_flight_requests === 1, `in_flight_requests ${stats.in_flight_requests} 3 s after the cancel`);
        await sleep(300);
        const late = p.messages.find(x => x.msg?.id === id);
        if (late) throw new Error(`a response for the cancelled request arrived: ${JSON.stringify(late.msg).slice(0, 200)}`);
        return 'no response, in_flight_requests back to 1';
    });

    await rep.check('eof_exit', async () => {
        const closedAt = Date.now();
        p.child.stdin.end();
        const e = await exitWithin(p, 5000, 'EOF on stdin');
        return `exit 0 ${e.at - closedAt} ms after EOF`;
    });
    p.kill();

    await rep.check('stdout_only_jsonrpc', async () => {
        const [messages, problems, lines] = parseStdout(p.out);
        assert(problems.length === 0, `${problems.length} bad stdout line(s): ${problems.slice(0, 3).join(' | ')}`);
        assert(lines > 0, 'no stdout at all');
        return `${lines} lines, each one JSON-RPC object (${messages.filter(m => m.method).length} notifications/requests, ${messages.filter(m => !m.method).length} responses)`;
    });

    await rep.check('stderr_debug_logs', async () => {
        const dbg = debugLines(p.err);
        assert(p.err.length > 0, 'nothing on stderr at MCPD_LOG_LEVEL=debug');
        assert(dbg.length > 0, `no DEBUG line on stderr at MCPD_LOG_LEVEL=debug; stderr: ${p.err.slice(0, 300)}`);
        return `${p.err.split('\n').filter(Boolean).length} stderr lines, ${dbg.length} DEBUG, e.g. ${JSON.stringify(dbg[0].slice(0, 160))}`;
    });

    // SIGTERM after initialize: a clean exit.
    await rep.check('sigterm', async () => {
        const q = launch();
        try {
            await initialize(q);
            const id = 2;
            q.send({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
            await q.response(id, 5000);
            const at = Date.now();
            q.child.kill('SIGTERM');
            let e;
            try {
                e = await exitWithin(q, 5000, 'SIGTERM');
            } catch (err) {
                // Tell a hang apart from a crash: does closing stdin then let it go?
                if (q.exit) throw err;
                q.child.stdin.end();
                const after = await Promise.race([q.exited, sleep(3000).then(() => null)]);
                const log = q.err.split('\n').filter(Boolean).pop() ?? '';
                throw new Error(
                    `${err.message}; last stderr line ${JSON.stringify(log.slice(0, 160))}; ` +
                        (after ? `it exited (${JSON.stringify({ code: after.code, signal: after.signal })}) only once stdin was closed too` : 'closing stdin did not end it either')
                );
            }
            const [, problems] = parseStdout(q.out);
            assert(problems.length === 0, `bad stdout: ${problems.slice(0, 3).join(' | ')}`);
            return `exit 0 ${e.at - at} ms after SIGTERM`;
        } finally {
            q.kill();
        }
    });

    // EOF while a tool call runs: the process still ends promptly and cleanly.
    await rep.check('eof_in_flight', async () => {
        const q = launch();
        try {
            await initialize(q);
            q.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'countdown', arguments: { steps: 100, interval_ms: 100 }, _meta: { progressToken: 'eof' } } });
            await q.waitFor(m => m.method === 'notifications/progress', 5000, 'the first progress notification');
            const at = Date.now();
            q.child.stdin.end();
            const e = await exitWithin(q, 5000, 'EOF with a call in flight');
            const [, problems] = parseStdout(q.out);
            assert(problems.length === 0, `bad stdout: ${problems.slice(0, 3).join(' | ')}`);
            return `exit 0 ${e.at - at} ms after EOF`;
        } finally {
            q.kill();
        }
    });

    finish();
}

try {
    if (mode === 'sdk') await runSdk();
    else await runRaw();
} catch (e) {
    rep.fail('client', errText(e));
    finish();
}
