// TypeScript SDK echo server: one `echo` tool ({message} -> text), Streamable
// HTTP, stateful (a transport per session, sessionIdGenerator), node:http.
// Usage: node server.mjs PORT  (listens on 127.0.0.1:PORT/mcp)
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const port = Number(process.argv[2] ?? 8092);
const transports = new Map();

function newServer() {
  const server = new Server({ name: "ts-sdk-echo", version: "0.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{
      name: "echo",
      description: "Echo the message back",
      inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    if (req.params.name !== "echo") throw new Error("unknown tool");
    return { content: [{ type: "text", text: String(req.params.arguments?.message ?? "") }] };
  });
  return server;
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      try { resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined); }
      catch (e) { reject(e); }
    });
    req.on("error", reject);
  });
}

const http = createServer(async (req, res) => {
  try {
    if (!req.url.startsWith("/mcp")) { res.writeHead(404).end(); return; }
    const sid = req.headers["mcp-session-id"];
    if (req.method === "POST") {
      const body = await readJson(req);
      let transport = sid ? transports.get(sid) : undefined;
      if (!transport && !sid && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => { transports.set(id, transport); },
        });
        transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
        await newServer().connect(transport);
      }
      if (!transport) {
        res.writeHead(sid ? 404 : 400, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no valid session" } }));
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    const transport = sid ? transports.get(sid) : undefined;
    if (!transport) { res.writeHead(sid ? 404 : 400).end(); return; }
    await transport.handleRequest(req, res);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});
http.keepAliveTimeout = 60_000;
http.listen(port, "127.0.0.1", () => console.log(`ts-sdk listening on http://127.0.0.1:${port}/mcp`));
