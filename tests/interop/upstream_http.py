"""A small upstream MCP server for the gateway interop test (gateway.sh / gateway.mjs).

PyPI `mcp` 2.x (pinned in requirements.txt): `MCPServer` (1.x called it FastMCP) over Streamable
HTTP in *stateful* mode (session ids, session era 2025-11-25; it answers 2026-07-28 too), so that
mcpd's gateway can speak to it as a session-era client and server->client requests (sampling) can
ride the originating POST's SSE stream.

    python upstream_http.py PORT        # PORT 0 picks a free port

Prints exactly one line to stdout once it accepts connections:

    upstream listening on http://127.0.0.1:PORT/mcp

then serves until SIGTERM/SIGINT. Logs (uvicorn, warnings) go to stderr.

Serves:
  tools     add(a, b)             -> "a + b = <sum>"
            slow_count(steps, interval_ms=100)
                                  -> after each step: notifications/progress (progress i, total steps,
                                     message "step i/steps") and notifications/message (info, logger
                                     "slow_count", data "slow_count step i/steps"), both on the
                                     caller's POST stream; then "counted to <steps>"
            ask_model(prompt)     -> sampling/createMessage on the caller's POST stream;
                                     "model said: <the answer's text>"
            stats()               -> JSON: "in_flight", "completed", "cancelled" (slow_count calls
                                     running / finished / cancelled: shows that a cancellation reached
                                     this server), "ask_model_in_flight", "ask_model_cancelled" (the
                                     same for ask_model waiting on its sampling answer), "sessions"
                                     (initialize requests seen), "caller" (this session's clientInfo,
                                     capabilities and protocol version: what mcpd declared upstream)
            grow(name, channel="standalone")
                                  -> registers a tool `name` (answers "I am <name>"), sends
                                     notifications/tools/list_changed on the standalone GET stream
                                     ("standalone") or on the caller's POST stream ("request");
                                     "grown <name>"
  resource  py://greeting         -> "Hello from the python upstream"
  prompt    review(code)          -> one user message "Please review this code:\n<code>"
The tools/prompts/resources capabilities declare listChanged: true.
"""

from __future__ import annotations

import json
import socket
import sys
import warnings

import anyio
import uvicorn

from mcp import types
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer

# create_message is deprecated as of 2026-07-28 (SEP-2577) but is exactly what a 2025-11-25
# session does; keep the warning off stderr noise.
warnings.filterwarnings("ignore", category=DeprecationWarning)
try:  # the SDK's own warning category, if it is not a DeprecationWarning subclass
    from mcp.shared.exceptions import MCPDeprecationWarning  # type: ignore

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except Exception:  # pragma: no cover - name differs across versions
    pass

GREETING = "Hello from the python upstream"

server = MCPServer(name="mcpd-interop-py-upstream", version="1.0.0", log_level="WARNING")

# The streamable-HTTP session manager builds the InitializeResult from
# create_initialization_options() without NotificationOptions, i.e. listChanged: false. This
# server does send list_changed (grow), so declare it.
_lowlevel = server._lowlevel_server
_orig_init_options = _lowlevel.create_initialization_options


def _init_options(notification_options=None, *args, **kwargs):
    STATS["sessions"] += 1  # called once per initialize (and per server/discover)
    opts = notification_options or NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    return _orig_init_options(opts, *args, **kwargs)


_lowlevel.create_initialization_options = _init_options

STATS = {"in_flight": 0, "completed": 0, "cancelled": 0, "ask_model_in_flight": 0, "ask_model_cancelled": 0, "sessions": 0}


@server.tool(description="Add two numbers")
def add(a: float, b: float) -> str:
    s = a + b
    if s == int(s):
        s = int(s)
    return f"{_num(a)} + {_num(b)} = {s}"


def _num(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


@server.tool(description="Count to `steps`, reporting progress (and an info log) after each step")
async def slow_count(steps: int, ctx: Context, interval_ms: int = 100) -> str:
    STATS["in_flight"] += 1
    try:
        for i in range(1, steps + 1):
            await anyio.sleep(interval_ms / 1000)
            await ctx.report_progress(i, steps, f"step {i}/{steps}")
            await ctx.info(f"slow_count step {i}/{steps}", logger_name="slow_count")
        STATS["completed"] += 1
        return f"counted to {steps}"
    except anyio.get_cancelled_exc_class():
        STATS["cancelled"] += 1
        raise
    finally:
        STATS["in_flight"] -= 1


@server.tool(description="Counters: slow_count calls in flight/completed/cancelled, initialize requests seen")
def stats(ctx: Context) -> str:
    # Also who is asking: the client info, capabilities and protocol version of this session
    # (through mcpd: what mcpd's upstream client declared).
    params = ctx.session.client_params
    caps = ctx.client_capabilities
    return json.dumps(
        {
            **STATS,
            "caller": {
                "client_info": params.client_info.model_dump(mode="json", exclude_none=True) if params else None,
                "capabilities": caps.model_dump(mode="json", by_alias=True, exclude_none=True) if caps else None,
                "protocol_version": ctx.protocol_version,
            },
        }
    )


@server.tool(description="Register a new tool `name` and send notifications/tools/list_changed")
async def grow(name: str, ctx: Context, channel: str = "standalone") -> str:
    def grown() -> str:
        return f"I am {name}"

    server.add_tool(grown, name=name, description=f"A tool added at run time by grow({name!r})")
    if channel == "request":
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_context.request_id)
    else:
        await ctx.session.send_tool_list_changed()
    return f"grown {name}"


@server.tool(description="Ask the client's model (sampling/createMessage) and return its answer")
async def ask_model(prompt: str, ctx: Context) -> str:
    STATS["ask_model_in_flight"] += 1
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=50,
            related_request_id=ctx.request_context.request_id,
        )
    except anyio.get_cancelled_exc_class():
        STATS["ask_model_cancelled"] += 1
        raise
    finally:
        STATS["ask_model_in_flight"] -= 1
    content = result.content
    if isinstance(content, list):
        content = content[0] if content else None
    text = getattr(content, "text", None)
    if text is None:
        text = repr(content)
    return f"model said: {text}"


@server.resource("py://greeting", name="greeting", description="A fixed greeting", mime_type="text/plain")
def greeting() -> str:
    return GREETING


@server.prompt(description="Ask for a code review")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


async def main(port: int) -> None:
    await serve_http(server, port)


async def serve_http(server: MCPServer, port: int) -> None:
    """Serves `server` over Streamable HTTP (stateful) at /mcp on PORT (0: a free one), printing the
    ready line once it accepts connections. Also used by upstream_counting.py."""
    # Bind the socket ourselves so PORT 0 works and the ready line names the real port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    real_port = sock.getsockname()[1]

    app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=False, json_response=False)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)

    async def announce() -> None:
        while not uv.started:
            await anyio.sleep(0.02)
        print(f"upstream listening on http://127.0.0.1:{real_port}/mcp", flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await uv.serve(sockets=[sock])
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python upstream_http.py PORT", file=sys.stderr)
        sys.exit(2)
    anyio.run(main, int(sys.argv[1]))
