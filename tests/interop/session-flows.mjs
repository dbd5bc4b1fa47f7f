// The session-era ("foundation") checks, shared by the TypeScript clients that speak
// 2025-11-25 over a session: client.mjs (@modelcontextprotocol/sdk 1.x) and
// client2026.mjs --era legacy (@modelcontextprotocol/client 2.x, versionNegotiation legacy).
//
// The SDK-specific parts come in through `ctx`:
//   rep            reporter from common.mjs (prints the PASS/FAIL lines)
//   url            the MCP endpoint
//   client         an SDK Client (connect/listTools/getPrompt/complete/subscribeResource/...)
//   transport      its StreamableHTTPClientTransport
//   connect()      connects client to transport (the handshake)
//   afterConnect() optional: extra assertions after connect, returns a detail string
//   callTool(params, options)  adapter: v1 is callTool(params, schema, options), v2 callTool(params, options)
//   sent, received the wire taps (arrays filled by common.tapTransport)
//   elicitations, samplings, resourceUpdates  filled by the client's handlers
// Optional, for the seed transports (client-sse.mjs: HTTP+SSE 2024-11-05; client-stdio.mjs):
//   noSessionId    true: the transport has no Mcp-Session-Id (do not require one)
//   protocolVersion()  the negotiated version when the transport does not expose it
//   skipDelete     true: no delete_session check (those clients check their own way of ending)

import {
    HANDSHAKE_VERSIONS,
    EXPECTED_TOOLS,
    assert,
    firstText,
    sleep,
    withTimeout,
    parseStats,
    waitInFlightOne
} from './common.mjs';

