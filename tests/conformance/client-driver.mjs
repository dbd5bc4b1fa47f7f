// The conformance suite's *client* scenarios against mcpd's upstream client: the suite runs this
// script as its client command (the scenario's server URL as the last argument); it starts mcpd as
// a gateway whose one upstream is that server (`/mcp/fx`, `protocol` by the scenario's revision),
// then calls through mcpd as a client would, so what the scenario checks is what mcpd sent it.
//
//   node client-driver.mjs URL        (run by tests/conformance/gateway-client.sh; MCPD_BIN set)
//
// Environment: MCPD_BIN (the mcpd binary), MCP_CONFORMANCE_SCENARIO, _PROTOCOL_VERSION and
// _CONTEXT (set by the suite), DRIVER_LOG_DIR (where mcpd's output goes; default a temp dir).
// Exit 0 when the scenario's flow went through; the suite's checks decide the verdict.
// No dependencies: Node's fetch.

import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const target = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const version = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? "2025-11-25";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
const modern = version === "2026-07-28";
const V2026 = "2026-07-28";
const logDir = process.env.DRIVER_LOG_DIR ?? mkdtempSync(join(tmpdir(), "mcpd-client-driver-"));

const fail = (msg) => {
  console.error(`driver: ${msg}`);
  stop();
  process.exit(1);
};

// ---- mcpd as the gateway -------------------------------------------------------------------
let mcpd;
function stop() {
  if (mcpd && mcpd.exitCode === null) mcpd.kill("SIGKILL");
}
process.on("SIGTERM", () => {
  stop();
  process.exit(1);
});

async function startGateway() {
  const toml = join(logDir, `${scenario.replaceAll("/", "_")}-${version}.toml`);
  writeFileSync(
    toml,
    `[server]\ntoolset = "none"\n[[upstream]]\nid = "fx"\nurl = "${target}"\n` +
      `protocol = "${modern ? "stateless" : "session"}"\naggregate = false\n` +
      credentials(),
  );
  const err = openSync(join(logDir, `${scenario.replaceAll("/", "_")}-${version}.mcpd.log`), "a");
  mcpd = spawn(process.env.MCPD_BIN, ["--config", toml, "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", err],
    env: { ...process.env, MCPD_LOG_LEVEL: process.env.MCPD_LOG_LEVEL ?? "info" },
  });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("mcpd did not start within 15 s")), 15000);
    mcpd.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/mcpd listening on (\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    mcpd.on("exit", (code) => reject(new Error(`mcpd exited (${code})`)));
  });
  mcpd.stdout.resume();
  return `${url}/fx`;
}

// mcpd's credentials towards the upstream, as the client auth scenarios give them (their token
// endpoint is found from the upstream's metadata).
function credentials() {
  const id = context.client_id;
  if (scenario === "auth/client-credentials-basic") {
    return `[upstream.credentials]\ntype = "client_credentials"\nclient_id = "${id}"\nclient_secret = "${context.client_secret}"\n`;
  }
  if (scenario === "auth/client-credentials-jwt") {
    const pem = join(logDir, `client-credentials-jwt-${version}.pem`);
    writeFileSync(pem, `${context.private_key_pem}\n`);
    return (
      `[upstream.credentials]\ntype = "client_credentials"\nclient_id = "${id}"\n` +
      `private_key_file = "${pem}"\nsigning_alg = "${context.signing_algorithm ?? "ES256"}"\n`
    );
  }
  return "";
}

