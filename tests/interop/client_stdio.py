"""Interop check: the official Python MCP SDK (PyPI `mcp` 2.3.0) stdio client launching
`mcpd --stdio`, in the session era.

Usage: python client_stdio.py /path/to/mcpd

`Client(stdio_client(StdioServerParameters(command=mcpd, args=["--stdio"],
env={"MCPD_LOG_LEVEL": "debug"})), mode="legacy")`: the initialize handshake over stdin/stdout, then
the same flows as the HTTP session-era runs (no session id, no DELETE: the process is the session).
A wire tap sits between the transport and the session and records every JSON-RPC message each way.
Closing the client closes mcpd's stdin; mcpd must exit on that EOF, before the SDK's 2 s grace
period runs out and it escalates to SIGTERM. Then `auto_fallback`: a second `Client` in the SDK's
default mode="auto" probes `server/discover`; mcpd's stdio transport is session-only and answers
with a JSON-RPC error, so the client must fall back to `initialize`.

Prints one line per check, "PASS stdio-py:<name>" or "FAIL stdio-py:<name>: <reason>", and exits 0
only when every check passed. run.sh counts the lines.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from report import Report

# resources/subscribe etc. are deprecated for 2026-07-28; this session-era run uses them on purpose.
warnings.filterwarnings("ignore")

P = "stdio-py:"
CHECK_TIMEOUT_S = 15.0
EXPECTED_TOOLS = ["echo", "countdown", "ask_user", "summarize", "big_payload", "server_stats"]
HANDSHAKE_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
SDK_GRACE_S = 2.0  # mcp.client.stdio.PROCESS_TERMINATION_TIMEOUT

REPORT = Report(P)
emit_pass, emit_fail = REPORT.emit_pass, REPORT.emit_fail


def err_text(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(err_text(sub) for sub in e.exceptions)
    return f"{type(e).__name__}: {e}"


class CheckFailed(Exception):
    pass


def require(cond: Any, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


async def check(name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            detail = await fn()
        emit_pass(name, detail)
    except TimeoutError:
        emit_fail(name, f"timed out after {CHECK_TIMEOUT_S:.0f} s")
    except Exception as e:  # noqa: BLE001 - every failure is a FAIL line
        emit_fail(name, err_text(e))


def first_text(result: types.CallToolResult) -> str:
    for c in result.content:
        if isinstance(c, types.TextContent):
            return c.text
    raise CheckFailed(f"result has no text content: {result.model_dump_json()[:200]}")


# ---- wire tap: every JSON-RPC message between the session and the stdio transport ----------
class Wire:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.received: list[tuple[float, dict[str, Any]]] = []
        self.errors: list[str] = []  # stdout lines the transport could not parse

    @staticmethod
    def as_dict(m: SessionMessage) -> dict[str, Any]:
        return m.message.model_dump(by_alias=True, exclude_unset=True, mode="json")

    def sent_of(self, method: str, since: int = 0) -> list[dict[str, Any]]:
        return [m for m in self.sent[since:] if m.get("method") == method]

    def response_to(self, req_id: Any) -> dict[str, Any] | None:
        for _, m in self.received:
            if m.get("id") == req_id and ("result" in m or "error" in m):
                return m
        return None


@asynccontextmanager
async def tapped(transport: Any, wire: Wire) -> AsyncGenerator[Any, None]:
    """Wraps a transport's (read, write) streams, recording each message on its way through."""
    async with transport as (read, write):
        up_send, up_recv = anyio.create_memory_object_stream[Any](0)
        down_send, down_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def pump_in() -> None:
            async with up_send:
                async for m in read:
                    if isinstance(m, SessionMessage):
                        wire.received.append((time.monotonic(), Wire.as_dict(m)))
                    else:
                        wire.errors.append(err_text(m))
                    await up_send.send(m)

        async def pump_out() -> None:
            async with write:
                async for m in down_recv:
                    wire.sent.append(Wire.as_dict(m))
                    await write.send(m)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_in)
            tg.start_soon(pump_out)
            try:
                yield up_recv, down_send
            finally:
                tg.cancel_scope.cancel()


