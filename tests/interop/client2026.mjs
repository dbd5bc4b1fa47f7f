// Interop check: the official TypeScript MCP SDK v2 client (@modelcontextprotocol/client,
// pinned in package.json / package-lock.json) against mcpd's "demo" tool set.
//
// Usage: node client2026.mjs http://127.0.0.1:PORT/mcp [modern|legacy]
//   modern (default): versionNegotiation {mode:'auto'}: the client probes server/discover and,
//          mcpd speaking 2026-07-28, runs stateless. Prefix "ts2026:".
//   legacy: versionNegotiation {mode:'legacy'}: the plain 2025 initialize handshake and the
//          session-era foundation flows of session-flows.mjs. Prefix "ts2:legacy:".
// Prints one line per check ("PASS <prefix><name>" / "FAIL <prefix><name>: <reason>") and exits
// 0 only when every check passed. run.sh counts the lines. Plain ESM; needs Node 20+.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
    EXPECTED_TOOLS,
    assert,
    errText,
    firstText,
    makeReporter,
    parseStats,
    sleep,
    tapTransport,
    waitInFlightOne,
    withTimeout
} from './common.mjs';
import { runSessionFlows } from './session-flows.mjs';

const url = process.argv[2];
const era = process.argv[3] ?? 'modern';
if (!url || !['modern', 'legacy'].includes(era)) {
    console.error('usage: node client2026.mjs <mcp endpoint url> [modern|legacy]');
    process.exit(2);
}
const MODERN = '2026-07-28';
const SUPPORTED_VERSIONS = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'];
const SUB_ID_KEY = 'io.modelcontextprotocol/subscriptionId';
const rep = makeReporter(era === 'modern' ? 'ts2026:' : 'ts2:legacy:');

const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

// ---- HTTP tap: every fetch the transport makes (request headers/body, response status/headers,
// and the parsed body of application/json answers; SSE bodies are left to the SDK) ------------
const http = [];
async function tapFetch(input, init = {}) {
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => (headers[k.toLowerCase()] = v));
    let body;
    try {
        body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    } catch {
        body = undefined;
    }
    const e = { at: Date.now(), method: (init.method ?? 'GET').toUpperCase(), headers, body };
    http.push(e);
    try {
        const res = await fetch(input, init);
        e.status = res.status;
        e.resHeaders = {};
        res.headers.forEach((v, k) => (e.resHeaders[k.toLowerCase()] = v));
        e.contentType = res.headers.get('content-type') ?? '';
        if (e.contentType.startsWith('application/json')) {
            try {
                e.json = JSON.parse(await res.clone().text());
            } catch {
                // not JSON after all; leave it to the SDK
            }
        }
        return res;
    } catch (err) {
        e.error = errText(err);
        throw err;
    }
}
const postsOf = method => http.filter(e => e.method === 'POST' && e.body?.method === method);

// ---- client setup -------------------------------------------------------------------------
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: tapFetch });
const client = new Client(
    { name: 'mcpd-interop-ts2', version: '0.0.0' },
    {
        capabilities: { sampling: {}, elicitation: {} },
        versionNegotiation: { mode: era === 'modern' ? 'auto' : 'legacy' }
    }
);
client.onerror = e => backgroundErrors.push(errText(e));

const elicitations = [];
client.setRequestHandler('elicitation/create', async request => {
    elicitations.push(request.params);
    return { action: 'accept', content: { answer: 'blue' } };
});
const samplings = [];
client.setRequestHandler('sampling/createMessage', async request => {
    samplings.push(request.params);
    return {
        role: 'assistant',
        content: { type: 'text', text: 'sampled!' },
        model: 'mcpd-interop-fake-model',
        stopReason: 'endTurn'
    };
});
const resourceUpdates = [];
client.setNotificationHandler('notifications/resources/updated', n => {
    resourceUpdates.push({ at: Date.now(), uri: n.params.uri });
});

// JSON-RPC taps. The v2 Protocol chains a pre-set transport.onmessage, so these go in before
// connect (the connect-time probe runs in its own window and is seen by the HTTP tap only).
const sent = [];
const received = [];
tapTransport(transport, sent, received);
const responseTo = id => received.find(r => r.msg.id === id && ('result' in r.msg || 'error' in r.msg))?.msg;