// ---- reading a response: JSON or SSE ---------------------------------------------------------
async function* messages(res) {
  const type = res.headers.get("content-type") ?? "";
  if (type.includes("application/json")) {
    const text = await res.text();
    if (text) yield JSON.parse(text);
    return;
  }
  if (!type.includes("text/event-stream")) return;
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = event
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

/// What a client answers to the server's questions: accept, with each field's schema default
/// (SEP-1034: a client pre-fills defaults) or a value of its type.
function answer(req) {
  if (req.method === "elicitation/create") {
    const props = req.params?.requestedSchema?.properties ?? {};
    const content = {};
    for (const [k, s] of Object.entries(props)) {
      if (s.default !== undefined) content[k] = s.default;
      else if (s.type === "boolean") content[k] = true;
      else if (s.type === "number" || s.type === "integer") content[k] = 1;
      else if (Array.isArray(s.enum)) content[k] = s.enum[0];
      else content[k] = "yes";
    }
    return { action: "accept", content };
  }
  if (req.method === "sampling/createMessage") {
    return { role: "assistant", content: { type: "text", text: "ok" }, model: "driver" };
  }
  if (req.method === "roots/list") return { roots: [] };
  return {};
}

// ---- a session-era client ---------------------------------------------------------------------
class SessionClient {
  constructor(url) {
    this.url = url;
    this.id = 0;
    this.session = undefined;
    this.version = undefined;
  }
  headers() {
    const h = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (this.session) h["mcp-session-id"] = this.session;
    if (this.version) h["mcp-protocol-version"] = this.version;
    return h;
  }
  async post(body) {
    return fetch(this.url, { method: "POST", headers: this.headers(), body: JSON.stringify(body) });
  }
  async initialize() {
    const res = await this.post({
      jsonrpc: "2.0", id: 0, method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
        clientInfo: { name: "mcpd-conformance-driver", version: "1.0.0" },
      },
    });
    this.session = res.headers.get("mcp-session-id") ?? undefined;
    let init;
    for await (const m of messages(res)) if (m.id === 0) init = m;
    if (!init?.result) fail(`initialize: ${JSON.stringify(init)}`);
    this.version = init.result.protocolVersion;
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    return init.result;
  }
  /// A request; the server's questions on its stream are answered by `onAsk` (default `answer`).
  async request(method, params, onAsk = answer) {
    const id = ++this.id;
    const res = await this.post({ jsonrpc: "2.0", id, method, params });
    for await (const m of messages(res)) {
      if (m.method && m.id !== undefined) {
        const result = await onAsk(m);
        await this.post({ jsonrpc: "2.0", id: m.id, result });
      } else if (m.id === id) {
        return m;
      }
    }
    fail(`${method}: the stream ended without an answer (HTTP ${res.status})`);
  }
}

// ---- a 2026-07-28 client ----------------------------------------------------------------------
class StatelessClient {
  constructor(url) {
    this.url = url;
    this.id = 0;
  }
  async request(method, params = {}, onAsk = answer) {
    let p = { ...params };
    for (let round = 0; round < 10; round++) {
      const id = ++this.id;
      const body = {
        jsonrpc: "2.0", id, method,
        params: {
          ...p,
          _meta: {
            ...(p._meta ?? {}),
            "io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} }, sampling: {}, roots: {} },
            "io.modelcontextprotocol/clientInfo": { name: "mcpd-conformance-driver", version: "1.0.0" },
          },
        },
      };
      const headers = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": V2026,
        "mcp-method": method,
      };
      const name = params.name ?? params.uri;
      if (typeof name === "string") headers["mcp-name"] = name;
      const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(body) });
      let answerMsg;
      for await (const m of messages(res)) if (m.id === id) answerMsg = m;
      if (!answerMsg) fail(`${method}: no answer (HTTP ${res.status})`);
      const r = answerMsg.result;
      if (r?.resultType !== "input_required") return answerMsg;
      const responses = {};
      for (const [k, q] of Object.entries(r.inputRequests ?? {})) responses[k] = await onAsk(q);
      p = { ...params, inputResponses: responses };
      if (r.requestState !== undefined) p.requestState = r.requestState;
    }
    fail(`${method}: more than 10 rounds`);
  }
}

const client = async () => {
  if (modern) return new StatelessClient(base);
  const c = new SessionClient(base);
  await c.initialize();
  return c;
};

