// Shared helpers for the TypeScript interop clients (client.mjs: @modelcontextprotocol/sdk 1.x;
// client2026.mjs: @modelcontextprotocol/client 2.x). Plain ESM, no SDK imports here.

export const CHECK_TIMEOUT_MS = 15000;
export const EXPECTED_TOOLS = ['echo', 'countdown', 'ask_user', 'summarize', 'big_payload', 'server_stats'];
export const HANDSHAKE_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

export function errText(e) {
    if (e instanceof Error) {
        const code = e.code !== undefined ? ` (code ${e.code})` : '';
        return `${e.name}: ${e.message}${code}`;
    }
    return String(e);
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));

export function withTimeout(promise, ms, what) {
    let t;
    const timer = new Promise((_, reject) => {
        t = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what ?? ''}`.trim())), ms);
    });
    return Promise.race([promise, timer]).finally(() => clearTimeout(t));
}

export function assert(cond, msg) {
    if (!cond) throw new Error(msg);
}

export function firstText(result) {
    assert(result && Array.isArray(result.content), `result has no content array: ${JSON.stringify(result)?.slice(0, 200)}`);
    const t = result.content.find(c => c.type === 'text');
    assert(t, `result has no text content: ${JSON.stringify(result).slice(0, 200)}`);
    return t.text;
}

// One reporter per client run: prints "PASS <prefix><name>" / "FAIL <prefix><name>: reason".
export function makeReporter(prefix) {
    const r = {
        prefix,
        passed: 0,
        failed: 0,
        pass(name, detail) {
            r.passed++;
            console.log(`PASS ${prefix}${name}${detail ? ` (${detail})` : ''}`);
        },
        fail(name, reason) {
            r.failed++;
            const oneLine = String(reason).replace(/\s+/g, ' ').slice(0, 500);
            console.log(`FAIL ${prefix}${name}: ${oneLine}`);
        },
        // Runs one check; fn returns an optional detail string on success, throws on failure.
        async check(name, fn, timeoutMs = CHECK_TIMEOUT_MS) {
            try {
                const detail = await withTimeout(Promise.resolve().then(fn), timeoutMs);
                r.pass(name, detail);
                return true;
            } catch (e) {
                r.fail(name, errText(e));
                return false;
            }
        }
    };
    return r;
}

// Wire taps on a transport: every JSON-RPC message the SDK sends, and every one it receives
// (with arrival time). Installed by wrapping send/onmessage; see each client for when.
export function tapTransport(transport, sent, received) {
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

// Wire taps installed *before* connect, so the handshake is seen too (for @modelcontextprotocol/sdk
// 1.x, whose Protocol.connect() replaces onmessage): send is wrapped, and onmessage becomes an
// accessor. It reads as undefined until the SDK installs its handler (so Protocol.connect() chains
// nothing), then as a tap that records each message and calls that handler. Used by the
// seed-transport clients (client-sse.mjs, client-stdio.mjs).
export function tapTransportEarly(transport, sent, received) {
    const origSend = transport.send.bind(transport);
    transport.send = (msg, opts) => {
        sent.push(msg);
        return origSend(msg, opts);
    };
    let handler;
    const tapped = (msg, extra) => {
        received.push({ at: Date.now(), msg });
        return handler?.(msg, extra);
    };
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        enumerable: true,
        get: () => (handler ? tapped : undefined),
        set: fn => {
            handler = fn === tapped ? handler : fn;
        }
    });
}

// Polls server_stats until in_flight_requests == 1 (only the stats call itself) or the deadline.
export async function waitInFlightOne(serverStats, ms = 3000) {
    let stats;
    const deadline = Date.now() + ms;
    for (;;) {
        stats = await serverStats();
        if (stats.in_flight_requests === 1 || Date.now() > deadline) break;
        await sleep(100);
    }
    return stats;
}

export function parseStats(result) {
    const text = firstText(result);
    const stats = JSON.parse(text);
    assert(Number.isInteger(stats.in_flight_requests), `server_stats has no integer in_flight_requests: ${text}`);
    assert(Number.isInteger(stats.sessions), `server_stats has no integer sessions: ${text}`);
    return stats;
}