const callTool = (params, options) => client.callTool(params, options);
const serverStats = async () => parseStats(await callTool({ name: 'server_stats', arguments: {} }));

// ---- legacy era: the foundation flows ------------------------------------------------------
if (era === 'legacy') {
    await runSessionFlows({
        rep,
        url,
        client,
        transport,
        connect: () => client.connect(transport),
        afterConnect: async () => {
            assert(client.getProtocolEra() === 'legacy', `protocol era ${client.getProtocolEra()}, want legacy`);
            const posts = http.filter(e => e.method === 'POST');
            assert(posts[0]?.body?.method === 'initialize', `first POST was ${posts[0]?.body?.method}, want initialize (no probe)`);
            assert(postsOf('server/discover').length === 0, 'mode legacy still sent server/discover');
            assert(!('mcp-method' in posts[0].headers), 'initialize carried an Mcp-Method header');
            return 'no probe';
        },
        callTool,
        listToolsNoCacheArgs: [undefined, { cacheMode: 'bypass' }],
        sent,
        received,
        elicitations,
        samplings,
        resourceUpdates
    });
    await finish();
}

// ---- modern era (2026-07-28, stateless) ------------------------------------------------------
let connected = false;
await rep.check('discover', async () => {
    await client.connect(transport);
    connected = true;
    const gotEra = client.getProtocolEra();
    const pv = client.getNegotiatedProtocolVersion();
    assert(gotEra === 'modern' && pv === MODERN, `negotiated era ${gotEra} / version ${pv}, want modern / ${MODERN}`);
    const posts = http.filter(e => e.method === 'POST');
    const probe = posts[0];
    assert(probe?.body?.method === 'server/discover', `first POST was ${probe?.body?.method}, not server/discover`);
    assert(probe.headers['mcp-protocol-version'] === MODERN, `probe MCP-Protocol-Version ${probe.headers['mcp-protocol-version']}`);
    assert(probe.headers['mcp-method'] === 'server/discover', `probe Mcp-Method ${probe.headers['mcp-method']}`);
    assert(probe.status === 200, `probe answered HTTP ${probe.status}`);
    const res = probe.json?.result;
    assert(res, `probe answer is not a JSON-RPC result: ${JSON.stringify(probe.json)?.slice(0, 300)} (${probe.contentType})`);
    assert(res.resultType === 'complete', `discover resultType ${JSON.stringify(res.resultType)}`);
    assert(JSON.stringify(res.supportedVersions) === JSON.stringify(SUPPORTED_VERSIONS), `supportedVersions ${JSON.stringify(res.supportedVersions)}`);
    assert(Number.isInteger(res.ttlMs) && res.ttlMs >= 0, `discover ttlMs ${JSON.stringify(res.ttlMs)}`);
    assert(['public', 'private'].includes(res.cacheScope), `discover cacheScope ${JSON.stringify(res.cacheScope)}`);
    assert(!('serverInfo' in res), 'serverInfo in the discover body (belongs in _meta)');
    assert(!probe.resHeaders['mcp-session-id'], `discover answer minted Mcp-Session-Id ${probe.resHeaders['mcp-session-id']}`);
    assert(postsOf('initialize').length === 0, 'an initialize went out after the probe');
    const info = client.getServerVersion();
    assert(info?.name, `no serverInfo from discover _meta: ${JSON.stringify(res._meta)}`);
    const caps = client.getServerCapabilities() ?? {};
    const missing = ['tools', 'resources', 'prompts'].filter(c => !caps[c]);
    assert(missing.length === 0, `capabilities lack ${missing.join(', ')}: ${JSON.stringify(caps)}`);
    return `server ${info.name} ${info.version ?? ''}, ${pv}, ttlMs ${res.ttlMs} ${res.cacheScope}`;
});

async function connectedCheck(name, fn) {
    if (!connected) {
        rep.fail(name, 'skipped: discover/connect failed');
        return;
    }
    await rep.check(name, fn);
}

