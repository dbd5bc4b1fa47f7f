// Gateway interop check: the official TypeScript MCP SDK v1 client (@modelcontextprotocol/sdk 1.x,
// StreamableHTTPClientTransport, pinned in package.json) against an mcpd configured with upstreams
// (gateway.sh starts all of it):
//   everything    npm @modelcontextprotocol/server-everything (pinned), stdio, share = "shared"
//   py            upstream_http.py (PyPI mcp 2.x MCPServer), Streamable HTTP
//   [everything_s] optional: server-everything again with share = "session" (GATEWAY_SESSION_UPSTREAM)
//   [dead]        optional: an upstream mcpd cannot reach (GATEWAY_DEAD_UPSTREAM)
//
//   node gateway.mjs http://127.0.0.1:PORT/mcp          (or MCP_URL=...)
//   node gateway.mjs URL --only way1,way2,way3,isolation,session_end     only these sections
//   node gateway.mjs --direct everything=http://127.0.0.1:3001/mcp --direct py=http://127.0.0.1:8000/mcp
//       development mode, no mcpd: the way-1, isolation and session_end checks go straight to these
//       upstream URLs (server-everything's own `streamableHttp` mode, upstream_http.py); way 2 and
//       way 3 are skipped. Proves the client side of the checks (see NOTES.md for what differs).
//
// Environment:
//   GATEWAY_DEAD_UPSTREAM=<id>     an [[upstream]] id that cannot be started/reached: way 3 expects
//                                  -32000 "Failed to connect to server '<id>': …" for it, way 2 that
//                                  none of its tools are listed
//   GATEWAY_SESSION_UPSTREAM=<id>  server-everything with share = "session": isolation checks on it
//                                  with strict sampling (each session has its own child)
//   GATEWAY_MCPD_PID=<pid>         mcpd's pid: session_child watches its child processes in /proc
//   GATEWAY_EVERYTHING_ENV=K=V     the everything upstream's [[upstream]] env table has K=V:
//                                  way1:everything:get_env expects it in the child's environment
//
// Sections (all on mcpd's Streamable HTTP transport, session era 2025-11-25):
//   way1         URL/{id}, per upstream: serverInfo/capabilities/instructions are the upstream's; tools
//                unprefixed; a simple call; progress; logging relayed unchanged (py); sampling and
//                elicitation relayed to this client's handlers; roots/list relayed (everything);
//                image content; env; resources; prompts; cancel reaches the upstream (py);
//                list_changed from the call's POST stream and from the upstream's GET stream (py);
//                DELETE then 404
//   way2         URL: aggregation; "{id}__" tools and prompts next to mcpd's own; the same tool checks
//                through the prefixed names; cancel; list_changed; list_changed_fanout (one upstream
//                change -> about one notification per session); resources by their own URIs, a
//                template-only URI routed to its upstream
//   way3         raw fetch on a /mcp session (the SDK cannot add top-level fields): "server_id" requests
//                forwarded unchanged (names unprefixed, progress with the client's token); -32001 for
//                an unknown id; -32000 for an unreachable one
//   isolation    two clients on one upstream: concurrent progress (each only its own), logging (py),
//                concurrent sampling, and sampling while the other client's long call runs. "strict"
//                (both served) for py (HTTP: the upstream's request rides the call's POST stream) and
//                a share = "session" upstream; "noleak" for a shared stdio upstream, where a
//                server->client request carries nothing that ties it to one of two calls in flight
//   session_end  session_child: a session on the share = "session" upstream gets its own child process
//                of mcpd, gone within 5 s of the session's DELETE (needs GATEWAY_MCPD_PID); then
//                a client DELETEs its session mid-call: the upstream call is cancelled, a sampling
//                request pending at that client is released, and a lone sampling call still works
//                afterwards (run last: a failure here can leave state behind in mcpd)
//
// Prints "PASS <name> (detail)" / "FAIL <name>: reason" (reasons quote what the server sent), then
// "gateway: N passed, M failed"; "SKIP <name>: reason" lines are not counted. Exit status 0 iff
// nothing failed (and something passed). Global timeout 120 s.
//
// Plain ESM, Node 20+; must sit beside the installed node_modules (gateway.sh copies it there).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ListRootsRequestSchema,
    LoggingMessageNotificationSchema,
    ToolListChangedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { readdirSync, readFileSync } from 'node:fs';
import { assert, errText, firstText, makeReporter, sleep, tapTransport, withTimeout } from './common.mjs';

const GLOBAL_TIMEOUT_MS = 120000;
const PROTOCOL = '2025-11-25';

// ---- arguments --------------------------------------------------------------------------------
const argv = process.argv.slice(2);
let baseUrl = process.env.MCP_URL || '';
const direct = {};
let only = null;
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--direct') {
        const [id, ...rest] = (argv[++i] || '').split('=');
        direct[id] = rest.join('=');
    } else if (a === '--only') {
        only = new Set((argv[++i] || '').split(',').filter(Boolean));
    } else if (!a.startsWith('--')) {
        baseUrl = a;
    } else {
        console.error(`unknown option ${a}`);
        process.exit(2);
    }
}
const devMode = Object.keys(direct).length > 0;
if (!baseUrl && !devMode) {
    console.error('usage: node gateway.mjs <mcpd /mcp url> [--only way1,way2,way3,isolation] [--direct id=url ...]');
    process.exit(2);
}
baseUrl = baseUrl.replace(/\/+$/, '');
const deadUpstream = process.env.GATEWAY_DEAD_UPSTREAM || '';
const everythingEnv = process.env.GATEWAY_EVERYTHING_ENV || '';
const sessionUpstream = process.env.GATEWAY_SESSION_UPSTREAM || '';
const mcpdPid = process.env.GATEWAY_MCPD_PID || '';
const sections = only ?? new Set(devMode ? ['way1', 'isolation', 'session_end'] : ['way1', 'way2', 'way3', 'isolation', 'session_end']);
const way1Url = id => direct[id] || `${baseUrl}/${id}`;

const rep = makeReporter('');
// The name of the check running (recorded with each list_changed notification).
let currentCheck = '';
{
    const check = rep.check;
    rep.check = (name, fn, ms) => {
        currentCheck = name;
        return check(name, fn, ms);
    };
}
const skip = (name, why) => console.log(`SKIP ${name}: ${why}`);
const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

function done() {
    if (backgroundErrors.length > 0) {
        console.error('background errors (informational):');
        for (const e of backgroundErrors.slice(0, 20)) console.error(`  ${e}`);
    }
    console.log(`gateway: ${rep.passed} passed, ${rep.failed} failed`);
    process.exit(rep.failed === 0 && rep.passed > 0 ? 0 : 1);
}
const globalTimer = setTimeout(() => {
    rep.fail('run', `global timeout: not finished after ${GLOBAL_TIMEOUT_MS / 1000} s`);
    done();
}, GLOBAL_TIMEOUT_MS);
globalTimer.unref?.();

// ---- what each upstream is ------------------------------------------------------------------
const MCPD_ONLY_TOOLS = ['countdown', 'ask_user', 'summarize', 'big_payload', 'server_stats'];
const rnd = () => Math.random().toString(36).slice(2, 8);

