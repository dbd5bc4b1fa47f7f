// Interop check: the official TypeScript MCP SDK v1 client (@modelcontextprotocol/sdk 1.32.2) over
// the 2024-11-05 HTTP+SSE transport (SSEClientTransport) against mcpd's "demo" tool set.
//
// Usage: node client-sse.mjs http://127.0.0.1:PORT/mcp
// The HTTP+SSE entry point is derived from the Streamable HTTP URL: the trailing /mcp becomes /sse
// (mcpd's defaults: GET /sse, POST /messages?sessionId=…, on the same server). A second client,
// over Streamable HTTP at /mcp, watches server_stats to show that closing the SSE stream ends the
// session. Prints "PASS sse:<name>" / "FAIL sse:<name>: <reason>", exits 0 only if all passed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ResourceUpdatedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { assert, errText, makeReporter, parseStats, sleep, tapTransportEarly, withTimeout } from './common.mjs';
import { runSessionFlows } from './session-flows.mjs';

const mcpUrl = process.argv[2];
if (!mcpUrl) {
    console.error('usage: node client-sse.mjs <mcp endpoint url ending in /mcp>');
    process.exit(2);
}

const rep = makeReporter('sse:');
const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

function finish() {
    if (backgroundErrors.length > 0) {
        console.error(`${rep.prefix} background errors (informational):`);
        for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
    }
    process.exit(rep.failed === 0 ? 0 : 1);
}

const sseUrl = new URL(mcpUrl);
if (!/\/mcp$/.test(sseUrl.pathname)) {
    rep.fail('setup', `cannot derive the /sse URL: ${mcpUrl} does not end in /mcp`);
    finish();
}
sseUrl.pathname = sseUrl.pathname.replace(/\/mcp$/, '/sse');

// Reads the first SSE event of a GET /sse by hand (what the SDK's EventSource hides), then hangs up.
async function firstEndpointEvent() {
    const ac = new AbortController();
    const res = await fetch(sseUrl, { headers: { accept: 'text/event-stream' }, signal: ac.signal });
    try {
        assert(res.status === 200, `GET ${sseUrl.pathname} answered HTTP ${res.status}`);
        const ct = res.headers.get('content-type') ?? '';
        assert(ct.startsWith('text/event-stream'), `GET ${sseUrl.pathname} content-type ${ct}`);
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        while (!/\r?\n\r?\n/.test(buf)) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
        }
        const block = buf.split(/\r?\n\r?\n/)[0];
        const fields = {};
        for (const line of block.split(/\r?\n/)) {
            const m = /^([^:]*):\s?(.*)$/.exec(line);
            if (m && m[1]) fields[m[1]] = fields[m[1]] === undefined ? m[2] : `${fields[m[1]]}\n${m[2]}`;
        }
        return { fields, block };
    } finally {
        ac.abort();
    }
}

// ---- the observer: a Streamable HTTP client on /mcp that reads server_stats --------------------
let observer = null;
let observerTransport = null;
const observerStats = async () =>
    parseStats(await observer.callTool({ name: 'server_stats', arguments: {} }, undefined));
let baseline = null;

await rep.check('endpoint_event', async () => {
    const { fields, block } = await firstEndpointEvent();
    assert(fields.event === 'endpoint', `first event is not "endpoint": ${JSON.stringify(block)}`);
    const target = new URL(fields.data, sseUrl);
    assert(target.origin === sseUrl.origin, `endpoint ${fields.data} is on another origin`);
    const sid = target.searchParams.get('sessionId');
    assert(sid, `endpoint ${fields.data} carries no sessionId query parameter`);
    return `endpoint ${target.pathname}?sessionId=<${sid.length} chars>`;
});

await rep.check('observer', async () => {
    const t = new StreamableHTTPClientTransport(new URL(mcpUrl));
    const c = new Client({ name: 'mcpd-interop-sse-observer', version: '0.0.0' }, { capabilities: {} });
    await c.connect(t);
    observer = c;
    observerTransport = t;
    baseline = await observerStats();
    return `Streamable HTTP client on /mcp, sessions ${baseline.sessions} before the SSE client connects`;
});

