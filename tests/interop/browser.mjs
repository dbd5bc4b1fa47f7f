// Browser test: a real headless Chromium (Debian's /usr/bin/chromium, driven by npm playwright-core,
// pinned in package.json / package-lock.json) talks to mcpd with fetch() from a web page, so CORS and
// the Origin check are exercised by the browser itself, not by a client that merely sends an Origin
// header.
//
//   cd "${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}/node" && cp /path/to/tests/interop/*.mjs . &&
//   MCPD_BIN=/path/to/mcpd [CHROMIUM=/usr/bin/chromium] node browser.mjs
//
// (The .mjs must sit beside node_modules, as for the other clients; `node browser.mjs /path/to/mcpd`
// works too.) Self-contained: it starts two static HTTP servers on loopback ephemeral ports serving the
// same page, origin A = http://127.0.0.1:<portA> (allowed) and origin B = http://localhost:<portB>
// (foreign), and its own mcpd:
//   $MCPD_BIN --listen 127.0.0.1:0   with MCPD_HTTP_ALLOWED_ORIGINS=<A>,
//   MCPD_HTTP_ALLOW_LOCALHOST_ORIGINS=false (so B is foreign although it is loopback), MCPD_LOG_LEVEL=warn.
// From A the page runs the whole session-era flow (initialize, Mcp-Session-Id, notifications/initialized,
// tools/call echo with the session headers, DELETE); from B its first fetch must be refused by the
// browser. Then Node checks the CORS headers on the wire (preflight, POST, foreign 403).
// Prints "PASS browser <name>" / "FAIL browser <name>: reason" lines and "browser: N passed, M failed";
// exits 0 only when nothing failed. Everything is torn down within a global 60 s timeout.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { errText, makeReporter, assert } from './common.mjs';

const GLOBAL_TIMEOUT_MS = 60000;
const PROTOCOL_VERSION = '2025-11-25';
const ECHO_MESSAGE = 'from the browser';

const rep = makeReporter('browser ');
const cleanups = [];
let finished = false;

async function cleanup() {
    while (cleanups.length > 0) {
        const fn = cleanups.pop();
        try {
            await Promise.race([fn(), new Promise(r => setTimeout(r, 5000))]);
        } catch {
            // ignore: best effort
        }
    }
}

async function finish(extraFail) {
    if (finished) return;
    finished = true;
    if (extraFail) rep.fail(extraFail[0], extraFail[1]);
    // Checks still running while we tear down report nothing more.
    rep.pass = rep.fail = () => {};
    await cleanup();
    console.log(`browser: ${rep.passed} passed, ${rep.failed} failed`);
    process.exit(rep.failed === 0 && rep.passed > 0 ? 0 : 1);
}

const globalTimer = setTimeout(() => {
    finish(['run', `global timeout: not finished after ${GLOBAL_TIMEOUT_MS / 1000} s`]);
}, GLOBAL_TIMEOUT_MS);
process.on('unhandledRejection', e => console.error(`unhandledRejection (informational): ${errText(e)}`));
// A caller's timeout (SIGTERM) or ^C still tears down mcpd and Chromium.
for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, () => finish(['run', `interrupted by ${sig}`]));

// ---- inputs ------------------------------------------------------------------------------------
function defaultBin() {
    // Only useful when run from the repository (tests/interop/browser.mjs); from the cache dir the
    // caller sets MCPD_BIN.
    const p = fileURLToPath(new URL('../../target/debug/mcpd', import.meta.url));
    return existsSync(p) ? p : undefined;
}
const mcpdBin = process.argv[2] || process.env.MCPD_BIN || defaultBin();
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
if (!mcpdBin) {
    console.error('usage: MCPD_BIN=/path/to/mcpd node browser.mjs   (or: node browser.mjs /path/to/mcpd)');
    await finish(['setup', 'no mcpd binary: set MCPD_BIN']);
}