const UPSTREAMS = {
    everything: {
        serverName: 'mcp-servers/everything',
        // get-sum etc. always; trigger-sampling-request / trigger-elicitation-request only when the
        // upstream's client (mcpd) declared sampling / elicitation in its initialize.
        tools: ['echo', 'get-sum', 'get-tiny-image', 'get-env', 'trigger-long-running-operation'],
        samplingTool: 'trigger-sampling-request',
        elicitationTool: 'trigger-elicitation-request',
        caps(c) {
            assert(c.tools, 'no tools capability');
            assert(c.logging, 'no logging capability');
            assert(c.resources?.subscribe === true, `resources.subscribe is not true: ${JSON.stringify(c.resources)}`);
            assert(c.prompts, 'no prompts capability');
        },
        simple: { name: 'echo', arguments: { message: 'hello gateway' }, expect: 'Echo: hello gateway' },
        progress: steps => ({ name: 'trigger-long-running-operation', arguments: { duration: steps * 0.25, steps } }),
        progressText: steps => `Steps: ${steps}.`,
        sampling: prompt => ({ name: 'trigger-sampling-request', arguments: { prompt, maxTokens: 20 } }),
        resourceUri: 'demo://resource/static/document/instructions.md',
        resourceCheck: text => assert(text.length > 20, `resource text too short: ${JSON.stringify(text)}`),
        prompts: ['simple-prompt', 'args-prompt'],
        prompt: { name: 'args-prompt', arguments: { city: 'Paris' }, expect: "What's weather in Paris?" },
        hasLogging: false
    },
    py: {
        serverName: 'mcpd-interop-py-upstream',
        tools: ['add', 'slow_count', 'ask_model', 'stats', 'grow'],
        samplingTool: 'ask_model',
        elicitationTool: null,
        caps(c) {
            assert(c.tools, 'no tools capability');
            assert(c.tools.listChanged === true, `tools.listChanged is not true: ${JSON.stringify(c.tools)}`);
            assert(c.resources && c.prompts, 'no resources/prompts capability');
        },
        simple: { name: 'add', arguments: { a: 2, b: 3 }, expect: '2 + 3 = 5' },
        progress: steps => ({ name: 'slow_count', arguments: { steps, interval_ms: 100 } }),
        progressText: steps => `counted to ${steps}`,
        sampling: prompt => ({ name: 'ask_model', arguments: { prompt } }),
        resourceUri: 'py://greeting',
        resourceCheck: text => assert(text === 'Hello from the python upstream', `resource text ${JSON.stringify(text)}`),
        prompts: ['review'],
        prompt: { name: 'review', arguments: { code: 'x = 1' }, expect: 'Please review this code:\nx = 1' },
        hasLogging: true
    }
};

// ---- SDK client with handlers ------------------------------------------------------------------
function makeClient(tag, url) {
    const st = {
        tag,
        url,
        samplings: [],
        elicitations: [],
        logs: [],
        toolListChanged: [],
        rootsRequests: 0,
        errors: [],
        sent: [],
        received: [],
        canned: `canned answer for ${tag}`
    };
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client(
        { name: `mcpd-gateway-interop-${tag}`, version: '0.0.0' },
        { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } }
    );
    client.onerror = e => st.errors.push(errText(e));
    client.setRequestHandler(CreateMessageRequestSchema, async request => {
        st.samplings.push(request.params);
        return {
            role: 'assistant',
            content: { type: 'text', text: st.canned },
            model: 'mcpd-gateway-interop-fake-model',
            stopReason: 'endTurn'
        };
    });
    client.setRequestHandler(ElicitRequestSchema, async request => {
        st.elicitations.push(request.params);
        return {
            action: 'accept',
            content: { name: `Ada ${tag}`, check: true, email: 'ada@example.com', integer: 7 }
        };
    });
    client.setRequestHandler(ListRootsRequestSchema, async () => {
        st.rootsRequests++;
        return { roots: [{ uri: `file:///tmp/mcpd-gateway-interop/${tag}`, name: `root-${tag}` }] };
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, n => st.logs.push(n.params));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => st.toolListChanged.push(currentCheck));
    const c = {
        client,
        transport,
        st,
        async connect() {
            await client.connect(transport);
            tapTransport(transport, st.sent, st.received);
        },
        call(params, options = {}) {
            return client.callTool(params, undefined, { timeout: 20000, ...options });
        },
        // Ends the session (DELETE, if it still has one), then closes the client.
        async close() {
            try {
                if (transport.sessionId) await withTimeout(transport.terminateSession(), 3000);
            } catch {
                // ignore
            }
            try {
                await withTimeout(client.close(), 3000);
            } catch {
                // ignore
            }
        },
        // Wire messages received for a request id (notifications carrying it as progressToken too).
        progressOnWire(token) {
            return st.received
                .map(r => r.msg)
                .filter(m => m.method === 'notifications/progress' && m.params?.progressToken === token);
        },
        lastRequestId(method) {
            const m = st.sent.filter(x => x.method === method && 'id' in x).pop();
            return m?.id;
        }
    };
    return c;
}

