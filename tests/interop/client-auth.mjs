// Auth interop check: the official TypeScript MCP SDK v1 client (@modelcontextprotocol/sdk, pinned in
// package.json / package-lock.json, StreamableHTTPClientTransport) against an mcpd that requires
// bearer tokens, over HTTPS. The caller (a cargo test) mints the tokens, makes the TLS certificate and
// starts mcpd; this script only connects.
//
//   MCP_URL=https://127.0.0.1:PORT/mcp MCP_TOKEN=<valid token> \
//   [MCP_TOKEN_NO_SCOPE=<valid token without some scope> MCP_FORBIDDEN_TOOL=<tool that token may not call>
//    MCP_FORBIDDEN_TOOL_ARGS='{"message":"x"}'] \
//   NODE_EXTRA_CA_CERTS=/path/to/ca.pem node client-auth.mjs
//
// (run beside the installed node_modules, as the other clients: see run.sh / NOTES.md). The SDK is given
// no authProvider, only `requestInit: { headers: { Authorization: 'Bearer …' } }`, so a 401/403 comes
// back as the transport's StreamableHTTPError (code = HTTP status); each check prints what the SDK
// surfaced.
// Checks (prefix "auth:"):
//   no_token_401            connect() without a token fails, and the error shows HTTP 401
//   no_token_www_authenticate  raw POST without a token: 401, WWW-Authenticate: Bearer …resource_metadata="…"
//   bad_token_401           connect() with a garbage token fails with 401; raw: error="invalid_token"
//   connect, tools_list (echo present), echo, countdown_progress (>= 1 progress notification),
//   resources_read (first resource), prompts_get (first prompt; required arguments filled with "x"),
//   terminate (DELETE through terminateSession(), then close())
//   no_scope_connect, no_scope_tools_list (MCP_FORBIDDEN_TOOL not listed),
//   no_scope_call_forbidden (callTool(MCP_FORBIDDEN_TOOL) fails, error mentions 403 or insufficient_scope)
//     - only when MCP_TOKEN_NO_SCOPE is set; the last two only when MCP_FORBIDDEN_TOOL is set too.
// Prints "PASS auth:<name>" / "FAIL auth:<name>: <reason>" lines, then "auth: N passed, M failed";
// exits 0 only when nothing failed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assert, errText, firstText, makeReporter, withTimeout } from './common.mjs';

const GLOBAL_TIMEOUT_MS = 90000;
const url = process.env.MCP_URL || process.argv[2];
const token = process.env.MCP_TOKEN;
const noScopeToken = process.env.MCP_TOKEN_NO_SCOPE;
const forbiddenTool = process.env.MCP_FORBIDDEN_TOOL;
// Arguments for the forbidden call (JSON), in case the server validates them before the scope.
const forbiddenArgs = JSON.parse(process.env.MCP_FORBIDDEN_TOOL_ARGS || '{}');
if (!url || !token) {
    console.error(
        'usage: MCP_URL=https://127.0.0.1:PORT/mcp MCP_TOKEN=... [MCP_TOKEN_NO_SCOPE=... MCP_FORBIDDEN_TOOL=name] [NODE_EXTRA_CA_CERTS=ca.pem] node client-auth.mjs'
    );
    process.exit(2);
}

const rep = makeReporter('auth:');
const backgroundErrors = [];
process.on('unhandledRejection', e => backgroundErrors.push(`unhandledRejection: ${errText(e)}`));

function done() {
    if (backgroundErrors.length > 0) {
        console.error('background errors (informational):');
        for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
    }
    console.log(`auth: ${rep.passed} passed, ${rep.failed} failed`);
    process.exit(rep.failed === 0 && rep.passed > 0 ? 0 : 1);
}
const globalTimer = setTimeout(() => {
    rep.fail('run', `global timeout: not finished after ${GLOBAL_TIMEOUT_MS / 1000} s`);
    done();
}, GLOBAL_TIMEOUT_MS);

// What the SDK surfaced, in one line: class, message, and the HTTP status the transport put in `code`.
function surfaced(e) {
    const name = e?.constructor?.name ?? typeof e;
    const code = e?.code !== undefined ? ` code=${e.code}` : '';
    const cause = e?.cause ? ` cause=${errText(e.cause)}` : '';
    return `${name}${code}: ${e?.message ?? String(e)}${cause}`;
}

