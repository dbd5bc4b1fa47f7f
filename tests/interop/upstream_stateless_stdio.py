"""A 2026-07-28 upstream over stdio whose tool counts its runs and asks a question, for the gateway's
exactly-once matrix (crates/mcpd-server/tests/http/matrix.rs). No SDK: the revision's wire by hand
(no session, no `initialize`: `server/discover`; the question as an `InputRequiredResult` with a
`requestState`, answered by a retry with `inputResponses`).

    COUNT_FILE=/tmp/runs python3 upstream_stateless_stdio.py

One JSON-RPC message per line on stdin and stdout. Serves:
  server/discover      supportedVersions ["2026-07-28"], tools capability
  tools/list           transfer(amount: integer)
  tools/call transfer  a fresh call (no requestState) appends `start <amount>` to COUNT_FILE and asks
                       `confirm` (elicitation/create, a boolean `ok`); the retry with the answer and
                       the requestState appends `done <amount>` and answers `sent <amount>` (`kept`
                       when not accepted)
  subscriptions/listen refused (-32601): this server announces nothing
"""

from __future__ import annotations

import json
import os
import sys

VERSION = "2026-07-28"
INFO = {"name": "mcpd-stateless-stdio-upstream", "version": "1.0.0"}


def record(line: str) -> None:
    with open(os.environ["COUNT_FILE"], "a", encoding="utf-8") as f:
        f.write(line + "\n")


def complete(result: dict) -> dict:
    result["resultType"] = "complete"
    result["_meta"] = {"io.modelcontextprotocol/serverInfo": INFO}
    return result


def transfer(params: dict) -> dict:
    amount = int((params.get("arguments") or {}).get("amount", 0))
    state = params.get("requestState")
    if state is None:
        record(f"start {amount}")
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return {
            "resultType": "input_required",
            "inputRequests": {
                "confirm": {"method": "elicitation/create", "params": {"message": f"Send {amount}?", "requestedSchema": schema}}
            },
            "requestState": f"transfer-{amount}",
        }
    if state != f"transfer-{amount}":
        raise ValueError(f"requestState {state!r} is not this call's")
    answer = (params.get("inputResponses") or {}).get("confirm") or {}
    record(f"done {amount}")
    ok = answer.get("action") == "accept" and (answer.get("content") or {}).get("ok") is True
    text = f"sent {amount}" if ok else f"kept {amount}"
    return complete({"content": [{"type": "text", "text": text}]})


def answer(msg: dict) -> dict | None:
    method, params = msg.get("method"), msg.get("params") or {}
    if "id" not in msg:
        return None  # a notification (notifications/cancelled): nothing to answer
    if method == "server/discover":
        result = complete({"supportedVersions": [VERSION], "capabilities": {"tools": {}}})
    elif method == "tools/list":
        tool = {
            "name": "transfer",
            "description": "Sends amount after the user confirms; every fresh call is counted",
            "inputSchema": {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]},
        }
        result = complete({"tools": [tool]})
    elif method == "tools/call" and params.get("name") == "transfer":
        try:
            result = transfer(params)
        except ValueError as e:
            return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": str(e)}}
    else:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