// One line, at most n characters (JSON for non-strings; newlines shown as \n).
const short = (v, n = 300) => {
    let s = typeof v === 'string' ? JSON.stringify(v).slice(1, -1) : JSON.stringify(v);
    if (s === undefined) s = String(v);
    return s.length > n ? `${s.slice(0, n)}…` : s;
};
const named = (params, name) => ({ ...params, name: name(params.name) });
const allText = r => (r?.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('\n');

function checkProgress(events, steps, what) {
    assert(events.length >= 1, `${what}: no progress notification reached onprogress`);
    for (let i = 0; i < events.length; i++) {
        const e = events[i];
        assert(e.total === steps, `${what}: progress total ${e.total}, want ${steps}: ${short(events)}`);
        if (i > 0) assert(e.progress > events[i - 1].progress, `${what}: progress not increasing: ${short(events)}`);
    }
}

// ---- shared check bodies (way 1 and way 2 differ in names only) ---------------------------------
// name(x): the tool/prompt name as seen on this endpoint (way 2 prefixes "{id}__").
async function toolChecks(prefix, c, id, spec, name, way2Logs = false) {
    await rep.check(`${prefix}call_${spec.simple.name}`, async () => {
        const r = await c.call({ name: name(spec.simple.name), arguments: spec.simple.arguments });
        assert(!r.isError, `isError result: ${short(r)}`);
        const text = firstText(r);
        assert(text === spec.simple.expect, `got ${JSON.stringify(text)}, want ${JSON.stringify(spec.simple.expect)}`);
        return JSON.stringify(text);
    });

    await rep.check(`${prefix}progress`, async () => {
        const steps = 3;
        const events = [];
        const logsBefore = c.st.logs.length;
        const r = await c.call(named(spec.progress(steps), name), { onprogress: p => events.push(p) });
        assert(!r.isError, `isError result: ${short(r)}`);
        const text = allText(r);
        assert(text.includes(spec.progressText(steps)), `result ${JSON.stringify(text)}`);
        const id = c.lastRequestId('tools/call');
        const wire = c.progressOnWire(id);
        checkProgress(events, steps, 'onprogress');
        assert(events.length === steps, `onprogress got ${events.length} of ${steps}: ${short(events)}; on the wire: ${short(wire)}`);
        const logs = c.st.logs.slice(logsBefore);
        c.st.lastProgressLogs = logs;
        return `${events.length} progress (${events.map(e => `${e.progress}/${e.total}`).join(' ')}), ${logs.length} log messages`;
    });

    if (spec.hasLogging) {
        await rep.check(`${prefix}logging`, async () => {
            const logs = c.st.lastProgressLogs ?? [];
            // Way 1 relays unchanged: {level, logger: "slow_count", data: "slow_count step i/3"}.
            // Way 2 may annotate the upstream; accepted there: data {upstream: id, logger, data}.
            const plain = logs.filter(l => l.logger === 'slow_count' && typeof l.data === 'string');
            const wrapped = logs.filter(l => l.data?.upstream === id && l.data?.logger === 'slow_count');
            const n = way2Logs ? plain.length + wrapped.length : plain.length;
            assert(
                n >= 1,
                `no ${way2Logs ? '' : 'unchanged '}notifications/message from slow_count arrived during the call (want params {level, logger: "slow_count", data: "slow_count step i/3"}); got ${short(logs, 400)}`
            );
            return `${n} notifications/message${wrapped.length ? ` (annotated: ${short(wrapped[0], 120)})` : `: ${short(plain.map(l => l.data), 120)}`}`;
        });
    }

    await rep.check(`${prefix}sampling`, async () => {
        const canned = `canned-${id}-${rnd()}`;
        c.st.canned = canned;
        const before = c.st.samplings.length;
        const prompt = `gateway sampling prompt ${rnd()}`;
        let r;
        try {
            r = await c.call(named(spec.sampling(prompt), name));
        } catch (e) {
            throw new Error(
                `${errText(e)}${
                    /not found|unknown tool/i.test(String(e))
                        ? ` (${spec.samplingTool} is registered only when the upstream's client declares the sampling capability)`
                        : ''
                }`
            );
        }
        assert(!r.isError, `isError result: ${short(r)}`);
        const got = c.st.samplings.slice(before);
        assert(got.length === 1, `the sampling handler ran ${got.length} times (want 1)`);
        const asked = JSON.stringify(got[0].messages);
        assert(asked.includes(prompt), `sampling request does not carry the prompt: ${short(got[0])}`);
        const text = allText(r);
        assert(text.includes(canned), `result lacks the canned text ${canned}: ${short(text)}`);
        return `sampling request relayed, canned text came back`;
    });

    if (spec.elicitationTool) {
        await rep.check(`${prefix}elicitation`, async () => {
            const before = c.st.elicitations.length;
            const r = await c.call({ name: name(spec.elicitationTool), arguments: {} });
            assert(!r.isError, `isError result: ${short(r)}`);
            const got = c.st.elicitations.slice(before);
            assert(got.length === 1, `the elicitation handler ran ${got.length} times (want 1)`);
            assert(got[0].requestedSchema?.properties?.name, `elicitation request has no requestedSchema.name: ${short(got[0])}`);
            const text = allText(r);
            assert(text.includes(`- Name: Ada ${c.st.tag}`), `result lacks the accepted name: ${short(text)}`);
            return 'elicitation/create relayed, accepted content came back';
        });
    }
}

async function resourceChecks(prefix, c, spec) {
    await rep.check(`${prefix}resources`, async () => {
        const { resources } = await c.client.listResources();
        const uris = resources.map(r => r.uri);
        assert(uris.includes(spec.resourceUri), `${spec.resourceUri} not listed; got ${short(uris)}`);
        const r = await c.client.readResource({ uri: spec.resourceUri });
        const item = r.contents?.[0];
        assert(item && item.uri === spec.resourceUri, `read returned ${short(r)}`);
        spec.resourceCheck(item.text ?? '');
        return `${uris.length} resources; read ${spec.resourceUri}: ${short(item.text, 60)}`;
    });
}

async function promptChecks(prefix, c, spec, name) {
    await rep.check(`${prefix}prompts`, async () => {
        const { prompts } = await c.client.listPrompts();
        const names = prompts.map(p => p.name);
        const missing = spec.prompts.map(name).filter(n => !names.includes(n));
        assert(missing.length === 0, `missing prompts ${missing.join(', ')}; got ${names.join(', ')}`);
        const r = await c.client.getPrompt({ name: name(spec.prompt.name), arguments: spec.prompt.arguments });
        const text = r.messages?.[0]?.content?.text;
        assert(text === spec.prompt.expect, `getPrompt returned ${short(r)}`);
        return `${names.length} prompts; ${name(spec.prompt.name)} -> ${JSON.stringify(text)}`;
    });
}

// Cancel a py slow_count with an AbortSignal (SDK 1.x POSTs notifications/cancelled), then watch
// the upstream's own counters (the stats tool) for the cancellation.
async function cancelCheck(prefix, c, name) {
    await rep.check(`${prefix}cancel`, async () => {
        const stats = async () => JSON.parse(firstText(await c.call({ name: name('stats'), arguments: {} })));
        const s0 = await stats();
        const ac = new AbortController();
        const p = c.call({ name: name('slow_count'), arguments: { steps: 50, interval_ms: 100 } }, { signal: ac.signal, onprogress: () => {} });
        await sleep(100);
        const reqId = c.lastRequestId('tools/call');
        await sleep(400);
        const mid = await stats();
        const abortedAt = Date.now();
        ac.abort('gateway interop cancel');
        let rejected = false;
        try {
            await p;
        } catch {
            rejected = true;
        }
        assert(rejected, 'the aborted call did not reject');
        const sentCancel = c.st.sent.some(m => m.method === 'notifications/cancelled');
        assert(sentCancel, 'the SDK sent no notifications/cancelled');
        let s;
        const deadline = Date.now() + 4000;
        for (;;) {
            s = await stats();
            if (s.cancelled > s0.cancelled || Date.now() > deadline) break;
            await sleep(150);
        }
        assert(
            s.cancelled === s0.cancelled + 1 && s.in_flight === s0.in_flight,
            `upstream did not see the cancellation within 4 s: stats before ${short(s0)}, while running ${short(mid)}, after ${short(s)}`
        );
        // Informational: what still reached the client for the cancelled request after the abort
        // (a progress notification racing the cancel is legal; a response should not come).
        const late = c.st.received.filter(
            r => r.at >= abortedAt && (r.msg.params?.progressToken === reqId || (r.msg.id === reqId && !r.msg.method))
        );
        const lateNote = late.length
            ? `; after the abort the client still got ${late.map(r => (r.msg.method ? `${r.msg.method} ${r.msg.params?.progress}` : `a response ${short(r.msg.error ?? r.msg.result, 80)}`)).join(', ')}`
            : '; nothing for it after the abort';
        return `upstream cancelled count ${s0.cancelled} -> ${s.cancelled}, in_flight while running ${mid.in_flight}, after ${s.in_flight}${lateNote}`;
    });
}

// py's grow tool adds a tool and sends notifications/tools/list_changed on the call's POST stream
// ("request") or on the upstream's standalone GET stream ("standalone").
async function listChangedCheck(prefix, c, name, channel) {
    await rep.check(`${prefix}list_changed_${channel}`, async () => {
        const tool = `grown_${channel}_${rnd()}`;
        const before = c.st.toolListChanged.length;
        const r = await c.call({ name: name('grow'), arguments: { name: tool, channel } });
        assert(firstText(r) === `grown ${tool}`, `grow returned ${short(r)}`);
        const deadline = Date.now() + 5000;
        while (c.st.toolListChanged.length === before && Date.now() < deadline) await sleep(50);
        const got = c.st.toolListChanged.length - before;
        const { tools } = await c.client.listTools();
        const names = tools.map(t => t.name);
        const listed = names.includes(name(tool));
        assert(
            got >= 1 && listed,
            `notifications/tools/list_changed received: ${got} within 5 s; ${name(tool)} listed afterwards: ${listed} (tools: ${names.join(', ')})`
        );
        const r2 = await c.call({ name: name(tool), arguments: {} });
        assert(firstText(r2) === `I am ${tool}`, `calling ${name(tool)} returned ${short(r2)}`);
        // Informational: list_changed notifications this session got before (by check), e.g. when
        // upstreams (re)connect or register tools.
        const earlier = {};
        for (const n of c.st.toolListChanged.slice(0, before)) earlier[n] = (earlier[n] ?? 0) + 1;
        const e = Object.entries(earlier);
        return `${got} list_changed, ${name(tool)} listed and callable${
            e.length ? `; earlier list_changed on this session: ${e.map(([k, v]) => `${v} during ${k || 'connect'}`).join(', ')}` : ''
        }`;
    });
}

// ---- way 1: /mcp/{id} -------------------------------------------------------------------------------
async function way1(id) {
    const spec = UPSTREAMS[id];
    const prefix = `way1:${id}:`;
    const c = makeClient(`w1-${id}`, way1Url(id));
    const same = x => x;
    const ok = await rep.check(`${prefix}initialize`, async () => {
        await c.connect();
        const info = c.client.getServerVersion();
        assert(info?.name !== 'mcpd', `serverInfo is mcpd's own: ${short(info)}`);
        assert(info?.name === spec.serverName, `serverInfo ${short(info)}, want name ${spec.serverName}`);
        const caps = c.client.getServerCapabilities() ?? {};
        try {
            spec.caps(caps);
        } catch (e) {
            throw new Error(`${e.message}; capabilities: ${short(caps)}`);
        }
        const pv = c.transport.protocolVersion;
        assert(c.transport.sessionId, 'no Mcp-Session-Id');
        const instr = c.client.getInstructions();
        return `server ${info.name} ${info.version}, protocol ${pv}, capabilities ${Object.keys(caps).join('/')}${
            instr ? `, instructions ${instr.length} chars` : ''
        }`;
    });
    if (!ok) {
        rep.fail(`${prefix}rest`, 'skipped: initialize failed');
        await c.close();
        return;
    }
    await rep.check(`${prefix}ping`, async () => {
        await c.client.ping();
    });
    await rep.check(`${prefix}tools_list`, async () => {
        const { tools } = await c.client.listTools();
        const names = tools.map(t => t.name);
        const want = [...spec.tools, spec.samplingTool, spec.elicitationTool].filter(Boolean);
        const missing = want.filter(n => !names.includes(n));
        const prefixed = names.filter(n => n.includes('__'));
        const foreign = names.filter(n => MCPD_ONLY_TOOLS.includes(n));
        assert(
            missing.length === 0 && prefixed.length === 0 && foreign.length === 0,
            `missing ${missing.join(', ') || '-'}; prefixed ${prefixed.join(', ') || '-'}; mcpd's own ${foreign.join(', ') || '-'}; got ${names.join(', ')}${
                missing.some(n => n === spec.samplingTool || n === spec.elicitationTool)
                    ? ` (${id} registers ${[spec.samplingTool, spec.elicitationTool].filter(Boolean).join('/')} only when its client declares sampling/elicitation)`
                    : ''
            }`
        );
        return `${names.length} tools`;
    });
    await toolChecks(prefix, c, id, spec, same);
    if (id === 'everything') {
        await rep.check(`${prefix}tiny_image`, async () => {
            const r = await c.call({ name: 'get-tiny-image', arguments: {} });
            const img = (r.content ?? []).find(x => x.type === 'image');
            assert(img && img.mimeType === 'image/png' && img.data?.length > 100, `no PNG image content: ${short(r)}`);
            return `image/png, ${img.data.length} base64 chars`;
        });
        await rep.check(`${prefix}roots`, async () => {
            // get-roots-list asks its client (mcpd) for roots/list, outside any request stream;
            // mcpd relays it to the one client whose call is in flight.
            const before = c.st.rootsRequests;
            const r = await c.call({ name: 'get-roots-list', arguments: {} });
            const text = allText(r);
            const mine = `file:///tmp/mcpd-gateway-interop/${c.st.tag}`;
            assert(text.includes(mine), `result does not list this client's root ${mine} (roots/list requests reaching this client: ${c.st.rootsRequests - before}): ${short(text)}`);
            return `roots/list relayed (${c.st.rootsRequests - before} request), the upstream lists this client's root`;
        });
        if (everythingEnv) {
            await rep.check(`${prefix}get_env`, async () => {
                const [k, v] = everythingEnv.split('=');
                const r = await c.call({ name: 'get-env', arguments: {} });
                const env = JSON.parse(firstText(r));
                assert(env[k] === v, `${k} is ${JSON.stringify(env[k])} in the upstream's environment, want ${JSON.stringify(v)}`);
                return `${k}=${v} reached the child`;
            });
        }
    }
    if (id === 'py') {
        await cancelCheck(prefix, c, same);
        await listChangedCheck(prefix, c, same, 'request');
        await listChangedCheck(prefix, c, same, 'standalone');
        await rep.check(`${prefix}upstream_sees`, async () => {
            // Informational: what the upstream saw of its client (through mcpd: mcpd's upstream client).
            const s = JSON.parse(firstText(await c.call({ name: 'stats', arguments: {} })));
            return `caller ${short(s.caller, 400)}, initialize count ${s.sessions}`;
        });
    }
    await resourceChecks(prefix, c, spec);
    await promptChecks(prefix, c, spec, same);
    await rep.check(`${prefix}terminate`, async () => {
        const sid = c.transport.sessionId;
        await c.transport.terminateSession();
        const r = await rawPost(way1Url(id), { jsonrpc: '2.0', id: 99, method: 'tools/list' }, sid);
        assert(r.status === 404, `a request with the terminated session id got HTTP ${r.status}: ${short(r.text)}`);
        return `DELETE ok, then 404`;
    });
    if (c.st.errors.length) console.error(`${prefix} client errors: ${c.st.errors.slice(0, 5).join(' | ')}`);
    await c.close();
}

// ---- way 2: aggregation on /mcp -------------------------------------------------------------------
async function way2() {
    const prefix = 'way2:';
    const c = makeClient('w2', baseUrl);
    const sep = '__';
    const ok = await rep.check(`${prefix}initialize`, async () => {
        await c.connect();
        const info = c.client.getServerVersion();
        const upstreamNames = Object.values(UPSTREAMS).map(u => u.serverName);
        assert(!upstreamNames.includes(info?.name), `serverInfo is an upstream's: ${short(info)}`);
        const caps = c.client.getServerCapabilities() ?? {};
        assert(caps.tools && caps.prompts && caps.resources, `capabilities lack tools/prompts/resources: ${short(caps)}`);
        return `server ${info?.name} ${info?.version}, capabilities ${Object.keys(caps).join('/')}, tools.listChanged ${caps.tools?.listChanged}`;
    });
    if (!ok) {
        rep.fail(`${prefix}rest`, 'skipped: initialize failed');
        await c.close();
        return;
    }
    await rep.check(`${prefix}tools_list`, async () => {
        const { tools } = await c.client.listTools();
        const names = tools.map(t => t.name);
        const want = ['echo', 'countdown'];
        for (const [id, spec] of Object.entries(UPSTREAMS)) {
            for (const t of [...spec.tools, spec.samplingTool, spec.elicitationTool].filter(Boolean)) want.push(`${id}${sep}${t}`);
        }
        const missing = want.filter(n => !names.includes(n));
        const unprefixed = ['get-sum', 'add', 'slow_count', 'ask_model', 'trigger-long-running-operation'].filter(n => names.includes(n));
        assert(
            missing.length === 0 && unprefixed.length === 0,
            `missing ${missing.join(', ') || '-'}; unprefixed upstream tools ${unprefixed.join(', ') || '-'}; got ${names.join(', ')}`
        );
        if (deadUpstream) {
            const dead = names.filter(n => n.startsWith(`${deadUpstream}${sep}`));
            assert(dead.length === 0, `tools of the unreachable upstream listed: ${dead.join(', ')}`);
        }
        return `${names.length} tools`;
    });
    await rep.check(`${prefix}call_mcpd_echo`, async () => {
        const r = await c.call({ name: 'echo', arguments: { message: 'mcpd itself' } });
        assert(firstText(r) === 'mcpd itself', `got ${short(r)}`);
    });
    for (const [id, spec] of Object.entries(UPSTREAMS)) {
        const name = n => `${id}${sep}${n}`;
        await toolChecks(`${prefix}${id}:`, c, id, spec, name, true);
    }
    const py = n => `py${sep}${n}`;
    await cancelCheck(`${prefix}py:`, c, py);
    await listChangedCheck(`${prefix}py:`, c, py, 'request');
    await listChangedCheck(`${prefix}py:`, c, py, 'standalone');

    // One upstream list change -> how many notifications/tools/list_changed per session? An idle /mcp
    // observer and a second /mcp/py session watch while a third client grows py once (standalone).
    await rep.check(`${prefix}list_changed_fanout`, async () => {
        const obs = makeClient('w2-fan-obs', baseUrl);
        const obsPy = makeClient('w2-fan-obs-py', way1Url('py'));
        const grower = makeClient('w2-fan-grower', way1Url('py'));
        try {
            await Promise.all([obs.connect(), obsPy.connect(), grower.connect()]);
            await obs.client.listTools();
            await sleep(300);
            const o0 = obs.st.toolListChanged.length;
            const p0 = obsPy.st.toolListChanged.length;
            const g0 = grower.st.toolListChanged.length;
            const tool = `fanout_${rnd()}`;
            await grower.call({ name: 'grow', arguments: { name: tool, channel: 'standalone' } });
            await sleep(1500);
            const o = obs.st.toolListChanged.length - o0;
            const p = obsPy.st.toolListChanged.length - p0;
            const g = grower.st.toolListChanged.length - g0;
            const got = `/mcp observer ${o}, other /mcp/py session ${p}, the /mcp/py session that grew ${g}`;
            assert(o >= 1 && o <= 2 && p === 1 && g === 1, `tools/list_changed within 1.5 s of one upstream change: ${got} (want 1 each; /mcp may merge or add one)`);
            return got;
        } finally {
            await Promise.all([obs.close(), obsPy.close(), grower.close()]);
        }
    });
    await rep.check(`${prefix}prompts`, async () => {
        const { prompts } = await c.client.listPrompts();
        const names = prompts.map(p => p.name);
        const want = [];
        for (const [id, spec] of Object.entries(UPSTREAMS)) for (const p of spec.prompts) want.push(`${id}${sep}${p}`);
        const missing = want.filter(n => !names.includes(n));
        assert(missing.length === 0, `missing prompts ${missing.join(', ')}; got ${names.join(', ')}`);
        const details = [];
        for (const [id, spec] of Object.entries(UPSTREAMS)) {
            const r = await c.client.getPrompt({ name: `${id}${sep}${spec.prompt.name}`, arguments: spec.prompt.arguments });
            const text = r.messages?.[0]?.content?.text;
            assert(text === spec.prompt.expect, `getPrompt ${id}${sep}${spec.prompt.name} returned ${short(r)}`);
            details.push(`${id}${sep}${spec.prompt.name} ok`);
        }
        return `${names.length} prompts; ${details.join(', ')}`;
    });
    await rep.check(`${prefix}resources`, async () => {
        const { resources } = await c.client.listResources();
        const uris = resources.map(r => r.uri);
        const want = ['demo://clock', ...Object.values(UPSTREAMS).map(s => s.resourceUri)];
        const missing = want.filter(u => !uris.includes(u));
        assert(missing.length === 0, `missing resources ${missing.join(', ')}; got ${short(uris, 600)}`);
        const details = [];
        for (const spec of Object.values(UPSTREAMS)) {
            const r = await c.client.readResource({ uri: spec.resourceUri });
            const item = r.contents?.[0];
            assert(item && item.uri === spec.resourceUri, `read ${spec.resourceUri} returned ${short(r)}`);
            spec.resourceCheck(item.text ?? '');
            details.push(`read ${spec.resourceUri}`);
        }
        const clock = await c.client.readResource({ uri: 'demo://clock' });
        assert(clock.contents?.[0]?.uri === 'demo://clock', `read demo://clock returned ${short(clock)}`);
        return `${uris.length} resources; ${details.join(', ')}, read demo://clock`;
    });
    await rep.check(`${prefix}resource_template_read`, async () => {
        // everything serves demo://resource/dynamic/text/{resourceId} from a template only (not listed).
        const uri = 'demo://resource/dynamic/text/7';
        const r = await c.client.readResource({ uri });
        const item = r.contents?.[0];
        assert(item?.text?.startsWith('Resource 7: This is a plaintext resource'), `read ${uri} returned ${short(r)}`);
        return `${uri} routed to everything`;
    });
    await rep.check(`${prefix}terminate`, async () => {
        await c.transport.terminateSession();
    });
    if (c.st.errors.length) console.error(`${prefix} client errors: ${c.st.errors.slice(0, 5).join(' | ')}`);
    await c.close();
}

// ---- raw JSON-RPC over Streamable HTTP (way 3) ------------------------------------------------------
function parseSse(text) {
    const out = [];
    for (const block of text.split(/\r?\n\r?\n/)) {
        const data = block
            .split(/\r?\n/)
            .filter(l => l.startsWith('data:'))
            .map(l => l.slice(5).replace(/^ /, ''))
            .join('\n');
        if (data.trim()) out.push(JSON.parse(data));
    }
    return out;
}

async function rawPost(url, body, sessionId, extraHeaders = {}) {
    const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...extraHeaders
    };
    if (sessionId) {
        headers['mcp-session-id'] = sessionId;
        headers['mcp-protocol-version'] = PROTOCOL;
    }
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(15000) });
    const ct = res.headers.get('content-type') || '';
    const text = await res.text();
    let messages = [];
    try {
        if (ct.includes('text/event-stream')) messages = parseSse(text);
        else if (text.trim()) {
            const j = JSON.parse(text);
            messages = Array.isArray(j) ? j : [j];
        }
    } catch (e) {
        throw new Error(`unparseable ${ct} body (HTTP ${res.status}): ${short(text)}`);
    }
    const response = messages.find(m => body.id !== undefined && m.id === body.id && ('result' in m || 'error' in m));
    return { status: res.status, contentType: ct, headers: res.headers, text, messages, response };
}