// ---- the page ----------------------------------------------------------------------------------
// The same page is served by both origins. window.runMcpFlow(url) runs the session-era flow with
// fetch() and returns what it saw; it stops at the first fetch that rejects.
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>mcpd browser test</title></head>
<body><p>mcpd browser test</p>
<script>
function parseBody(text, contentType) {
  // A JSON body, or an SSE stream whose data: lines hold JSON-RPC messages: the last one with an id.
  if ((contentType || '').includes('text/event-stream')) {
    let last = null;
    for (const block of text.split(/\\r?\\n\\r?\\n/)) {
      const data = block.split(/\\r?\\n/).filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\\n');
      if (!data) continue;
      try { const m = JSON.parse(data); if (m && 'id' in m) last = m; } catch (e) { /* not JSON */ }
    }
    return last;
  }
  try { return text ? JSON.parse(text) : null; } catch (e) { return { unparsed: text.slice(0, 200) }; }
}
async function runMcpFlow(url, protocolVersion, message) {
  const out = { origin: location.origin, steps: {}, error: null };
  let step = 'initialize';
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const visibleHeaders = res => Array.from(res.headers.keys());
  try {
    let res = await fetch(url, { method: 'POST', headers: base, body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'mcpd-browser-test', version: '0.0.0' } } }) });
    let text = await res.text();
    const sessionId = res.headers.get('mcp-session-id');
    out.steps.initialize = { status: res.status, body: parseBody(text, res.headers.get('content-type')),
      sessionId, headers: visibleHeaders(res) };
    if (!sessionId) return out;
    const session = { ...base, 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion };

    step = 'initialized';
    res = await fetch(url, { method: 'POST', headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    text = await res.text();
    out.steps.initialized = { status: res.status, text: text.slice(0, 200) };

    step = 'tools/call';
    res = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({
      jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message } } }) });
    text = await res.text();
    out.steps.call = { status: res.status, body: parseBody(text, res.headers.get('content-type')) };

    step = 'DELETE';
    res = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion } });
    text = await res.text();
    out.steps.delete = { status: res.status, text: text.slice(0, 200) };
  } catch (e) {
    out.error = { step, name: e && e.name, message: e && e.message };
  }
  return out;
}
window.runMcpFlow = runMcpFlow;
</script></body></html>`;

function startPageServer(host) {
    const server = http.createServer((req, res) => {
        if (req.method === 'GET' && (req.url === '/' || req.url === '/index.html')) {
            res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
            res.end(PAGE);
        } else {
            res.writeHead(404, { 'content-type': 'text/plain' });
            res.end('not found');
        }
    });
    return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => {
            cleanups.push(
                () =>
                    new Promise(r => {
                        server.closeAllConnections?.();
                        server.close(() => r());
                    })
            );
            resolve(server.address().port);
        });
    });
}

// ---- mcpd --------------------------------------------------------------------------------------
function startMcpd(allowedOrigin) {
    return new Promise((resolve, reject) => {
        const child = spawn(mcpdBin, ['--listen', '127.0.0.1:0'], {
            env: {
                ...process.env,
                MCPD_HTTP_ALLOWED_ORIGINS: allowedOrigin,
                MCPD_HTTP_ALLOW_LOCALHOST_ORIGINS: 'false',
                MCPD_LOG_LEVEL: 'warn'
            },
            stdio: ['ignore', 'pipe', 'pipe']
        });
        let stdout = '';
        let stderr = '';
        let settled = false;
        const t = setTimeout(() => {
            if (!settled) {
                settled = true;
                reject(new Error(`mcpd printed no "mcpd listening on" line within 15 s; stderr: ${stderr.slice(-300)}`));
            }
        }, 15000);
        cleanups.push(
            () =>
                new Promise(r => {
                    if (child.exitCode !== null || child.signalCode !== null) return r();
                    const k = setTimeout(() => child.kill('SIGKILL'), 3000);
                    child.once('exit', () => {
                        clearTimeout(k);
                        r();
                    });
                    child.kill('SIGTERM');
                })
        );
        child.stdout.on('data', d => {
            stdout += d;
            const m = stdout.match(/mcpd listening on (http:\/\/\S+)/);
            if (m && !settled) {
                settled = true;
                clearTimeout(t);
                resolve({ url: m[1], stderr: () => stderr });
            }
        });
        child.stderr.on('data', d => {
            stderr += d;
        });
        child.once('error', e => {
            if (!settled) {
                settled = true;
                clearTimeout(t);
                reject(e);
            }
        });
        child.once('exit', (code, signal) => {
            if (!settled) {
                settled = true;
                clearTimeout(t);
                reject(new Error(`mcpd exited (${code ?? signal}) before listening; stderr: ${stderr.slice(-300)}`));
            }
        });
    });
}

// ---- helpers for the wire checks ----------------------------------------------------------------
const listOf = v =>
    (v ?? '')
        .split(',')
        .map(s => s.trim().toLowerCase())
        .filter(Boolean);

function headerDump(res, names) {
    return names.map(n => `${n}: ${res.headers.get(n) ?? '(none)'}`).join('; ');
}

const CORS_HEADERS = [
    'access-control-allow-origin',
    'access-control-allow-methods',
    'access-control-allow-headers',
    'access-control-expose-headers',
    'access-control-max-age',
    'vary'
];

// ---- main --------------------------------------------------------------------------------------
let browser;
try {
    const portA = await startPageServer('127.0.0.1');
    const portB = await startPageServer('127.0.0.1');
    const originA = `http://127.0.0.1:${portA}`;
    // localhost is loopback too: with MCPD_HTTP_ALLOW_LOCALHOST_ORIGINS=false it is just foreign.
    const originB = `http://localhost:${portB}`;
    const mcpd = await startMcpd(originA);
    const url = mcpd.url;
    console.error(`origin A ${originA}, origin B ${originB}, mcpd ${url}`);

    const { chromium } = await import('playwright-core');
    const launchedAt = Date.now();
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    cleanups.push(() => browser.close());
    console.error(`chromium ${browser.version()} launched in ${Date.now() - launchedAt} ms`);

    async function runPage(origin) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const consoleLines = [];
        page.on('console', m => consoleLines.push(`${m.type()}: ${m.text()}`));
        page.on('pageerror', e => consoleLines.push(`pageerror: ${e.message}`));
        await page.goto(`${origin}/`, { waitUntil: 'load', timeout: 15000 });
        const result = await page.evaluate(
            ([u, pv, msg]) => window.runMcpFlow(u, pv, msg),
            [url, PROTOCOL_VERSION, ECHO_MESSAGE]
        );
        await context.close();
        return { result, consoleLines };
    }

    // ---- origin A: the whole flow in the browser ----
    let a;
    try {
        a = await runPage(originA);
    } catch (e) {
        a = { result: { steps: {}, error: { step: 'page', name: 'playwright', message: errText(e) } }, consoleLines: [] };
    }
    const s = a.result.steps;
    const why = step => {
        const e = a.result.error;
        if (e && e.step === step) {
            const cors = a.consoleLines.filter(l => /CORS|Access-Control/i.test(l)).slice(0, 2).join(' | ');
            return `fetch rejected: ${e.name}: ${e.message}${cors ? `; console: ${cors}` : ''}`;
        }
        return e ? `not reached: ${e.step} failed before` : 'not reached';
    };
    await rep.check('allowed origin: initialize', async () => {
        assert(a.result.error?.step !== 'page', a.result.error?.message);
        assert(a.result.origin === originA, `page origin ${a.result.origin}, expected ${originA}`);
        const i = s.initialize;
        assert(i, why('initialize'));
        assert(i.status === 200, `status ${i.status}, body ${JSON.stringify(i.body)?.slice(0, 200)}`);
        const pv = i.body?.result?.protocolVersion;
        assert(pv === PROTOCOL_VERSION, `protocolVersion ${pv}: ${JSON.stringify(i.body)?.slice(0, 200)}`);
        return `status 200, protocol ${pv}, server ${i.body.result.serverInfo?.name}`;
    });
    await rep.check('allowed origin: session id readable', async () => {
        const i = s.initialize;
        assert(i, why('initialize'));
        assert(
            i.sessionId,
            `response.headers.get('mcp-session-id') is null (needs Access-Control-Expose-Headers); headers visible to JS: ${i.headers.join(', ')}`
        );
        return `headers visible to JS: ${i.headers.join(', ')}`;
    });
    await rep.check('allowed origin: notifications/initialized', async () => {
        assert(s.initialized, why('initialized'));
        assert(s.initialized.status === 202, `status ${s.initialized.status}: ${s.initialized.text}`);
        return 'status 202';
    });
    await rep.check('allowed origin: tools/call', async () => {
        assert(s.call, why('tools/call'));
        assert(s.call.status === 200, `status ${s.call.status}: ${JSON.stringify(s.call.body)?.slice(0, 200)}`);
        const content = s.call.body?.result?.content;
        const text = Array.isArray(content) ? content.find(c => c.type === 'text')?.text : undefined;
        assert(text === ECHO_MESSAGE, `echo returned ${JSON.stringify(s.call.body)?.slice(0, 200)}`);
        return 'echo with mcp-session-id and mcp-protocol-version (preflighted)';
    });
    await rep.check('allowed origin: DELETE', async () => {
        assert(s.delete, why('DELETE'));
        assert(s.delete.status === 200, `status ${s.delete.status}: ${s.delete.text}`);
        return 'status 200';
    });

    // ---- origin B: the first fetch must be refused ----
    await rep.check('foreign origin refused', async () => {
        const b = await runPage(originB);
        assert(b.result.origin === originB, `page origin ${b.result.origin}, expected ${originB}`);
        const e = b.result.error;
        assert(
            e,
            `the browser let the foreign page through: ${JSON.stringify(b.result.steps).slice(0, 300)}`
        );
        assert(e.step === 'initialize', `the first fetch succeeded; ${e.step} failed: ${e.name}: ${e.message}`);
        assert(e.name === 'TypeError', `fetch rejected with ${e.name}: ${e.message}, expected TypeError`);
        const cors = b.consoleLines.filter(l => /CORS|Access-Control|blocked/i.test(l)).slice(0, 1).join('');
        return `${e.name}: ${e.message}${cors ? `; console: ${cors.slice(0, 300)}` : ''}`;
    });

    // ---- on the wire, from Node ----
    const requestedHeaders = [
        'authorization',
        'content-type',
        'mcp-session-id',
        'mcp-protocol-version',
        'last-event-id',
        'mcp-method',
        'mcp-name'
    ];
    await rep.check('wire: preflight from allowed origin', async () => {
        const res = await fetch(url, {
            method: 'OPTIONS',
            headers: {
                origin: originA,
                'access-control-request-method': 'POST',
                'access-control-request-headers': requestedHeaders.join(',')
            }
        });
        await res.arrayBuffer();
        const dump = headerDump(res, CORS_HEADERS);
        assert(res.status === 204 || res.status === 200, `status ${res.status}; ${dump}`);
        assert(res.headers.get('access-control-allow-origin') === originA, `Access-Control-Allow-Origin is not ${originA}; ${dump}`);
        const methods = listOf(res.headers.get('access-control-allow-methods'));
        const missingMethods = ['get', 'post', 'delete'].filter(m => !methods.includes(m));
        assert(missingMethods.length === 0, `Access-Control-Allow-Methods lacks ${missingMethods.join(', ')}; ${dump}`);
        const allowed = listOf(res.headers.get('access-control-allow-headers'));
        // "*" covers everything but Authorization (Fetch standard), so it is not enough here.
        const missingHeaders = requestedHeaders.filter(h => !allowed.includes(h) && !(h !== 'authorization' && allowed.includes('*')));
        assert(missingHeaders.length === 0, `Access-Control-Allow-Headers lacks ${missingHeaders.join(', ')}; ${dump}`);
        return `status ${res.status}, max-age ${res.headers.get('access-control-max-age') ?? '(none)'}, vary ${res.headers.get('vary') ?? '(none)'}`;
    });
    await rep.check('wire: POST from allowed origin', async () => {
        const res = await fetch(url, {
            method: 'POST',
            headers: { origin: originA, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: JSON.stringify({
                jsonrpc: '2.0',
                id: 1,
                method: 'initialize',
                params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'mcpd-browser-wire', version: '0.0.0' } }
            })
        });
        await res.arrayBuffer();
        const sid = res.headers.get('mcp-session-id');
        if (sid) {
            // Leave no session behind.
            await fetch(url, { method: 'DELETE', headers: { origin: originA, 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL_VERSION } })
                .then(r => r.arrayBuffer())
                .catch(() => {});
        }
        const dump = headerDump(res, CORS_HEADERS);
        assert(res.status === 200, `status ${res.status}; ${dump}`);
        assert(res.headers.get('access-control-allow-origin') === originA, `Access-Control-Allow-Origin is not ${originA}; ${dump}`);
        const exposed = listOf(res.headers.get('access-control-expose-headers'));
        const missing = ['mcp-session-id', 'www-authenticate'].filter(h => !exposed.includes(h));
        assert(missing.length === 0, `Access-Control-Expose-Headers lacks ${missing.join(', ')}; ${dump}`);
        assert(listOf(res.headers.get('vary')).includes('origin'), `Vary lacks Origin; ${dump}`);
        return `expose: ${res.headers.get('access-control-expose-headers')}`;
    });
    await rep.check('wire: POST from foreign origin is 403', async () => {
        const res = await fetch(url, {
            method: 'POST',
            headers: { origin: originB, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: JSON.stringify({
                jsonrpc: '2.0',
                id: 1,
                method: 'initialize',
                params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'mcpd-browser-wire', version: '0.0.0' } }
            })
        });
        const body = await res.text();
        const dump = headerDump(res, CORS_HEADERS);
        assert(res.status === 403, `status ${res.status}; ${dump}; body ${body.slice(0, 200)}`);
        assert(!res.headers.get('access-control-allow-origin'), `403 but Access-Control-Allow-Origin is set; ${dump}`);
        assert(!res.headers.get('mcp-session-id'), 'a session id was issued to the foreign origin');
        return 'status 403, no Access-Control-Allow-Origin';
    });
    await rep.check('wire: preflight from foreign origin is 403', async () => {
        const res = await fetch(url, {
            method: 'OPTIONS',
            headers: {
                origin: originB,
                'access-control-request-method': 'POST',
                'access-control-request-headers': 'content-type'
            }
        });
        await res.arrayBuffer();
        const dump = headerDump(res, CORS_HEADERS);
        assert(res.status === 403, `status ${res.status}; ${dump}`);
        assert(!res.headers.get('access-control-allow-origin'), `403 but Access-Control-Allow-Origin is set; ${dump}`);
        return 'status 403, no Access-Control-Allow-Origin';
    });
    const errTail = mcpd.stderr().trim();
    if (errTail) console.error(`mcpd stderr (last 1000 chars):\n${errTail.slice(-1000)}`);
} catch (e) {
    rep.fail('run', errText(e));
}
clearTimeout(globalTimer);
await finish();
