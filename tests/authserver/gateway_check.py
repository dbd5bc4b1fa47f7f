"""#34 item 3 against the real authorization server: mcpd as a gateway
presents its own credentials to its upstreams. A client with a token for
the gateway calls three upstream tools through it; the upstream (another
mcpd, which accepts only tokens whose audience is its own resource) logs
who called:

- `cc__echo`: mcpd's own client-credentials token (private_key_jwt), found
  from the upstream's protected-resource metadata: the upstream sees
  mcpd's client, not the caller;
- `tx__echo` (session era, `share = "session"`: the upstream binds its
  sessions to their principal) and `tx26__echo` (2026-07-28): the caller's
  token exchanged (RFC 8693) for the upstream's audience: the upstream sees
  the caller;
- `echo` on upstream `bad` (`server_id`): a wrong client secret: the call
  fails, saying the authorization server refused the client.

Prints `PASS gateway/NAME` or `FAIL gateway/NAME: why` lines.
Environment: AS_ISSUER, GW_URL, UP_RESOURCE, UP_LOG (the upstream's stderr).
"""

import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

ISSUER = os.environ["AS_ISSUER"].rstrip("/")
GW = os.environ["GW_URL"]
UP_LOG = os.environ["UP_LOG"]
failed = 0
# mcpd's own token; the caller's exchanged, on a session of its own (session era) and per call (2026-07-28).
UPS = ["cc", "tx", "tx26"]


def check(name, ok, why=""):
    global failed
    if ok:
        print(f"PASS gateway/{name}", flush=True)
    else:
        failed += 1
        print(f"FAIL gateway/{name}: {why}", flush=True)


def token():
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "resource": GW, "scope": "mcp:tools"})
    basic = base64.b64encode(b"mcp-cc-client:mcp-cc-client-secret").decode()
    req = urllib.request.Request(f"{ISSUER}/token", data=body.encode(),
                                 headers={"authorization": f"Basic {basic}",
                                          "content-type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["access_token"]


class Session:
    def __init__(self, bearer):
        self.bearer, self.sid, self.n = bearer, None, 0

    def post(self, method, params=None, notify=False, server_id=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if server_id:
            msg["server_id"] = server_id
        if params is not None:
            msg["params"] = params
        if not notify:
            self.n += 1
            msg["id"] = self.n
        headers = {"authorization": f"Bearer {self.bearer}", "content-type": "application/json",
                   "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
        if self.sid:
            headers["mcp-session-id"] = self.sid
        req = urllib.request.Request(GW, data=json.dumps(msg).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            self.sid = r.headers.get("mcp-session-id") or self.sid
            text = r.read().decode()
        if notify or not text:
            return None
        if text.startswith("{"):
            return json.loads(text)
        # An SSE answer: its last data line holds the response.
        datas = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        return json.loads(datas[-1])


def main():
    s = Session(token())
    s.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "gateway-check", "version": "1"}})
    s.post("notifications/initialized", notify=True)
    names = []
    for _ in range(100):
        names = [t["name"] for t in s.post("tools/list", {})["result"]["tools"]]
        if all(f"{u}__echo" in names for u in UPS):
            break
        time.sleep(0.2)
    check("aggregated", all(f"{u}__echo" in names for u in UPS),
          f"the upstreams' tools never showed up (their connections need the credentials): {names}")
    for up in UPS:
        r = s.post("tools/call", {"name": f"{up}__echo", "arguments": {"message": f"via {up}"}})
        text = (r.get("result") or {}).get("content", [{}])[0].get("text")
        check(f"{up}:call", text == f"via {up}", json.dumps(r)[:400])
    r = s.post("tools/call", {"name": "echo", "arguments": {"message": "x"}}, server_id="bad")
    err = json.dumps(r)
    check("bad-secret:refused", "error" in r and "refused" in err and "invalid_client" in err, err[:400])
    time.sleep(0.5)
    log = open(UP_LOG, encoding="utf-8", errors="replace").read()
    audit = [l for l in log.splitlines() if "tool call" in l and "echo" in l]
    cc = [l for l in audit if "mcp-cc-jwt-client" in l]
    tx = [l for l in audit if "mcp-cc-client" in l and "mcp-cc-jwt-client" not in l]
    check("cc:upstream-saw-mcpd", len(cc) == 1, f"audit lines: {audit}")
    check("tx:upstream-saw-the-caller", len(tx) == 2, f"audit lines: {audit}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