const describe = r => `HTTP ${r.status} ${r.contentType || '(no content-type)'}: ${short(r.text, 400)}`;

async function way3() {
    const prefix = 'way3:';
    let sid;
    const ok = await rep.check(`${prefix}initialize_raw`, async () => {
        const r = await rawPost(baseUrl, {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'mcpd-gateway-interop-raw', version: '0.0.0' } }
        });
        sid = r.headers.get('mcp-session-id');
        assert(r.status === 200 && r.response?.result && sid, `initialize: ${describe(r)}`);
        const n = await rawPost(baseUrl, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
        assert(n.status === 202, `notifications/initialized: ${describe(n)}`);
        return `session ${sid.slice(0, 8)}…`;
    });
    if (!ok) {
        rep.fail(`${prefix}rest`, 'skipped: initialize failed');
        return;
    }
    const post = body => rawPost(baseUrl, body, sid);

    await rep.check(`${prefix}py_tools_list`, async () => {
        const r = await post({ jsonrpc: '2.0', id: 5, server_id: 'py', method: 'tools/list' });
        const names = r.response?.result?.tools?.map(t => t.name);
        assert(Array.isArray(names), `no tools/list result for id 5: ${describe(r)}`);
        const missing = UPSTREAMS.py.tools.filter(n => !names.includes(n));
        const prefixed = names.filter(n => n.includes('__'));
        const foreign = names.filter(n => n === 'echo' || MCPD_ONLY_TOOLS.includes(n));
        assert(
            missing.length === 0 && prefixed.length === 0 && foreign.length === 0,
            `missing ${missing.join(', ') || '-'}; prefixed ${prefixed.join(', ') || '-'}; not py's ${foreign.join(', ') || '-'}; got ${names.join(', ')}`
        );
        return `${names.length} tools: ${names.join(', ')}`;
    });
    await rep.check(`${prefix}py_tools_call`, async () => {
        const r = await post({ jsonrpc: '2.0', id: 6, server_id: 'py', method: 'tools/call', params: { name: 'add', arguments: { a: 20, b: 22 } } });
        const text = r.response?.result?.content?.[0]?.text;
        assert(text === '20 + 22 = 42', `${describe(r)}`);
        return JSON.stringify(text);
    });
    await rep.check(`${prefix}py_progress`, async () => {
        const r = await post({
            jsonrpc: '2.0',
            id: 'p-8',
            server_id: 'py',
            method: 'tools/call',
            params: { name: 'slow_count', arguments: { steps: 3, interval_ms: 50 }, _meta: { progressToken: 'tok-8' } }
        });
        const text = r.response?.result?.content?.[0]?.text;
        assert(text === 'counted to 3', `no result: ${describe(r)}`);
        const prog = r.messages.filter(m => m.method === 'notifications/progress');
        assert(
            prog.length === 3 && prog.every(m => m.params.progressToken === 'tok-8'),
            `want 3 notifications/progress with token "tok-8" before the result, got ${short(prog, 500)}`
        );
        return `3 progress with the client's token, then the result (${r.contentType})`;
    });
    await rep.check(`${prefix}everything_tools`, async () => {
        const l = await post({ jsonrpc: '2.0', id: 9, server_id: 'everything', method: 'tools/list' });
        const names = l.response?.result?.tools?.map(t => t.name);
        assert(Array.isArray(names) && names.includes('echo') && names.includes('get-sum'), `tools/list: ${describe(l)}`);
        assert(!names.some(n => n.includes('__')), `prefixed names: ${names.join(', ')}`);
        const r = await post({ jsonrpc: '2.0', id: 10, server_id: 'everything', method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1, b: 2 } } });
        const text = r.response?.result?.content?.[0]?.text;
        assert(text === 'The sum of 1 and 2 is 3.', `tools/call get-sum: ${describe(r)}`);
        return `${names.length} tools; get-sum -> ${JSON.stringify(text)}`;
    });
    await rep.check(`${prefix}py_prompt_resource`, async () => {
        const p = await post({ jsonrpc: '2.0', id: 11, server_id: 'py', method: 'prompts/get', params: { name: 'review', arguments: { code: 'y' } } });
        assert(p.response?.result?.messages?.[0]?.content?.text === 'Please review this code:\ny', `prompts/get: ${describe(p)}`);
        const r = await post({ jsonrpc: '2.0', id: 12, server_id: 'py', method: 'resources/read', params: { uri: 'py://greeting' } });
        assert(r.response?.result?.contents?.[0]?.text === 'Hello from the python upstream', `resources/read: ${describe(r)}`);
    });
    await rep.check(`${prefix}unknown_server`, async () => {
        const r = await post({ jsonrpc: '2.0', id: 7, server_id: 'nope', method: 'tools/list' });
        const err = r.response?.error;
        assert(err, `no JSON-RPC error for id 7: ${describe(r)}`);
        assert(err.code === -32001 && err.message === "Server 'nope' not found", `error ${short(err)} (HTTP ${r.status})`);
        return `-32001 ${JSON.stringify(err.message)}, HTTP ${r.status}`;
    });
    if (deadUpstream) {
        await rep.check(`${prefix}unreachable_server`, async () => {
            const r = await post({ jsonrpc: '2.0', id: 13, server_id: deadUpstream, method: 'tools/list' });
            const err = r.response?.error;
            assert(err, `no JSON-RPC error for id 13: ${describe(r)}`);
            const want = `Failed to connect to server '${deadUpstream}':`;
            assert(err.code === -32000 && err.message.startsWith(want), `error ${short(err)} (HTTP ${r.status}), want -32000 "${want} …"`);
            return `-32000 ${JSON.stringify(err.message)}`;
        });
    } else {
        skip(`${prefix}unreachable_server`, 'GATEWAY_DEAD_UPSTREAM not set');
    }
    await rep.check(`${prefix}plain_request_still_aggregated`, async () => {
        const r = await post({ jsonrpc: '2.0', id: 14, method: 'tools/list' });
        const names = r.response?.result?.tools?.map(t => t.name) ?? [];
        assert(names.includes('py__add') && names.includes('echo'), `tools/list without server_id: ${describe(r)}`);
    });
    await rep.check(`${prefix}delete`, async () => {
        const res = await fetch(baseUrl, {
            method: 'DELETE',
            headers: { 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL },
            signal: AbortSignal.timeout(5000)
        });
        assert(res.status === 200 || res.status === 204, `DELETE: HTTP ${res.status}`);
    });
}