// ---- the SSE client -------------------------------------------------------------------------------
// Every HTTP exchange an SSE transport makes (EventSource GET and message POSTs). The SDK does
// not await its POSTs before the answer on the stream settles the call, so `done` is kept.
function makeTapFetch(log) {
    return (input, init) => {
        const method = init?.method ?? 'GET';
        const entry = { method, url: String(input), status: null, contentType: null, body: init?.body, error: null };
        entry.done = fetch(input, init).then(
            res => {
                entry.status = res.status;
                entry.contentType = res.headers.get('content-type');
                return res;
            },
            e => {
                entry.error = errText(e);
                throw e;
            }
        );
        log.push(entry);
        return entry.done;
    };
}
const http = [];
const transport = new SSEClientTransport(sseUrl, { fetch: makeTapFetch(http) });
const client = new Client(
    { name: 'mcpd-interop-ts-sse', version: '0.0.0' },
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

const sent = [];
const received = [];
tapTransportEarly(transport, sent, received);
const negotiated = () => received.find(r => r.msg.id === sent.find(m => m.method === 'initialize')?.id)?.msg.result?.protocolVersion;

let openStats = null;
const connected = await runSessionFlows({
    rep,
    url: mcpUrl,
    client,
    transport,
    noSessionId: true,
    skipDelete: true,
    progressFromWire: true,
    protocolVersion: negotiated,
    connect: async () => {
        await client.connect(transport);
    },
    afterConnect: async () => {
        const get = http.find(h => h.method === 'GET');
        assert(get && get.status === 200, `GET ${sseUrl.pathname} answered ${get?.status}`);
        assert(transport._endpoint, 'the SDK has no endpoint URL');
        const ep = transport._endpoint;
        assert(ep.searchParams.get('sessionId'), `endpoint ${ep} has no sessionId`);
        if (observer) {
            openStats = await observerStats();
            assert(
                openStats.sessions === baseline.sessions + 1,
                `server_stats.sessions ${openStats.sessions} with the SSE session open, want ${baseline.sessions + 1}`
            );
        }
        return `POST to ${ep.pathname}, sessions ${baseline?.sessions}→${openStats?.sessions}`;
    },
    callTool: (params, options) => client.callTool(params, undefined, options),
    sent,
    received,
    elicitations,
    samplings,
    resourceUpdates
});

// Every client message was POSTed to the endpoint and answered 202 Accepted; every answer came on the stream.
await rep.check('posts_202', async () => {
    assert(connected, 'skipped: initialize failed');
    const posts = http.filter(h => h.method === 'POST');
    await withTimeout(Promise.allSettled(posts.map(p => p.done)), 5000, 'waiting for POST answers');
    assert(posts.length >= sent.length, `${posts.length} POSTs for ${sent.length} messages sent`);
    const bad = posts
        .filter(p => p.status !== 202)
        .map(p => `${JSON.parse(p.body).method ?? `response#${JSON.parse(p.body).id}`} → ${p.status ?? p.error}`);
    assert(bad.length === 0, `POSTs not answered 202: ${bad.slice(0, 5).join(', ')}`);
    const endpoint = transport._endpoint?.href;
    const elsewhere = posts.filter(p => p.url !== endpoint);
    assert(elsewhere.length === 0, `POSTs to ${elsewhere[0]?.url}, not the endpoint ${endpoint}`);
    const gets = http.filter(h => h.method === 'GET');
    assert(gets.length === 1, `${gets.length} GETs (the EventSource reconnected?)`);
    const requests = sent.filter(m => 'id' in m && 'method' in m);
    const answered = new Set(received.filter(r => 'id' in r.msg && ('result' in r.msg || 'error' in r.msg)).map(r => r.msg.id));
    // The cancelled countdown legitimately has no answer.
    const cancelled = new Set(sent.filter(m => m.method === 'notifications/cancelled').map(m => m.params?.requestId));
    const missing = requests.filter(m => !answered.has(m.id) && !cancelled.has(m.id)).map(m => `${m.method}#${m.id}`);
    assert(missing.length === 0, `no answer on the SSE stream for ${missing.join(', ')}`);
    const serverRequests = received.filter(r => 'method' in r.msg && 'id' in r.msg).map(r => r.msg.method);
    return `${posts.length} POSTs all 202, ${answered.size} answers and ${serverRequests.length} server requests (${[...new Set(serverRequests)].join(', ')}) on the stream`;
});

// Polls the observer until server_stats.sessions == want or ms pass; returns [stats, elapsed ms].
async function waitSessions(want, since, ms = 5000) {
    let stats;
    for (;;) {
        stats = await observerStats();
        if (stats.sessions === want || Date.now() - since > ms) return [stats, Date.now() - since];
        await sleep(100);
    }
}

async function postToClosed(endpoint) {
    const res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9001, method: 'ping' })
    });
    const text = await res.text();
    assert(res.status === 404, `POST to the closed endpoint answered HTTP ${res.status} ${text.slice(0, 200)}, want 404`);
}

