// Interop check: the official TypeScript MCP SDK client (@modelcontextprotocol/sdk,
// pinned in package.json / package-lock.json) against mcpd's "demo" tool set.
//
// Usage: node client.mjs http://127.0.0.1:PORT/mcp
// Prints one line per check, "PASS ts:<name>" or "FAIL ts:<name>: <reason>",
// and exits 0 only when every check passed. run.sh counts the lines.
//
// Plain ESM JavaScript (no compile step); needs Node 20+.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ResourceUpdatedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
if (!url) {
    console.error('usage: node client.mjs <mcp endpoint url>');
    process.exit(2);
}

const P = 'ts:';
const CHECK_TIMEOUT_MS = 15000;
const EXPECTED_TOOLS = ['echo', 'countdown', 'ask_user', 'summarize', 'big_payload', 'server_stats'];
const HANDSHAKE_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

let failed = 0;
let passed = 0;
function pass(name, detail) {
    passed++;
    console.log(`PASS ${P}${name}${detail ? ` (${detail})` : ''}`);
}
function fail(name, reason) {
    failed++;
    const oneLine = String(reason).replace(/\s+/g, ' ').slice(0, 500);
    console.log(`FAIL ${P}${name}: ${oneLine}`);
}
function errText(e) {
    if (e instanceof Error) return `${e.name}: ${e.message}`;
    return String(e);
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

function withTimeout(promise, ms, what) {
    let t;
    const timer = new Promise((_, reject) => {
        t = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what ?? ''}`.trim())), ms);
    });
    return Promise.race([promise, timer]).finally(() => clearTimeout(t));
}

// Runs one check; fn returns an optional detail string on success, throws on failure.
async function check(name, fn) {
    try {
        const detail = await withTimeout(Promise.resolve().then(fn), CHECK_TIMEOUT_MS);
        pass(name, detail);
    } catch (e) {
        fail(name, errText(e));
    }
}
function assert(cond, msg) {
    if (!cond) throw new Error(msg);
}
function firstText(result) {
    assert(result && Array.isArray(result.content), `result has no content array: ${JSON.stringify(result)?.slice(0, 200)}`);
    const t = result.content.find(c => c.type === 'text');
    assert(t, `result has no text content: ${JSON.stringify(result).slice(0, 200)}`);
    return t.text;
}

// Background errors (SSE reconnects etc.) are reported at the end, not fatal.
const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

// ---- client setup -----------------------------------------------------------
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client(
    { name: 'mcpd-interop-ts', version: '0.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } }
);
client.onerror = e => backgroundErrors.push(errText(e));

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

// Wire taps: record what goes out and what comes in (installed after connect,
// once Protocol has installed its own onmessage).
const sent = [];
const received = [];
function installTaps() {
    const origSend = transport.send.bind(transport);
    transport.send = (msg, opts) => {
        sent.push(msg);
        return origSend(msg, opts);
    };
    const origOnMessage = transport.onmessage;
    transport.onmessage = (msg, extra) => {
        received.push({ at: Date.now(), msg });
        return origOnMessage?.(msg, extra);
    };
}

async function serverStats() {
    const r = await client.callTool({ name: 'server_stats', arguments: {} });
    const text = firstText(r);
    const stats = JSON.parse(text);
    assert(Number.isInteger(stats.in_flight_requests), `server_stats has no integer in_flight_requests: ${text}`);
    assert(Number.isInteger(stats.sessions), `server_stats has no integer sessions: ${text}`);
    return stats;
}

// ---- checks -----------------------------------------------------------------
let connected = false;
await check('initialize', async () => {
    await client.connect(transport);
    connected = true;
    installTaps();
    const info = client.getServerVersion();
    assert(info && typeof info.name === 'string' && info.name.length > 0, `no server name: ${JSON.stringify(info)}`);
    const pv = transport.protocolVersion;
    assert(HANDSHAKE_VERSIONS.includes(pv), `protocol version ${pv} not one of ${HANDSHAKE_VERSIONS.join('/')}`);
    assert(transport.sessionId, 'server gave no Mcp-Session-Id');
    const caps = client.getServerCapabilities() ?? {};
    const missing = ['tools', 'resources', 'prompts', 'logging', 'completions'].filter(c => !caps[c]);
    assert(missing.length === 0, `server capabilities lack ${missing.join(', ')}: ${JSON.stringify(caps)}`);
    assert(caps.resources.subscribe === true, `resources.subscribe is not true: ${JSON.stringify(caps.resources)}`);
    return `server ${info.name} ${info.version ?? ''}, protocol ${pv}`;
});

const NOT_CONNECTED = 'skipped: initialize failed';
async function connectedCheck(name, fn) {
    if (!connected) {
        fail(name, NOT_CONNECTED);
        return;
    }
    await check(name, fn);
}

await connectedCheck('tools_list', async () => {
    const { tools } = await client.listTools();
    const names = tools.map(t => t.name);
    const missing = EXPECTED_TOOLS.filter(n => !names.includes(n));
    assert(missing.length === 0, `missing tools ${missing.join(', ')}; got ${names.join(', ')}`);
    return `${names.length} tools`;
});

await connectedCheck('echo', async () => {
    const message = 'hello from ts — ünïcödé ✓';
    const r = await client.callTool({ name: 'echo', arguments: { message } });
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    const text = firstText(r);
    assert(text === message, `echo returned ${JSON.stringify(text)}`);
});

await connectedCheck('countdown_progress', async () => {
    const progress = [];
    const r = await client.callTool({ name: 'countdown', arguments: { steps: 3, interval_ms: 50 } }, undefined, {
        onprogress: p => progress.push(p)
    });
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    const text = firstText(r);
    assert(text === 'done', `result text ${JSON.stringify(text)}, want "done"`);
    assert(progress.length === 3, `got ${progress.length} progress notifications, want 3: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; i++) {
        assert(progress[i].progress > progress[i - 1].progress, `progress not increasing: ${JSON.stringify(progress)}`);
    }
    assert(progress.every(p => p.total === 3), `progress total is not 3: ${JSON.stringify(progress)}`);
    return `progress ${progress.map(p => p.progress).join(',')}`;
});