// ---- isolation: two clients, one upstream ----------------------------------------------------------
// samplingMode "strict": both concurrent sampling requests must reach their own client and the answers
// their own call. That is possible when the upstream's request is tied to the call: a Streamable HTTP
// upstream sends it on that call's POST stream; with share = "session" each client has its own
// upstream. "noleak": a shared stdio upstream sends sampling/createMessage with nothing tying it to one
// of two calls in flight, so mcpd may refuse it; then only "no client sees the other's request or
// answer" is required, and the detail says what happened.
async function isolation(id, url, label, name = x => x, samplingMode = 'strict') {
    const spec = UPSTREAMS[id];
    const prefix = `isolation:${label}:`;
    const a = makeClient(`${label}-A`, url);
    const b = makeClient(`${label}-B`, url);
    const ok = await rep.check(`${prefix}connect`, async () => {
        await Promise.all([a.connect(), b.connect()]);
        assert(a.transport.sessionId !== b.transport.sessionId, 'both clients got the same session id');
        const ia = a.client.getServerVersion();
        return `server ${ia?.name}`;
    });
    if (!ok) return;
    const settle = async promises => {
        const rs = await Promise.allSettled(promises);
        return rs.map(r => (r.status === 'fulfilled' ? { ok: true, r: r.value } : { ok: false, e: errText(r.reason) }));
    };
    await rep.check(`${prefix}progress`, async () => {
        const plan = [
            [a, 4],
            [b, 3]
        ];
        const logs0 = plan.map(([c]) => c.st.logs.length);
        const outcomes = await settle(
            plan.map(async ([c, steps]) => {
                const events = [];
                const r = await c.call(named(spec.progress(steps), name), { onprogress: p => events.push(p) });
                return { c, steps, events, r, reqId: c.lastRequestId('tools/call') };
            })
        );
        const failed = outcomes.map((o, i) => (o.ok ? null : `${plan[i][0].st.tag}: ${o.e}`)).filter(Boolean);
        assert(failed.length === 0, `call failed: ${failed.join('; ')}`);
        const details = [];
        for (const [i, { r: o }] of outcomes.entries()) {
            const { c, steps, events, r, reqId } = o;
            const text = allText(r);
            const wire = c.st.received.map(x => x.msg).filter(m => m.method === 'notifications/progress');
            const foreign = wire.filter(m => m.params?.progressToken !== reqId || m.params?.total !== steps);
            assert(text.includes(spec.progressText(steps)), `${c.st.tag}: result ${JSON.stringify(text)} is not its own (${steps} steps)`);
            assert(foreign.length === 0, `${c.st.tag} received progress that is not its own (token ${reqId}, total ${steps}): ${short(foreign, 500)}`);
            checkProgress(events, steps, c.st.tag);
            assert(events.length === steps, `${c.st.tag}: onprogress got ${events.length} of ${steps}: ${short(events)}`);
            const unknown = c.st.errors.filter(e => /unknown token/i.test(e));
            assert(unknown.length === 0, `${c.st.tag}: SDK errors ${unknown.join(' | ')}`);
            c.st.isoLogs = c.st.logs.slice(logs0[i]);
            details.push(`${c.st.tag}: ${events.length}/${steps} own progress, own result (request id ${JSON.stringify(reqId)})`);
        }
        return details.join('; ');
    });
    if (spec.hasLogging) {
        // slow_count logs "slow_count step i/N" on the call's own POST stream: each client must get
        // its own N lines and none of the other's.
        await rep.check(`${prefix}logging`, async () => {
            const details = [];
            const problems = [];
            for (const [c, steps] of [
                [a, 4],
                [b, 3]
            ]) {
                const texts = (c.st.isoLogs ?? []).map(l => (typeof l.data === 'string' ? l.data : l.data?.data)).filter(t => typeof t === 'string');
                const own = texts.filter(t => t.endsWith(`/${steps}`));
                const foreign = texts.filter(t => !t.endsWith(`/${steps}`));
                if (foreign.length) problems.push(`${c.st.tag} got the other client's log messages: ${short(foreign)}`);
                if (own.length !== steps) problems.push(`${c.st.tag} got ${own.length} of its ${steps} log messages`);
                details.push(`${c.st.tag}: ${own.length}/${steps}`);
            }
            assert(problems.length === 0, problems.join('; '));
            return details.join(', ');
        });
    }
    await rep.check(`${prefix}sampling`, async () => {
        a.st.canned = `answer-${label}-A-${rnd()}`;
        b.st.canned = `answer-${label}-B-${rnd()}`;
        const a0 = a.st.samplings.length;
        const b0 = b.st.samplings.length;
        const [oa, ob] = await settle([a.call(named(spec.sampling('question from A'), name)), b.call(named(spec.sampling('question from B'), name))]);
        const sa = a.st.samplings.slice(a0).map(p => JSON.stringify(p.messages));
        const sb = b.st.samplings.slice(b0).map(p => JSON.stringify(p.messages));
        const ta = oa.ok ? allText(oa.r) : `(call rejected: ${oa.e})`;
        const tb = ob.ok ? allText(ob.r) : `(call rejected: ${ob.e})`;
        const leaks = [];
        if (sa.some(x => !x.includes('question from A'))) leaks.push(`A's handler got ${short(sa)}`);
        if (sb.some(x => !x.includes('question from B'))) leaks.push(`B's handler got ${short(sb)}`);
        if (ta.includes(b.st.canned)) leaks.push(`A's result carries B's answer: ${short(ta)}`);
        if (tb.includes(a.st.canned)) leaks.push(`B's result carries A's answer: ${short(tb)}`);
        assert(leaks.length === 0, `leak: ${leaks.join('; ')}`);
        const servedA = sa.length === 1 && ta.includes(a.st.canned);
        const servedB = sb.length === 1 && tb.includes(b.st.canned);
        const what = `A ${servedA ? 'served' : `not served (handler ran ${sa.length}x; result ${short(ta, 200)})`}, B ${
            servedB ? 'served' : `not served (handler ran ${sb.length}x; result ${short(tb, 200)})`
        }`;
        if (samplingMode === 'strict') assert(servedA && servedB, what);
        return samplingMode === 'strict' ? 'each client answered only its own sampling request and got its own answer back' : `no leak; ${what}`;
    });
    // B samples alone while A's long call (no sampling in it) is running on the same upstream.
    await rep.check(`${prefix}sampling_while_other_call_runs`, async () => {
        b.st.canned = `answer-${label}-B-${rnd()}`;
        const b0 = b.st.samplings.length;
        const long = a.call(named(spec.progress(8), name), { onprogress: () => {} });
        await sleep(400);
        const [ob] = await settle([b.call(named(spec.sampling('question from B alone'), name))]);
        const [oa] = await settle([long]);
        const sb = b.st.samplings.slice(b0);
        const tb = ob.ok ? allText(ob.r) : `(call rejected: ${ob.e})`;
        assert(oa.ok && allText(oa.r).includes(spec.progressText(8)), `A's long call: ${oa.ok ? short(oa.r) : oa.e}`);
        assert(!tb.includes('answer-') || tb.includes(b.st.canned), `B's result carries another answer: ${short(tb)}`);
        const served = sb.length === 1 && tb.includes(b.st.canned);
        const what = served ? 'B served' : `B not served while A's call ran (handler ran ${sb.length}x; result ${short(tb, 250)})`;
        if (samplingMode === 'strict') assert(served, what);
        return samplingMode === 'strict' ? 'B sampled alone while A had a call in flight' : `no leak; ${what}`;
    });
    await a.close();
    await b.close();
}