function makeClient(bearer) {
    const opts = bearer ? { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } } : {};
    const transport = new StreamableHTTPClientTransport(new URL(url), opts);
    const client = new Client({ name: 'mcpd-interop-auth', version: '0.0.0' }, { capabilities: {} });
    client.onerror = e => backgroundErrors.push(errText(e));
    return { client, transport };
}

async function closeQuietly(client) {
    try {
        await withTimeout(client.close(), 3000);
    } catch {
        // ignore
    }
}

// A connect that must fail with HTTP `status`; returns what the SDK surfaced.
async function expectConnectFails(bearer, status) {
    const { client, transport } = makeClient(bearer);
    let error;
    try {
        await client.connect(transport);
    } catch (e) {
        error = e;
    }
    await closeQuietly(client);
    assert(error, `connect() succeeded (server ${JSON.stringify(client.getServerVersion())}); expected HTTP ${status}`);
    const text = surfaced(error);
    assert(error.code === status || text.includes(String(status)), `the error does not show HTTP ${status}: ${text}`);
    return `SDK surfaced ${text.slice(0, 300)}`;
}

// A raw initialize POST (no SDK), for the headers the SDK does not surface.
async function rawInitialize(bearer) {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcpd-interop-auth-raw', version: '0.0.0' } }
        })
    }).catch(e => {
        throw new Error(`raw POST failed: ${surfaced(e)}`);
    });
    const body = await res.text();
    return { status: res.status, wwwAuthenticate: res.headers.get('www-authenticate'), sessionId: res.headers.get('mcp-session-id'), body };
}

// ---- (a) no token, bad token ------------------------------------------------------------------
await rep.check('no_token_401', () => expectConnectFails(undefined, 401));
await rep.check('no_token_www_authenticate', async () => {
    const r = await rawInitialize(undefined);
    assert(r.status === 401, `status ${r.status}: ${r.body.slice(0, 200)}`);
    assert(!r.sessionId, 'a session id was issued without a token');
    const w = r.wwwAuthenticate ?? '';
    assert(/^Bearer\b/i.test(w), `WWW-Authenticate is not a Bearer challenge: ${JSON.stringify(r.wwwAuthenticate)}`);
    const m = w.match(/resource_metadata="([^"]+)"/);
    assert(m, `WWW-Authenticate has no resource_metadata: ${w}`);
    const meta = new URL(m[1]);
    const expected = new URL(url);
    assert(meta.origin === expected.origin, `resource_metadata ${m[1]} is not on ${expected.origin}`);
    assert(meta.pathname.startsWith('/.well-known/oauth-protected-resource'), `resource_metadata path ${meta.pathname}`);
    return `WWW-Authenticate: ${w}`;
});
await rep.check('bad_token_401', async () => {
    const sdk = await expectConnectFails('not-a-valid-token', 401);
    const r = await rawInitialize('not-a-valid-token');
    assert(r.status === 401, `raw: status ${r.status}`);
    assert(/error="invalid_token"/.test(r.wwwAuthenticate ?? ''), `raw: WWW-Authenticate lacks error="invalid_token": ${r.wwwAuthenticate}`);
    return `${sdk}; WWW-Authenticate: ${r.wwwAuthenticate}`;
});