// Returns whether initialize succeeded.
export async function runSessionFlows(ctx) {
    const { rep, url, client, transport, callTool, sent, received, elicitations, samplings, resourceUpdates } = ctx;
    const serverStats = async () => parseStats(await callTool({ name: 'server_stats', arguments: {} }));

    let connected = false;
    await rep.check('initialize', async () => {
        await ctx.connect();
        connected = true;
        const info = client.getServerVersion();
        assert(info && typeof info.name === 'string' && info.name.length > 0, `no server name: ${JSON.stringify(info)}`);
        const pv = ctx.protocolVersion ? ctx.protocolVersion() : transport.protocolVersion;
        assert(HANDSHAKE_VERSIONS.includes(pv), `protocol version ${pv} not one of ${HANDSHAKE_VERSIONS.join('/')}`);
        if (!ctx.noSessionId) assert(transport.sessionId, 'server gave no Mcp-Session-Id');
        const caps = client.getServerCapabilities() ?? {};
        const missing = ['tools', 'resources', 'prompts', 'logging', 'completions'].filter(c => !caps[c]);
        assert(missing.length === 0, `server capabilities lack ${missing.join(', ')}: ${JSON.stringify(caps)}`);
        assert(caps.resources.subscribe === true, `resources.subscribe is not true: ${JSON.stringify(caps.resources)}`);
        const extra = ctx.afterConnect ? await ctx.afterConnect() : '';
        return `server ${info.name} ${info.version ?? ''}, protocol ${pv}${extra ? `, ${extra}` : ''}`;
    });

    async function connectedCheck(name, fn) {
        if (!connected) {
            rep.fail(name, 'skipped: initialize failed');
            return;
        }
        await rep.check(name, fn);
    }

    await connectedCheck('tools_list', async () => {
        const { tools } = await client.listTools();
        const names = tools.map(t => t.name);
        const missing = EXPECTED_TOOLS.filter(n => !names.includes(n));
        assert(missing.length === 0, `missing tools ${missing.join(', ')}; got ${names.join(', ')}`);
        // Informational: 2026-only result fields should stay out of session-era results (spec rec).
        const req = sent.filter(m => m.method === 'tools/list' && 'id' in m).pop();
        const raw = req && received.find(r => r.msg.id === req.id && 'result' in r.msg)?.msg.result;
        const modernKeys = raw ? ['resultType', 'ttlMs', 'cacheScope'].filter(k => k in raw) : [];
        const note = !raw ? '' : modernKeys.length ? `, result carries ${modernKeys.join('/')}` : ', no 2026-only result fields';
        return `${names.length} tools${note}`;
    });

    await connectedCheck('echo', async () => {
        const message = 'hello from ts — ünïcödé ✓';
        const r = await callTool({ name: 'echo', arguments: { message } });
        assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
        const text = firstText(r);
        assert(text === message, `echo returned ${JSON.stringify(text)}`);
    });

    await connectedCheck('countdown_progress', async () => {
        const progress = [];
        const sentBefore = sent.length;
        const r = await callTool(
            { name: 'countdown', arguments: { steps: 3, interval_ms: 50 } },
            { onprogress: p => progress.push(p) }
        );
        assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
        const text = firstText(r);
        assert(text === 'done', `result text ${JSON.stringify(text)}, want "done"`);
        if (ctx.progressFromWire) {
            // Transports that hand the SDK several messages in one synchronous batch (the
            // `eventsource` package behind SSEClientTransport, StdioClientTransport's line
            // buffer) lose the SDK 1.x race between a progress notification (handled in a
            // microtask) and the response right behind it (handled at once, which drops the
            // progress handler): typescript-sdk#2580. So the server's side is checked on the
            // wire: 3 progress notifications for the request's token, in order, all before the
            // response; what reached onprogress is reported.
            await sleep(100); // let a trailing notification reach the tap
            const req = sent.slice(sentBefore).find(m => m.method === 'tools/call' && m.params?.name === 'countdown');
            assert(req, 'did not see the countdown request go out');
            const token = req.params?._meta?.progressToken;
            assert(token !== undefined, `the SDK sent no progressToken: ${JSON.stringify(req.params)}`);
            const resAt = received.findIndex(x => x.msg.id === req.id && ('result' in x.msg || 'error' in x.msg));
            const wire = received
                .map((x, i) => ({ i, msg: x.msg }))
                .filter(x => x.msg.method === 'notifications/progress' && x.msg.params?.progressToken === token);
            assert(wire.length === 3, `${wire.length} progress notifications for token ${token} on the wire, want 3`);
            assert(wire.every(x => x.i < resAt), `a progress notification came after the response: ${JSON.stringify(wire.map(x => x.i))} vs response at ${resAt}`);
            const ps = wire.map(x => x.msg.params);
            for (let i = 1; i < ps.length; i++) {
                assert(ps[i].progress > ps[i - 1].progress, `progress not increasing: ${JSON.stringify(ps)}`);
            }
            assert(ps.every(p => p.total === 3), `progress total is not 3: ${JSON.stringify(ps)}`);
            const lost = ps.length - progress.length;
            const note = lost > 0 ? `; onprogress got ${progress.length} (SDK 1.x dropped ${lost} arriving with the response, typescript-sdk#2580)` : '; onprogress got all 3';
            return `wire progress ${ps.map(p => p.progress).join(',')} before the response${note}`;
        }
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
        const call = callTool({ name: 'countdown', arguments: { steps: 50, interval_ms: 100 } }, { signal: ac.signal });
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
        // Session era: cancellation is a notifications/cancelled POST.
        const cancelNote = sent
            .slice(sentBefore)
            .find(m => m.method === 'notifications/cancelled' && m.params?.requestId === req.id);
        assert(cancelNote, `no notifications/cancelled was sent for request ${req.id}`);
        // The server's request actor must go away: only the server_stats call itself is in flight.
        const stats = await waitInFlightOne(serverStats);
        assert(stats.in_flight_requests === 1, `in_flight_requests still ${stats.in_flight_requests} 3 s after cancel`);
        const late = received.find(r => 'id' in r.msg && r.msg.id === req.id && ('result' in r.msg || 'error' in r.msg));
        if (late) throw new Error(`a response for the cancelled request ${req.id} still arrived: ${JSON.stringify(late.msg).slice(0, 200)}`);
        return `rejected after ${elapsed} ms, in_flight_requests back to 1`;
    });

    await connectedCheck('elicitation', async () => {
        const question = 'What is your favourite colour?';
        const before = elicitations.length;
        const r = await callTool({ name: 'ask_user', arguments: { question } });
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
        const r = await callTool({ name: 'summarize', arguments: { text: 'a long text that needs a summary' } });
        assert(samplings.length === before + 1, `sampling handler called ${samplings.length - before} times, want 1`);
        assert(!r.isError, `isError result: ${JSON.stringify(r)}`);
        const text = firstText(r);
        assert(text === 'sampled!', `summarize returned ${JSON.stringify(text)}, want "sampled!"`);
    });

    await connectedCheck('big_payload', async () => {
        const bytes = 200000;
        const r = await callTool({ name: 'big_payload', arguments: { bytes } });
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

    if (ctx.skipDelete) return connected;

    await connectedCheck('delete_session', async () => {
        const sid = transport.sessionId;
        const pv = transport.protocolVersion;
        assert(sid, 'no session id to delete');
        await transport.terminateSession(); // throws on a non-2xx, non-405 answer
        // The SDK forgets the id after DELETE, so a request through the client goes out without one...
        let clientErr = null;
        try {
            await withTimeout(client.listTools(...(ctx.listToolsNoCacheArgs ?? [])), 5000);
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
    return connected;
}