async def main(mcpd: str) -> int:
    wire = Wire()
    elicitations: list[Any] = []
    samplings: list[Any] = []
    resource_updates: list[tuple[float, str]] = []
    background: list[str] = []
    errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8")

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        elicitations.append(params)
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async def on_sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        samplings.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled!"),
            model="mcpd-interop-fake-model",
            stop_reason="endTurn",
        )

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            resource_updates.append((time.monotonic(), str(message.params.uri)))
        elif isinstance(message, Exception):
            background.append(err_text(message))

    params = StdioServerParameters(command=mcpd, args=["--stdio"], env={"MCPD_LOG_LEVEL": "debug", "NO_COLOR": "1"})
    stack = AsyncExitStack()
    client: Client | None = None

    async def c_initialize() -> str:
        nonlocal client
        client = await stack.enter_async_context(
            Client(
                tapped(stdio_client(params, errlog=errlog), wire),
                mode="legacy",
                read_timeout_seconds=20.0,
                sampling_callback=on_sample,
                elicitation_callback=on_elicit,
                message_handler=on_message,
                client_info=types.Implementation(name="mcpd-interop-py-stdio", version="0.0.0"),
            )
        )
        info = client.server_info
        pv = client.protocol_version
        require(info is not None and info.name, f"no server name: {info!r}")
        require(pv in HANDSHAKE_VERSIONS, f"protocol version {pv} not a handshake version")
        caps = client.server_capabilities
        missing = [c for c in ("tools", "resources", "prompts", "logging", "completions") if getattr(caps, c) is None]
        require(not missing, f"server capabilities lack {', '.join(missing)}")
        require(caps.resources is not None and caps.resources.subscribe, "resources.subscribe is not true")
        require(wire.sent and wire.sent[0].get("method") == "initialize", f"first message out was {wire.sent[:1]}")
        return f"server {info.name} {info.version}, protocol {pv}"

    # Not under check()'s fail_after: the client's task groups outlive this step, and anyio forbids
    # leaving them inside a newer cancel scope. read_timeout_seconds and run.sh bound it instead.
    try:
        emit_pass("initialize", await c_initialize())
    except Exception as e:  # noqa: BLE001
        emit_fail("initialize", err_text(e))
        if client is not None:
            client = None

    async def connected_check(name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
        if client is None:
            emit_fail(name, "skipped: initialize failed")
            return
        await check(name, fn)

    async def server_stats() -> dict[str, Any]:
        assert client is not None
        r = await client.call_tool("server_stats", {})
        stats = json.loads(first_text(r))
        require(isinstance(stats.get("in_flight_requests"), int), f"server_stats: {stats}")
        return stats

    async def c_tools_list() -> str:
        assert client is not None
        r = await client.list_tools(cache_mode="bypass")
        names = [t.name for t in r.tools]
        missing = [n for n in EXPECTED_TOOLS if n not in names]
        require(not missing, f"missing tools {missing}; got {names}")
        return f"{len(names)} tools"

    async def c_echo() -> None:
        assert client is not None
        message = "hello from py over stdio\nsecond line — ünïcödé ✓"
        r = await client.call_tool("echo", {"message": message})
        require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
        text = first_text(r)
        require(text == message, f"echo returned {text!r}")

    async def c_countdown() -> str:
        assert client is not None
        progress: list[tuple[float, float | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append((p, total))

        n0 = len(wire.sent)
        r = await client.call_tool("countdown", {"steps": 3, "interval_ms": 50}, progress_callback=on_progress)
        require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
        require(first_text(r) == "done", f"result text {first_text(r)!r}")
        await anyio.sleep(0.1)
        req = wire.sent_of("tools/call", n0)[0]
        token = ((req.get("params") or {}).get("_meta") or {}).get("progressToken")
        on_wire = [m for _, m in wire.received if m.get("method") == "notifications/progress" and m["params"].get("progressToken") == token]
        require(len(on_wire) == 3, f"{len(on_wire)} progress notifications for token {token!r} on the wire, want 3")
        require(len(progress) == 3, f"progress callback got {len(progress)}, want 3: {progress}")
        require(all(b > a for (a, _), (b, _) in zip(progress, progress[1:])), f"progress not increasing: {progress}")
        require(all(t == 3 for _, t in progress), f"progress total not 3: {progress}")
        return "progress " + ",".join(f"{p:g}" for p, _ in progress)

    async def c_cancel() -> str:
        assert client is not None
        n0 = len(wire.sent)
        got: list[Any] = []
        started = time.monotonic()
        with anyio.move_on_after(0.3) as scope:
            got.append(await client.call_tool("countdown", {"steps": 50, "interval_ms": 100}))
        elapsed = time.monotonic() - started
        require(scope.cancelled_caught and not got, f"call was not cancelled locally: {got!r}")
        calls = [m for m in wire.sent_of("tools/call", n0) if (m.get("params") or {}).get("name") == "countdown"]
        require(calls, "did not see the countdown request go out")
        req_id = calls[0]["id"]
        deadline = time.monotonic() + 3.0
        while True:
            cancel_sent = any((m.get("params") or {}).get("requestId") == req_id for m in wire.sent_of("notifications/cancelled", n0))
            stats = await server_stats()
            if (cancel_sent and stats["in_flight_requests"] == 1) or time.monotonic() > deadline:
                break
            await anyio.sleep(0.1)
        require(cancel_sent, f"no notifications/cancelled was sent for request {req_id}")
        require(stats["in_flight_requests"] == 1, f"in_flight_requests still {stats['in_flight_requests']} 3 s after cancel")
        late = wire.response_to(req_id)
        require(late is None, f"a response for the cancelled request arrived: {json.dumps(late)[:200]}")
        return f"cancelled locally after {elapsed:.2f} s, notifications/cancelled sent, in_flight_requests back to 1"

    async def c_elicitation() -> None:
        assert client is not None
        question = "What is your favourite colour?"
        before = len(elicitations)
        r = await client.call_tool("ask_user", {"question": question})
        require(len(elicitations) == before + 1, f"elicitation callback called {len(elicitations) - before} times")
        p = elicitations[before]
        require(getattr(p, "message", None) == question, f"elicitation message {getattr(p, 'message', None)!r}")
        schema = getattr(p, "requested_schema", None) or {}
        require(((schema.get("properties") or {}).get("answer") or {}).get("type") == "string", f"requestedSchema {schema!r}")
        require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
        require(first_text(r) == "blue", f"ask_user returned {first_text(r)!r}")

    async def c_sampling() -> None:
        assert client is not None
        before = len(samplings)
        r = await client.call_tool("summarize", {"text": "a long text that needs a summary"})
        require(len(samplings) == before + 1, f"sampling callback called {len(samplings) - before} times")
        require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
        require(first_text(r) == "sampled!", f"summarize returned {first_text(r)!r}")

    async def c_big_payload() -> None:
        assert client is not None
        n = 200_000
        r = await client.call_tool("big_payload", {"bytes": n})
        require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
        got = len(first_text(r).encode("utf-8"))
        require(got == n, f"got {got} bytes, want {n}")

    async def c_subscribe() -> str:
        assert client is not None
        start = time.monotonic()
        await client.session.subscribe_resource("demo://clock")
        deadline = start + 5.0
        while time.monotonic() < deadline:
            for at, uri in resource_updates:
                if at >= start and uri == "demo://clock":
                    return f"first update after {at - start:.2f} s"
            await anyio.sleep(0.05)
        raise CheckFailed(f"no notifications/resources/updated for demo://clock within 5 s (got {len(resource_updates)})")

    async def c_prompt() -> str:
        assert client is not None
        r = await client.get_prompt("greeting", {"name": "Ada"})
        require(len(r.messages) > 0, f"no messages: {r.model_dump_json()[:200]}")
        return f"{len(r.messages)} message(s)"

    async def c_complete() -> str:
        assert client is not None
        r = await client.complete(types.PromptReference(type="ref/prompt", name="greeting"), {"name": "name", "value": "A"})
        require(isinstance(r.completion.values, list), f"no completion.values list: {r!r}")
        return f"values {json.dumps(r.completion.values)[:100]}"

    async def c_stdout_clean() -> str:
        require(not wire.errors, f"{len(wire.errors)} stdout line(s) did not parse: {wire.errors[:3]}")
        require(not background, f"the session saw {len(background)} transport error(s): {background[:3]}")
        return f"{len(wire.received)} messages from stdout, all JSON-RPC"

    await connected_check("tools_list", c_tools_list)
    await connected_check("echo", c_echo)
    await connected_check("countdown_progress", c_countdown)
    await connected_check("cancel", c_cancel)
    await connected_check("elicitation", c_elicitation)
    await connected_check("sampling", c_sampling)
    await connected_check("big_payload", c_big_payload)
    await connected_check("resource_subscribe", c_subscribe)
    await connected_check("prompts_get", c_prompt)
    await connected_check("completion", c_complete)
    await connected_check("stdout_clean", c_stdout_clean)

    # Closing: stdio_client closes mcpd's stdin, then polls for its exit for SDK_GRACE_S before it
    # sends SIGTERM. The exit status is not exposed, so the time it took shows whether mcpd left on
    # the EOF (client-stdio.mjs raw checks the status itself).
    if client is None:
        emit_fail("eof_exit", "skipped: initialize failed")
    else:
        started = time.monotonic()
        close_err: BaseException | None = None
        try:
            await stack.aclose()
        except Exception as e:  # noqa: BLE001
            close_err = e
        took = time.monotonic() - started
        errlog.seek(0)
        stderr = errlog.read()
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        debug = [ln for ln in lines if " DEBUG " in ln]
        try:
            require(close_err is None, f"closing the client raised {err_text(close_err) if close_err else ''}")
            require(took < SDK_GRACE_S - 0.1, f"closing took {took:.2f} s: mcpd did not exit on EOF within the SDK's {SDK_GRACE_S:.0f} s grace")
            emit_pass("eof_exit", f"exited {took * 1000:.0f} ms after EOF; stderr {len(lines)} lines ({len(debug)} DEBUG)")
        except Exception as e:  # noqa: BLE001
            emit_fail("eof_exit", err_text(e))

    # The SDK's default connect mode probes server/discover first; a session-only stdio server
    # answers with an error and the client falls back to initialize.
    async def c_auto() -> str:
        wire2 = Wire()
        errlog2 = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        async with Client(tapped(stdio_client(params, errlog=errlog2), wire2), read_timeout_seconds=20.0) as c:
            pv = c.protocol_version
            require(pv in HANDSHAKE_VERSIONS, f"protocol version {pv}, want a handshake version (fallback)")
            methods = [m.get("method") for m in wire2.sent if "id" in m]
            require(methods[:2] == ["server/discover", "initialize"], f"requests went out as {methods[:3]}")
            probe = wire2.response_to(wire2.sent[0]["id"])
            require(probe is not None and "error" in probe, f"server/discover answered {json.dumps(probe)[:200]}")
            tools = await c.list_tools(cache_mode="bypass")
            require(len(tools.tools) >= len(EXPECTED_TOOLS), f"{len(tools.tools)} tools")
        code = probe["error"]["code"]
        return f"server/discover -> error {code} {probe['error'].get('message', '')[:60]!r}, then initialize -> {pv}"

    await check("auto_fallback", c_auto)

    if background:
        print(f"{P} background transport errors (informational):", file=sys.stderr)
        for b in background[:10]:
            print(f"  {b}", file=sys.stderr)
    return 0 if REPORT.failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python client_stdio.py <path to mcpd>", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
