"""A session-era upstream whose tool counts its runs and asks a question, for the gateway's
exactly-once matrix (crates/mcpd-server/tests/http/matrix.rs).

PyPI `mcp` 2.x (pinned in requirements.txt), `MCPServer` in the session era (2025-11-25).

    python upstream_counting.py stdio          # over stdin/stdout
    python upstream_counting.py http PORT      # Streamable HTTP, stateful; PORT 0 picks one

Over HTTP it prints one line once it accepts connections:

    upstream listening on http://127.0.0.1:PORT/mcp

Serves one tool, `transfer(amount)`: appends `start <amount>` to the file named by the
environment variable COUNT_FILE (one line per run, whichever process runs it), asks the client
"Send <amount>?" (elicitation, a boolean `ok`), appends `done <amount>` and answers
`sent <amount>` (or `kept <amount>` when the answer was not an accepted `ok: true`).
"""

from __future__ import annotations

import os
import sys

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from upstream_http import serve_http

server = MCPServer(name="mcpd-counting-upstream", version="1.0.0", log_level="WARNING")


class Confirm(BaseModel):
    ok: bool


def _record(line: str) -> None:
    with open(os.environ["COUNT_FILE"], "a", encoding="utf-8") as f:
        f.write(line + "\n")


@server.tool(description="Send `amount` after the user confirms; every run is counted")
async def transfer(amount: int, ctx: Context) -> str:
    _record(f"start {amount}")
    answer = await ctx.elicit(message=f"Send {amount}?", schema=Confirm)
    _record(f"done {amount}")
    if answer.action == "accept" and answer.data is not None and answer.data.ok:
        return f"sent {amount}"
    return f"kept {amount}"


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "stdio":
        server.run("stdio")
    elif len(sys.argv) == 3 and sys.argv[1] == "http":
        anyio.run(serve_http, server, int(sys.argv[2]))
    else:
        print("usage: python upstream_counting.py stdio | http PORT", file=sys.stderr)
        sys.exit(2)