// ---- share = "session": a child per session, gone with the session ---------------------------------------
// mcpd's child processes, from /proc (Linux): GATEWAY_MCPD_PID is set by gateway.sh.
function mcpdChildren() {
    const out = new Set();
    for (const t of readdirSync(`/proc/${mcpdPid}/task`)) {
        try {
            for (const c of readFileSync(`/proc/${mcpdPid}/task/${t}/children`, 'utf8').trim().split(/\s+/)) if (c) out.add(c);
        } catch {
            // thread gone
        }
    }
    return out;
}

async function sessionChild() {
    const prefix = `session_child:${sessionUpstream}:`;
    await rep.check(`${prefix}spawned_and_reaped`, async () => {
        const before = mcpdChildren();
        const c = makeClient('sc', way1Url(sessionUpstream));
        await c.connect();
        const r = await c.call({ name: 'echo', arguments: { message: 'mine' } });
        assert(firstText(r) === 'Echo: mine', `echo returned ${short(r)}`);
        const during = mcpdChildren();
        const added = [...during].filter(p => !before.has(p));
        assert(added.length === 1, `want one new child of mcpd for this session, got ${added.length} (before ${[...before].join(' ')}, now ${[...during].join(' ')})`);
        await c.transport.terminateSession();
        await c.close();
        let gone = false;
        const deadline = Date.now() + 5000;
        while (!gone && Date.now() < deadline) {
            gone = !mcpdChildren().has(added[0]);
            if (!gone) await sleep(100);
        }
        assert(gone, `child ${added[0]} still runs 5 s after the session's DELETE`);
        return `child ${added[0]} started for the session, gone after its DELETE`;
    });
}