// The request as it went out (last one of that method/name) and its HTTP exchange.
function lastSent(method, name) {
    const all = sent.filter(m => m.method === method && 'id' in m && (name === undefined || m.params?.name === name));
    return all[all.length - 1];
}
function httpOf(msg) {
    return http.find(e => e.method === 'POST' && e.body?.id === msg.id && e.body?.method === msg.method);
}
function assertModernRequest(msg, name) {
    const h = httpOf(msg);
    assert(h, `no HTTP POST seen for ${msg.method} id ${msg.id}`);
    assert(h.headers['mcp-protocol-version'] === MODERN, `${msg.method} MCP-Protocol-Version ${h.headers['mcp-protocol-version']}`);
    assert(h.headers['mcp-method'] === msg.method, `${msg.method} Mcp-Method ${h.headers['mcp-method']}`);
    if (name !== undefined) assert(h.headers['mcp-name'] === name, `${msg.method} Mcp-Name ${h.headers['mcp-name']}, want ${name}`);
    assert(!h.headers['mcp-session-id'], `${msg.method} went out with Mcp-Session-Id`);
    const meta = msg.params?._meta ?? {};
    assert(meta['io.modelcontextprotocol/protocolVersion'] === MODERN, `${msg.method} _meta lacks protocolVersion: ${JSON.stringify(meta)}`);
    assert(meta['io.modelcontextprotocol/clientCapabilities'], `${msg.method} _meta lacks clientCapabilities`);
    return h;
}
function rawResult(msg, what) {
    const r = responseTo(msg.id);
    assert(r, `no response seen for ${what} (id ${msg.id})`);
    assert(r.result, `${what} answered with an error: ${JSON.stringify(r.error)}`);
    return r.result;
}
function assertCacheable(result, what) {
    assert(result.resultType === 'complete', `${what} resultType ${JSON.stringify(result.resultType)}`);
    assert(Number.isInteger(result.ttlMs) && result.ttlMs >= 0, `${what} ttlMs ${JSON.stringify(result.ttlMs)}`);
    assert(['public', 'private'].includes(result.cacheScope), `${what} cacheScope ${JSON.stringify(result.cacheScope)}`);
    return `ttlMs ${result.ttlMs} ${result.cacheScope}`;
}

await connectedCheck('tools_list', async () => {
    const { tools } = await client.listTools(undefined, { cacheMode: 'bypass' });
    const names = tools.map(t => t.name);
    const missing = EXPECTED_TOOLS.filter(n => !names.includes(n));
    assert(missing.length === 0, `missing tools ${missing.join(', ')}; got ${names.join(', ')}`);
    const req = lastSent('tools/list');
    assertModernRequest(req);
    const hints = assertCacheable(rawResult(req, 'tools/list'), 'tools/list');
    return `${names.length} tools, ${hints}`;
});

await connectedCheck('echo', async () => {
    const message = 'hello from ts2026 — ünïcödé ✓';
    const r = await callTool({ name: 'echo', arguments: { message } });
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    assert(firstText(r) === message, `echo returned ${JSON.stringify(firstText(r))}`);
    const req = lastSent('tools/call', 'echo');
    assertModernRequest(req, 'echo');
    const raw = rawResult(req, 'tools/call echo');
    assert(raw.resultType === 'complete', `resultType ${JSON.stringify(raw.resultType)}`);
});