// ---- (b) a valid token: the ordinary flow ------------------------------------------------------
{
    const { client, transport } = makeClient(token);
    let connected = false;
    await rep.check('connect', async () => {
        await client.connect(transport);
        connected = true;
        const info = client.getServerVersion();
        return `server ${info?.name} ${info?.version ?? ''}, protocol ${transport.protocolVersion}, session ${transport.sessionId ? 'yes' : 'none'}`;
    });
    const connectedCheck = async (name, fn) => {
        if (!connected) return rep.fail(name, 'skipped: connect failed');
        return rep.check(name, fn);
    };
    await connectedCheck('tools_list', async () => {
        const { tools } = await client.listTools();
        const names = tools.map(t => t.name);
        assert(names.includes('echo'), `echo not listed: ${names.join(', ')}`);
        return `${names.length} tools: ${names.join(', ')}`;
    });
    await connectedCheck('echo', async () => {
        const message = 'hello over https with a bearer token';
        const r = await client.callTool({ name: 'echo', arguments: { message } });
        assert(!r.isError, `isError result: ${JSON.stringify(r).slice(0, 200)}`);
        const text = firstText(r);
        assert(text === message, `echo returned ${JSON.stringify(text)}`);
    });
    await connectedCheck('countdown_progress', async () => {
        const progress = [];
        const r = await client.callTool({ name: 'countdown', arguments: { steps: 2, interval_ms: 50 } }, undefined, {
            onprogress: p => progress.push(p)
        });
        assert(!r.isError, `isError result: ${JSON.stringify(r).slice(0, 200)}`);
        // SDK 1.x may drop the last progress notification (it can arrive just before the result and
        // the handler is gone by the time it is dispatched; see NOTES.md), so >= 1.
        assert(progress.length >= 1, `no progress notification reached onprogress; result ${JSON.stringify(r).slice(0, 200)}`);
        return `${progress.length} progress: ${progress.map(p => `${p.progress}/${p.total ?? '?'}`).join(' ')}`;
    });
    await connectedCheck('resources_read', async () => {
        const { resources } = await client.listResources();
        assert(resources.length > 0, 'resources/list is empty');
        const uri = resources[0].uri;
        const r = await client.readResource({ uri });
        assert(Array.isArray(r.contents) && r.contents.length > 0, `no contents: ${JSON.stringify(r).slice(0, 200)}`);
        return `${resources.length} resources; read ${uri}`;
    });
    await connectedCheck('prompts_get', async () => {
        const { prompts } = await client.listPrompts();
        assert(prompts.length > 0, 'prompts/list is empty');
        const p = prompts[0];
        const args = Object.fromEntries((p.arguments ?? []).filter(a => a.required).map(a => [a.name, 'x']));
        const r = await client.getPrompt({ name: p.name, arguments: args });
        assert(Array.isArray(r.messages) && r.messages.length > 0, `no messages: ${JSON.stringify(r).slice(0, 200)}`);
        return `${prompts.length} prompts; got ${p.name}(${Object.keys(args).join(', ')}) with ${r.messages.length} messages`;
    });
    await connectedCheck('terminate', async () => {
        const sid = transport.sessionId;
        await transport.terminateSession();
        assert(transport.sessionId === undefined, 'terminateSession() kept the session id');
        await withTimeout(client.close(), 3000, 'client.close()');
        return sid ? 'DELETE accepted, closed' : 'no session id (nothing to DELETE), closed';
    });
    if (!connected) await closeQuietly(client);
}

// ---- (c) a valid token without the scope a tool needs -----------------------------------------
if (noScopeToken) {
    const { client, transport } = makeClient(noScopeToken);
    let connected = false;
    await rep.check('no_scope_connect', async () => {
        await client.connect(transport);
        connected = true;
        return `protocol ${transport.protocolVersion}`;
    });
    if (forbiddenTool) {
        const connectedCheck = async (name, fn) => {
            if (!connected) return rep.fail(name, 'skipped: no_scope_connect failed');
            return rep.check(name, fn);
        };
        await connectedCheck('no_scope_tools_list', async () => {
            const { tools } = await client.listTools();
            const names = tools.map(t => t.name);
            assert(!names.includes(forbiddenTool), `${forbiddenTool} is listed for a token without its scope: ${names.join(', ')}`);
            return `${names.length} tools, ${forbiddenTool} not among them`;
        });
        await connectedCheck('no_scope_call_forbidden', async () => {
            let result;
            let error;
            try {
                result = await client.callTool({ name: forbiddenTool, arguments: forbiddenArgs });
            } catch (e) {
                error = e;
            }
            assert(error, `callTool(${forbiddenTool}) did not fail: ${String(JSON.stringify(result)).slice(0, 300)}`);
            const text = surfaced(error);
            assert(error.code === 403 || /\b403\b|insufficient_scope/.test(text), `the error mentions neither 403 nor insufficient_scope: ${text}`);
            return `SDK surfaced ${text.slice(0, 300)}`;
        });
    } else {
        console.error('MCP_FORBIDDEN_TOOL not set: the forbidden-tool checks are skipped');
    }
    try {
        await withTimeout(transport.terminateSession(), 3000);
    } catch {
        // ignore
    }
    await closeQuietly(client);
} else {
    console.error('MCP_TOKEN_NO_SCOPE not set: the scope checks are skipped');
}

clearTimeout(globalTimer);
done();