// Closing the SSE stream ends the session: the observer sees sessions drop back, the endpoint is
// gone. (This client is still subscribed to demo://clock, so the server writes to the stream
// every second.)
await rep.check('close_ends_session', async () => {
    assert(connected, 'skipped: initialize failed');
    assert(observer, 'skipped: the /mcp observer did not connect');
    const endpoint = transport._endpoint;
    const before = await observerStats();
    const closedAt = Date.now();
    await withTimeout(client.close(), 3000, 'closing the SSE client');
    const [stats, took] = await waitSessions(before.sessions - 1, closedAt);
    assert(
        stats.sessions === before.sessions - 1,
        `server_stats.sessions still ${stats.sessions} ${took} ms after closing the SSE stream (was ${before.sessions} with it open)`
    );
    assert(stats.sessions === baseline.sessions, `sessions ${stats.sessions} after close, ${baseline.sessions} before the SSE client`);
    await postToClosed(endpoint);
    return `sessions ${before.sessions}→${stats.sessions} within ${took} ms; POST to the old endpoint → 404`;
}, 20000);

// The same for an idle connection: initialize, nothing subscribed, close. Nothing is written to
// the stream after the client hangs up except keep-alive comments.
await rep.check('close_idle_ends_session', async () => {
    assert(observer, 'skipped: the /mcp observer did not connect');
    const t = new SSEClientTransport(sseUrl, { fetch: makeTapFetch([]) });
    const c = new Client({ name: 'mcpd-interop-ts-sse-idle', version: '0.0.0' }, { capabilities: {} });
    c.onerror = e => backgroundErrors.push(`idle client: ${errText(e)}`);
    const before = await observerStats();
    await c.connect(t);
    const open = await observerStats();
    assert(open.sessions === before.sessions + 1, `sessions ${open.sessions} with the idle SSE session open, want ${before.sessions + 1}`);
    const endpoint = t._endpoint;
    const closedAt = Date.now();
    await withTimeout(c.close(), 3000, 'closing the idle SSE client');
    const [stats, took] = await waitSessions(before.sessions, closedAt);
    assert(
        stats.sessions === before.sessions,
        `server_stats.sessions still ${stats.sessions} ${took} ms after closing an idle SSE stream (${before.sessions} before it opened)`
    );
    await postToClosed(endpoint);
    return `sessions ${open.sessions}→${stats.sessions} within ${took} ms; POST to the old endpoint → 404`;
}, 20000);

try {
    // DELETE the observer's session so it does not linger into later runs' server_stats.
    await withTimeout(observerTransport?.terminateSession() ?? Promise.resolve(), 3000);
    await withTimeout(observer?.close() ?? Promise.resolve(), 3000);
} catch {
    // ignore
}
finish();