await connectedCheck('countdown_progress', async () => {
    const progress = [];
    const r = await callTool({ name: 'countdown', arguments: { steps: 3, interval_ms: 50 } }, { onprogress: p => progress.push(p) });
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    assert(firstText(r) === 'done', `result text ${JSON.stringify(firstText(r))}, want "done"`);
    assert(progress.length === 3, `got ${progress.length} progress notifications, want 3: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; i++) {
        assert(progress[i].progress > progress[i - 1].progress, `progress not increasing: ${JSON.stringify(progress)}`);
    }
    assert(progress.every(p => p.total === 3), `progress total is not 3: ${JSON.stringify(progress)}`);
    const req = lastSent('tools/call', 'countdown');
    const h = assertModernRequest(req, 'countdown');
    assert(req.params._meta.progressToken !== undefined, 'no progressToken in _meta');
    return `progress ${progress.map(p => p.progress).join(',')} over ${h.contentType.split(';')[0]}`;
});

await connectedCheck('elicitation_mrtr', async () => {
    const question = 'What is your favourite colour?';
    const before = elicitations.length;
    const sentBefore = sent.length;
    const r = await callTool({ name: 'ask_user', arguments: { question } });
    assert(elicitations.length === before + 1, `elicitation handler called ${elicitations.length - before} times, want 1`);
    const params = elicitations[before];
    assert(params.message === question, `elicitation message ${JSON.stringify(params.message)}, want the question`);
    assert(params.requestedSchema?.properties?.answer?.type === 'string', `requestedSchema lacks answer:string: ${JSON.stringify(params.requestedSchema)}`);
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    assert(firstText(r) === 'blue', `ask_user returned ${JSON.stringify(firstText(r))}, want "blue"`);
    // On the wire: tools/call -> input_required; retry with a new id, inputResponses, requestState echoed.
    const calls = sent.slice(sentBefore).filter(m => m.method === 'tools/call' && m.params?.name === 'ask_user');
    assert(calls.length === 2, `${calls.length} tools/call ask_user requests went out, want 2`);
    assert(calls[0].id !== calls[1].id, 'the retry reused the JSON-RPC id');
    const first = rawResult(calls[0], 'first ask_user');
    assert(first.resultType === 'input_required', `first answer resultType ${JSON.stringify(first.resultType)}`);
    const entry = first.inputRequests?.['elicitation-1'];
    assert(entry?.method === 'elicitation/create', `inputRequests lacks elicitation-1: ${JSON.stringify(first.inputRequests)}`);
    assert(typeof first.requestState === 'string', 'first answer has no requestState');
    assert(calls[1].params.requestState === first.requestState, 'the retry did not echo requestState byte for byte');
    const resp = calls[1].params.inputResponses?.['elicitation-1'];
    assert(resp?.action === 'accept' && resp?.content?.answer === 'blue', `retry inputResponses ${JSON.stringify(calls[1].params.inputResponses)}`);
    assertModernRequest(calls[1], 'ask_user');
    assert(rawResult(calls[1], 'ask_user retry').resultType === 'complete', 'retry answer is not resultType complete');
    return 'input_required elicitation-1 -> retry -> "blue"';
});

await connectedCheck('sampling_mrtr', async () => {
    const before = samplings.length;
    const sentBefore = sent.length;
    const r = await callTool({ name: 'summarize', arguments: { text: 'a long text that needs a summary' } });
    assert(samplings.length === before + 1, `sampling handler called ${samplings.length - before} times, want 1`);
    assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
    assert(firstText(r) === 'sampled!', `summarize returned ${JSON.stringify(firstText(r))}, want "sampled!"`);
    const calls = sent.slice(sentBefore).filter(m => m.method === 'tools/call' && m.params?.name === 'summarize');
    assert(calls.length === 2, `${calls.length} tools/call summarize requests went out, want 2`);
    const first = rawResult(calls[0], 'first summarize');
    assert(first.inputRequests?.['sampling-1']?.method === 'sampling/createMessage', `inputRequests lacks sampling-1: ${JSON.stringify(first.inputRequests)}`);
    assert(calls[1].params.inputResponses?.['sampling-1'], 'retry lacks inputResponses.sampling-1');
});

await connectedCheck('big_payload', async () => {
    const bytes = 200000;
    const r = await callTool({ name: 'big_payload', arguments: { bytes } });
    assert(!r.isError, `isError result: ${JSON.stringify(r).slice(0, 200)}`);
    const got = Buffer.byteLength(firstText(r), 'utf8');
    assert(got === bytes, `got ${got} bytes, want ${bytes}`);
});

await connectedCheck('cancel', async () => {
    const ac = new AbortController();
    const sentBefore = sent.length;
    const progress = [];
    const started = Date.now();
    const call = callTool(
        { name: 'countdown', arguments: { steps: 50, interval_ms: 100 } },
        { signal: ac.signal, onprogress: p => progress.push(p) }
    );
    // While it runs, a second request sees it in flight; then close its stream.
    await sleep(300);
    const during = await serverStats();
    ac.abort(new Error('interop: cancelled by client'));
    let settled;
    try {
        settled = `resolved with ${JSON.stringify(await call).slice(0, 200)}`;
    } catch {
        settled = null;
    }
    assert(settled === null, `call was not cancelled locally: ${settled}`);
    const elapsed = Date.now() - started;
    assert(elapsed < 2500, `call took ${elapsed} ms to reject after abort`);
    const req = sent.slice(sentBefore).find(m => m.method === 'tools/call' && m.params?.name === 'countdown');
    assert(req, 'did not see the countdown request go out');
    assert(during.in_flight_requests >= 2, `in_flight_requests was ${during.in_flight_requests} while countdown ran, want >= 2`);
    // 2026-07-28: closing the request's stream IS the cancellation; no notifications/cancelled.
    const note = sent.slice(sentBefore).find(m => m.method === 'notifications/cancelled');
    assert(!note, `the client POSTed notifications/cancelled: ${JSON.stringify(note)}`);
    const h = httpOf(req);
    const stats = await waitInFlightOne(serverStats);
    assert(stats.in_flight_requests === 1, `in_flight_requests still ${stats.in_flight_requests} 3 s after closing the stream`);
    const late = responseTo(req.id);
    assert(!late, `a response for the cancelled request still arrived: ${JSON.stringify(late)?.slice(0, 200)}`);
    return `${progress.length} progress events, in_flight_requests ${during.in_flight_requests} while running, stream (${h?.contentType?.split(';')[0] || h?.error || '?'}) closed after ${elapsed} ms, in_flight_requests back to 1`;
});

let sub;
let listenReq;
await connectedCheck('listen_resource_updated', async () => {
    const start = Date.now();
    const updatesBefore = resourceUpdates.length;
    sub = await client.listen({ resourceSubscriptions: ['demo://clock'] });
    listenReq = sent.filter(m => m.method === 'subscriptions/listen').pop();
    assert(listenReq, 'no subscriptions/listen request went out');
    const h = assertModernRequest(listenReq);
    assert(h.contentType.startsWith('text/event-stream'), `listen answered ${h.status} ${h.contentType}, want an SSE stream`);
    const honored = sub.honoredFilter?.resourceSubscriptions ?? [];
    assert(honored.includes('demo://clock'), `acknowledged filter ${JSON.stringify(sub.honoredFilter)} lacks demo://clock`);
    const onStream = () => received.filter(r => r.msg.method && r.msg.params?._meta?.[SUB_ID_KEY] === listenReq.id);
    const ack = onStream()[0];
    assert(ack?.msg.method === 'notifications/subscriptions/acknowledged', `first message on the stream was ${ack?.msg.method}`);
    const deadline = start + 5000;
    while (Date.now() < deadline) {
        const hit = resourceUpdates.slice(updatesBefore).find(u => u.uri === 'demo://clock');
        if (hit) {
            const upd = onStream().find(r => r.msg.method === 'notifications/resources/updated');
            assert(upd, `notifications/resources/updated did not carry _meta ${SUB_ID_KEY}=${JSON.stringify(listenReq.id)}`);
            const stray = received.find(r => r.at >= start && r.msg.method === 'notifications/resources/updated' && r.msg.params?._meta?.[SUB_ID_KEY] !== listenReq.id);
            assert(!stray, `an update without the subscription id: ${JSON.stringify(stray?.msg)}`);
            return `ack, then first update after ${hit.at - start} ms`;
        }
        await sleep(50);
    }
    throw new Error(`no notifications/resources/updated for demo://clock within 5 s (got ${resourceUpdates.length - updatesBefore})`);
});

await connectedCheck('listen_close', async () => {
    assert(sub, 'skipped: no open subscription');
    const sentBefore = sent.length;
    const open = await serverStats();
    await sub.close();
    const how = await withTimeout(sub.closed, 3000, 'waiting for the subscription to settle');
    assert(how === 'local', `subscription closed as ${how}, want local`);
    // The server must notice the closed stream and drop the listen: only server_stats in flight.
    const stats = await waitInFlightOne(serverStats);
    assert(stats.in_flight_requests === 1, `in_flight_requests still ${stats.in_flight_requests} 3 s after closing the listen stream`);
    // The SDK also POSTs notifications/cancelled for the listen id (belt and braces); report its fate.
    const note = sent.slice(sentBefore).find(m => m.method === 'notifications/cancelled');
    const noteHttp = note && http.find(e => e.method === 'POST' && e.body?.method === 'notifications/cancelled' && e.body?.params?.requestId === listenReq.id);
    const counted = open.in_flight_requests >= 2 ? `in_flight_requests ${open.in_flight_requests} with the listen open` : 'server_stats does not count the open listen';
    return `${counted}, closed locally, in_flight_requests 1 after; SDK's extra notifications/cancelled POST -> ${noteHttp ? `HTTP ${noteHttp.status ?? noteHttp.error}` : 'not sent'}`;
});

await connectedCheck('resources_read', async () => {
    const r = await client.readResource({ uri: 'demo://clock' }, { cacheMode: 'bypass' });
    assert(Array.isArray(r.contents) && r.contents.length > 0, `no contents: ${JSON.stringify(r)}`);
    const req = lastSent('resources/read');
    assertModernRequest(req, 'demo://clock');
    return assertCacheable(rawResult(req, 'resources/read'), 'resources/read');
});

await connectedCheck('prompts_get', async () => {
    const r = await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } });
    assert(Array.isArray(r.messages) && r.messages.length > 0, `no messages: ${JSON.stringify(r)}`);
    const req = lastSent('prompts/get', 'greeting');
    assertModernRequest(req, 'greeting');
    return `${r.messages.length} message(s)`;
});