await connectedCheck('cancel', async () => {
    const ac = new AbortController();
    const sentBefore = sent.length;
    const started = Date.now();
    const call = client.callTool({ name: 'countdown', arguments: { steps: 50, interval_ms: 100 } }, undefined, {
        signal: ac.signal
    });
    setTimeout(() => ac.abort(new Error('interop: cancelled by client')), 300);
    let settled;
    try {
        const r = await call;
        settled = `resolved with ${JSON.stringify(r).slice(0, 200)}`;
    } catch (e) {
        settled = null;
    }
    assert(settled === null, `call was not cancelled locally: ${settled}`);
    const elapsed = Date.now() - started;
    assert(elapsed < 2000, `call took ${elapsed} ms to reject after abort`);
    const req = sent.slice(sentBefore).find(m => m.method === 'tools/call' && m.params?.name === 'countdown');
    assert(req, 'did not see the countdown request go out');
    const cancelNote = sent
        .slice(sentBefore)
        .find(m => m.method === 'notifications/cancelled' && m.params?.requestId === req.id);
    assert(cancelNote, `no notifications/cancelled was sent for request ${req.id}`);
    // The server's request actor must go away: only the server_stats call itself is in flight.
    let stats;
    const deadline = Date.now() + 3000;
    for (;;) {
        stats = await serverStats();
        if (stats.in_flight_requests === 1 || Date.now() > deadline) break;
        await sleep(100);
    }
    assert(stats.in_flight_requests === 1, `in_flight_requests still ${stats.in_flight_requests} 3 s after cancel`);
    const late = received.find(r => 'id' in r.msg && r.msg.id === req.id && ('result' in r.msg || 'error' in r.msg));
    if (late) throw new Error(`a response for the cancelled request ${req.id} still arrived: ${JSON.stringify(late.msg).slice(0, 200)}`);
    return `rejected after ${elapsed} ms, in_flight_requests back to 1`;
});

