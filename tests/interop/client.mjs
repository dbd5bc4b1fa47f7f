// Interop check: the official TypeScript MCP SDK v1 client (@modelcontextprotocol/sdk,
// pinned in package.json / package-lock.json) against mcpd's "demo" tool set. This SDK
// line speaks the session era only (initialize handshake, 2025-11-25).
//
// Usage: node client.mjs http://127.0.0.1:PORT/mcp
// Prints one line per check, "PASS ts:<name>" or "FAIL ts:<name>: <reason>",
// and exits 0 only when every check passed. run.sh counts the lines.
// The checks themselves live in session-flows.mjs (shared with client2026.mjs --era legacy).
//
// Plain ESM JavaScript (no compile step); needs Node 20+.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ResourceUpdatedNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';
import { errText, makeReporter, tapTransport, withTimeout } from './common.mjs';
import { runSessionFlows } from './session-flows.mjs';

const url = process.argv[2];
if (!url) {
    console.error('usage: node client.mjs <mcp endpoint url>');
    process.exit(2);
}

const rep = makeReporter('ts:');

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

// Wire taps, installed after connect (once Protocol has installed its own onmessage).
const sent = [];
const received = [];

await runSessionFlows({
    rep,
    url,
    client,
    transport,
    connect: async () => {
        await client.connect(transport);
        tapTransport(transport, sent, received);
    },
    // v1 signature: callTool(params, resultSchema?, options?)
    callTool: (params, options) => client.callTool(params, undefined, options),
    sent,
    received,
    elicitations,
    samplings,
    resourceUpdates
});

try {
    await withTimeout(client.close(), 3000);
} catch {
    // ignore
}
if (backgroundErrors.length > 0) {
    // Informational only: SSE reconnect chatter after DELETE is expected.
    console.error(`${rep.prefix} background errors (informational):`);
    for (const e of backgroundErrors.slice(0, 10)) console.error(`  ${e}`);
}
process.exit(rep.failed === 0 ? 0 : 1);