// ---- session end mid-call (py, way 1) ---------------------------------------------------------------------
// A client that goes away (DELETE) while its call is running upstream: mcpd should cancel the upstream
// call, and a sampling request it relayed to that client must not stay pending (on a shared upstream a
// pending call makes mcpd refuse every later sampling/createMessage). Last section: a failure here can
// leave state behind in mcpd that would fail unrelated checks.
async function sessionEnd() {
    const prefix = 'session_end:py:';
    const obs = makeClient('se-observer', way1Url('py'));
    const ok = await rep.check(`${prefix}connect`, () => obs.connect());
    if (!ok) return;
    const stats = async () => JSON.parse(firstText(await obs.call({ name: 'stats', arguments: {} })));
    const waitFor = async (pred, ms) => {
        let s;
        const deadline = Date.now() + ms;
        for (;;) {
            s = await stats();
            if (pred(s) || Date.now() > deadline) return s;
            await sleep(150);
        }
    };
    await rep.check(`${prefix}running_call_cancelled`, async () => {
        const s0 = await stats();
        const x = makeClient('se-x1', way1Url('py'));
        await x.connect();
        const p = x.call({ name: 'slow_count', arguments: { steps: 100, interval_ms: 100 } }, { onprogress: () => {} });
        p.catch(() => {});
        await sleep(500);
        const mid = await stats();
        await x.transport.terminateSession();
        await x.close();
        const s = await waitFor(s => s.in_flight === s0.in_flight, 5000);
        assert(
            mid.in_flight === s0.in_flight + 1 && s.in_flight === s0.in_flight && s.cancelled === s0.cancelled + 1,
            `after the client's DELETE the upstream call went on: stats before ${short(s0)}, running ${short(mid)}, 5 s after the DELETE ${short(s)}`
        );
        return `upstream call cancelled (cancelled ${s0.cancelled} -> ${s.cancelled})`;
    });
    await rep.check(`${prefix}pending_sampling_released`, async () => {
        const s0 = await stats();
        const x = makeClient('se-x2', way1Url('py'));
        let asked = 0;
        x.client.setRequestHandler(CreateMessageRequestSchema, async () => {
            asked++;
            return new Promise(() => {}); // never answers
        });
        await x.connect();
        const p = x.call({ name: 'ask_model', arguments: { prompt: 'never answered' } });
        p.catch(() => {});
        const until = Date.now() + 3000;
        while (asked === 0 && Date.now() < until) await sleep(50);
        assert(asked === 1, `the sampling request did not reach the client within 3 s (asked ${asked})`);
        const mid = await stats();
        await x.transport.terminateSession();
        await x.close();
        const s = await waitFor(s => s.ask_model_in_flight === s0.ask_model_in_flight, 5000);
        assert(
            mid.ask_model_in_flight === s0.ask_model_in_flight + 1 && s.ask_model_in_flight === s0.ask_model_in_flight,
            `ask_model still waits for its sampling answer 5 s after the client's DELETE: stats before ${short(s0)}, while waiting ${short(mid)}, after ${short(s)}`
        );
        return `upstream ask_model ended (${s.ask_model_cancelled > s0.ask_model_cancelled ? 'cancelled' : 'sampling answered with an error'})`;
    });
    await rep.check(`${prefix}sampling_afterwards`, async () => {
        obs.st.canned = `after-${rnd()}`;
        const r = await obs.call({ name: 'ask_model', arguments: { prompt: 'one call alone' } });
        const text = allText(r);
        assert(!r.isError && text.includes(obs.st.canned), `a lone ask_model on /mcp/py now gets ${short(r)}`);
        return 'a lone sampling call still works';
    });
    await obs.close();
}