await connectedCheck('elicitation', async () => {
    const question = 'What is your favourite colour?';
    const before = elicitations.length;
    const r = await client.callTool({ name: 'ask_user', arguments: { question } });
    assert(elicitations.length === before + 1, `elicitation handler called ${elicitations.length - before} times, want 1`);
    const params = elicitations[before];
    assert(params.message === question, `elicitation message ${JSON.stringify(params.message)}, want the question`);
    const schema = params.requestedSchema;
    assert(schema?.properties?.answer?.type === 'string', `requestedSchema lacks answer:string: ${JSON.stringify(schema)}`);
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    const text = firstText(r);
    assert(text === 'blue', `ask_user returned ${JSON.stringify(text)}, want "blue"`);
});

await connectedCheck('sampling', async () => {
    const before = samplings.length;
    const r = await client.callTool({ name: 'summarize', arguments: { text: 'a long text that needs a summary' } });
    assert(samplings.length === before + 1, `sampling handler called ${samplings.length - before} times, want 1`);
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    const text = firstText(r);
    assert(text === 'sampled!', `summarize returned ${JSON.stringify(text)}, want "sampled!"`);
});

await connectedCheck('big_payload', async () => {
    const bytes = 200000;
    const r = await client.callTool({ name: 'big_payload', arguments: { bytes } });
    assert(!r.isError, `isError result: ${JSON.stringify(r).slice(0, 200)}`);
    const text = firstText(r);
    const got = Buffer.byteLength(text, 'utf8');
    assert(got === bytes, `got ${got} bytes, want ${bytes}`);
});

await connectedCheck('resource_subscribe', async () => {
    const start = Date.now();
    await client.subscribeResource({ uri: 'demo://clock' });
    const deadline = start + 5000;
    while (Date.now() < deadline) {
        const hit = resourceUpdates.find(u => u.at >= start && u.uri === 'demo://clock');
        if (hit) return `first update after ${hit.at - start} ms`;
        await sleep(50);
    }
    throw new Error(`no notifications/resources/updated for demo://clock within 5 s (got ${resourceUpdates.length} updates)`);
});

await connectedCheck('prompts_get', async () => {
    const r = await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } });
    assert(Array.isArray(r.messages) && r.messages.length > 0, `no messages: ${JSON.stringify(r)}`);
    return `${r.messages.length} message(s)`;
});

await connectedCheck('completion', async () => {
    const r = await client.complete({
        ref: { type: 'ref/prompt', name: 'greeting' },
        argument: { name: 'name', value: 'A' }
    });
    assert(Array.isArray(r?.completion?.values), `no completion.values array: ${JSON.stringify(r)}`);
    return `values ${JSON.stringify(r.completion.values).slice(0, 100)}`;
});

await connectedCheck('delete_session', async () => {
    const sid = transport.sessionId;
    const pv = transport.protocolVersion;
    assert(sid, 'no session id to delete');
    await transport.terminateSession(); // throws on a non-2xx, non-405 answer
    // The SDK forgets the id after DELETE, so a request through the client goes out without one...
    let clientErr = null;
    try {
        await withTimeout(client.listTools(), 5000);
    } catch (e) {
        clientErr = e;
    }
    assert(clientErr, 'a request after DELETE (through the client, no session id) still succeeded');
    // ...and a request that still carries the deleted id must get 404.
    const res = await fetch(url, {
        method: 'POST',
        headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sid,
            ...(pv ? { 'mcp-protocol-version': pv } : {})
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9001, method: 'tools/list', params: {} })
    });
    await res.body?.cancel();
    assert(res.status === 404, `request with the deleted session id got HTTP ${res.status}, want 404`);
    return 'DELETE ok, then 404';
});

try {
    await withTimeout(client.close(), 3000);
} catch {
    // ignore
}
if (backgroundErrors.length > 0) {
    // Informational only: SSE reconnect chatter after DELETE is expected.
    console.error(`${P} background errors (informational):`);
    for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
}
process.exit(failed === 0 ? 0 : 1);