/// Retries `f` until it answers without an error, for `ms` (mcpd finds its upstream after start).
async function eventually(f, ms = 10000) {
  const until = Date.now() + ms;
  for (;;) {
    const m = await f();
    if (!m.error || Date.now() > until) return m;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const ok = (m, what) => {
  if (m?.error) fail(`${what}: ${JSON.stringify(m.error)}`);
  return m.result;
};

// ---- the scenarios -----------------------------------------------------------------------------
const scenarios = {
  async initialize() {
    const c = await client();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
  },
  async tools_call() {
    const c = await client();
    ok(await eventually(() => c.request("tools/call", { name: "add_numbers", arguments: { a: 2, b: 3 } })), "add_numbers");
  },
  async "sse-retry"() {
    const c = await client();
    ok(await c.request("tools/call", { name: "test_reconnection", arguments: {} }), "test_reconnection");
  },
  async "request-metadata"() {
    const c = await client();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
    ok(await c.request("tools/call", { name: "any", arguments: {} }), "tools/call");
  },
  async "sep-2322-client-request-state"() {
    // A session-era client: mcpd itself runs the upstream's rounds.
    const c = new SessionClient(base);
    await c.initialize();
    // While echo_state waits for its answer, an unrelated call runs.
    ok(
      await c.request("tools/call", { name: "test_mrtr_echo_state", arguments: {} }, async (q) => {
        ok(await c.request("tools/call", { name: "test_mrtr_unrelated", arguments: {} }), "unrelated");
        return answer(q);
      }),
      "echo_state",
    );
    ok(await c.request("tools/call", { name: "test_mrtr_no_state", arguments: {} }), "no_state");
    ok(await c.request("tools/call", { name: "test_mrtr_no_result_type", arguments: {} }), "no_result_type");
  },
  async "http-standard-headers"() {
    const c = await client();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
    await c.request("tools/call", { name: "test_headers", arguments: {} });
    await c.request("tools/call", { name: "my-hyphenated-tool", arguments: {} });
    ok(await c.request("resources/list", {}), "resources/list");
    await c.request("resources/read", { uri: "file:///path/to/file%20name.txt" });
    ok(await c.request("prompts/list", {}), "prompts/list");
    await c.request("prompts/get", { name: "test_prompt", arguments: {} });
  },
  async "http-custom-headers"() {
    // A session-era client: mcpd derives the upstream's Mcp-Param-* headers itself.
    const c = new SessionClient(base);
    await c.initialize();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
    for (const call of context.toolCalls ?? []) {
      ok(await c.request("tools/call", { name: call.name, arguments: call.arguments }), call.name);
    }
  },
  async "json-schema-2020-12-preservation"() {
    const c = await client();
    const tools = ok(await eventually(() => c.request("tools/list", {})), "tools/list").tools;
    const focal = tools.find((t) => t.name === "json_schema_2020_12_tool");
    if (!focal) fail(`no json_schema_2020_12_tool in ${JSON.stringify(tools.map((t) => t.name))}`);
    ok(await c.request("tools/call", { name: "json_schema_echo", arguments: { schema: focal.inputSchema } }), "echo");
  },
  async "auth/client-credentials-jwt"() {
    const c = await client();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
  },
  async "auth/client-credentials-basic"() {
    const c = await client();
    ok(await eventually(() => c.request("tools/list", {})), "tools/list");
  },
  async "elicitation-sep1034-client-defaults"() {
    const c = await client();
    ok(await c.request("tools/call", { name: "test_client_elicitation_defaults", arguments: {} }), "defaults");
  },
};

const run = scenarios[scenario];
if (!run) fail(`no flow for scenario ${scenario}`);
let base;
try {
  base = await startGateway();
  await run();
} catch (e) {
  fail(`${scenario}: ${e?.stack ?? e}`);
}
stop();
process.exit(0);