// ---- run ---------------------------------------------------------------------------------------------
const ids = devMode ? Object.keys(direct).filter(id => UPSTREAMS[id]) : Object.keys(UPSTREAMS);
if (sections.has('way1')) for (const id of ids) await way1(id);
if (sections.has('way2')) {
    if (devMode) skip('way2', 'development mode (--direct)');
    else await way2();
}
if (sections.has('way3')) {
    if (devMode) skip('way3', 'development mode (--direct)');
    else await way3();
}
if (sections.has('isolation')) {
    // everything over stdio is shared (see gateway.sh); py is a Streamable HTTP upstream.
    for (const id of ids) await isolation(id, way1Url(id), id, x => x, id === 'everything' && !devMode ? 'noleak' : 'strict');
    if (sessionUpstream) await isolation('everything', way1Url(sessionUpstream), sessionUpstream, x => x, 'strict');
    else skip('isolation:<share=session upstream>', 'GATEWAY_SESSION_UPSTREAM not set');
    if (!devMode) await isolation('everything', baseUrl, 'way2', n => `everything__${n}`, 'noleak');
}
if (sections.has('session_end')) {
    if (sessionUpstream && mcpdPid && !devMode) await sessionChild();
    else skip('session_child', 'needs GATEWAY_SESSION_UPSTREAM and GATEWAY_MCPD_PID (gateway.sh sets both)');
    if (ids.includes('py')) await sessionEnd();
}
done();