await connectedCheck('completion', async () => {
    const r = await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'A' } });
    assert(Array.isArray(r?.completion?.values), `no completion.values array: ${JSON.stringify(r)}`);
    return `values ${JSON.stringify(r.completion.values).slice(0, 100)}`;
});

await connectedCheck('stateless', async () => {
    await withTimeout(client.close(), 3000).catch(() => {});
    const other = http.filter(e => e.method !== 'POST');
    assert(other.length === 0, `non-POST requests went out: ${other.map(e => e.method).join(', ')}`);
    const minted = http.filter(e => e.resHeaders?.['mcp-session-id']);
    assert(minted.length === 0, `${minted.length} answers carried Mcp-Session-Id`);
    const reqs = http.filter(e => e.body && 'id' in e.body && e.body.method);
    const bad = reqs.filter(e => e.headers['mcp-protocol-version'] !== MODERN || e.headers['mcp-method'] !== e.body.method);
    assert(bad.length === 0, `requests without matching MCP-Protocol-Version/Mcp-Method: ${bad.map(e => e.body.method).join(', ')}`);
    const errs = http.filter(e => e.body && 'id' in e.body && e.status !== undefined && e.status !== 200);
    assert(errs.length === 0, `non-200 answers: ${errs.map(e => `${e.body.method} -> ${e.status}`).join(', ')}`);
    // Nothing the server sent may be a JSON-RPC request (no server->client requests in 2026-07-28), and
    // no notifications/message arrives since no request opted in with a logLevel.
    const srvReqs = received.filter(r => r.msg.method && 'id' in r.msg);
    assert(srvReqs.length === 0, `the server sent JSON-RPC requests: ${srvReqs.map(r => r.msg.method).join(', ')}`);
    const logs = received.filter(r => r.msg.method === 'notifications/message');
    assert(logs.length === 0, `${logs.length} notifications/message arrived without a logLevel opt-in`);
    return `${reqs.length} requests, all POST with 2026 headers, no session, no initialize, no server->client requests`;
});

await finish();

async function finish() {
    try {
        await withTimeout(client.close(), 3000);
    } catch {
        // ignore
    }
    if (backgroundErrors.length > 0) {
        console.error(`${rep.prefix} background errors (informational):`);
        for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
    }
    process.exit(rep.failed === 0 ? 0 : 1);
}
