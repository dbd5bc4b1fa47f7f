"""Interop check: the official Python MCP SDK client (PyPI `mcp`, pinned in
requirements.txt) resuming SSE streams across an mcpd restart on Redis.

Usage: python resume.py http://127.0.0.1:PORT/mcp

Not run by run.sh: it needs an orchestrator that kills and restarts mcpd
(`--store redis`) on the same port, which the Rust test
`sdk_resume::python_sdk_resumes_across_an_mcpd_restart` (crates/mcpd-server/tests/http/sdk_resume.rs)
does. The protocol with the orchestrator, over stdout/stdin:

  1. The script connects in legacy (session) mode and calls
     `countdown {steps: 8, interval_ms: 300}` with a progress callback and a
     resumption-token callback.
  2. Once the token of the second progress notification is known it prints
     `READY <token>` (flushed). The orchestrator waits about 0.7 s (so the
     log holds events after that token), SIGKILLs mcpd, starts it again on
     the same port (same Redis), and writes `RESTARTED` + newline to the
     script's stdin.
  3. Checks, each printed as "PASS resume:<name>" or "FAIL resume:<name>: <reason>":
     - interrupted_call: the SDK's own reconnection (GET with Last-Event-ID,
       after the server's `retry`) reaches the new process; the call ends with
       mcpd's documented error for a request whose server died (-32603, "The
       server process running this request stopped before it finished ...");
       its progress callback saw 1..k, each once, in order.
     - resume_with_token: an explicit resumption with the READY token
       (`ClientSession.send_request(..., metadata=ClientMessageMetadata(
       resumption_token=...))`) replays exactly the events after that token
       (progress 3..k, in order, none twice) and the same error; no hang.
     - session_after_restart: the same session serves new requests (echo, and
       countdown with progress).
     - delete_session: closing the client DELETEs the session: 200.

Exits 0 only when every check passed. Every wait is bounded.

Written against mcp 2.3.0: `mcp.client.Client` (mode="legacy") over
`streamable_http_client`; `ClientSession.send_request` takes
`metadata=ClientMessageMetadata(resumption_token=..., on_resumption_token_update=...)`.
On a broken SSE stream the transport itself reconnects (2 attempts, `retry` ms
apart); with an explicit `resumption_token` it sends no POST, only the GET, and
maps the response onto the new request's id. Progress notifications replayed
for the old request carry the old progress token (the old request id), so they
are collected from `message_handler`, which sees every notification.
"""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ClientMessageMetadata

warnings.filterwarnings("ignore")

LOST_CODE = -32603
LOST = (
    "The server process running this request stopped before it finished; its result is lost. "
    "Retry the request."
)
STEPS = 8
CHECK_TIMEOUT_S = 20.0
P = "resume:"
passed = 0
failed = 0


def emit(ok: bool, name: str, detail: str) -> None:
    global passed, failed
    one_line = " ".join(str(detail).split())[:600]
    if ok:
        passed += 1
        print(f"PASS {P}{name}" + (f" ({one_line})" if one_line else ""), flush=True)
    else:
        failed += 1
        print(f"FAIL {P}{name}: {one_line}", flush=True)


def err_text(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(err_text(sub) for sub in e.exceptions)
    return f"{type(e).__name__}: {e}"


class CheckFailed(Exception):
    pass


def require(cond: Any, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def split_id(token: str) -> tuple[str, int]:
    stream, _, seq = token.rpartition("-")
    require(stream and seq.isdigit(), f"resumption token {token!r} is not <stream>-<seq>")
    return stream, int(seq)


def require_lost(e: BaseException | None, what: str) -> None:
    require(isinstance(e, MCPError), f"{what}: want MCPError {LOST_CODE}, got {err_text(e) if e else 'a result'}")
    assert isinstance(e, MCPError)
    require(e.code == LOST_CODE, f"{what}: error code {e.code} ({e.message!r}), want {LOST_CODE}")
    require(e.message == LOST, f"{what}: error message {e.message!r}")


def require_consecutive(values: list[float], first: int, what: str) -> None:
    want = [float(v) for v in range(first, first + len(values))]
    require(values == want, f"{what}: progress {values}, want {want} (in order, none twice)")


class Run:
    """What the callbacks saw."""

    def __init__(self) -> None:
        # (phase, progress token, progress) of every progress notification the session surfaced.
        self.notified: list[tuple[str, Any, float]] = []
        self.phase = "call"
        self.deletes: list[int] = []

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            self.notified.append((self.phase, message.params.progress_token, message.params.progress))

    async def on_response(self, response: httpx2.Response) -> None:
        if response.request.method == "DELETE":
            self.deletes.append(response.status_code)


async def interrupted_call(session: Any, params: types.CallToolRequestParams) -> tuple[list[str], list[float]]:
    """The call the restart interrupts: returns (READY token or [], progress seen)."""
    tokens: list[str] = []
    progress: list[float] = []
    ready: list[str] = []

    async def on_token(token: str) -> None:
        tokens.append(token)
        # priming, progress 1, progress 2: the third token is progress 2's.
        if len(tokens) == 3 and not ready:
            ready.append(token)
            print(f"READY {token}", flush=True)

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    outcome: BaseException | None = None
    started = time.monotonic()
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            await session.send_request(
                types.CallToolRequest(params=params),
                types.CallToolResult,
                metadata=ClientMessageMetadata(on_resumption_token_update=on_token),
                progress_callback=on_progress,
            )
    except Exception as e:  # noqa: BLE001 - the outcome is checked below
        outcome = e
    took = time.monotonic() - started
    try:
        require(ready, f"never saw two progress tokens (tokens {tokens}, outcome {err_text(outcome) if outcome else 'a result'})")
        require(not isinstance(outcome, TimeoutError), f"no outcome within {CHECK_TIMEOUT_S:.0f} s (hang)")
        require_lost(outcome, "interrupted call")
        # Progress callbacks run in spawned tasks: give the last ones a moment.
        await anyio.sleep(0.2)
        require(2 <= len(progress) < STEPS, f"progress {progress}: want between 2 and {STEPS - 1} before the kill")
        require_consecutive(progress, 1, "interrupted call")
        streams = {split_id(t)[0] for t in tokens}
        seqs = [split_id(t)[1] for t in tokens]
        require(len(streams) == 1, f"tokens from several streams: {tokens}")
        require(all(b > a for a, b in zip(seqs, seqs[1:])), f"tokens not increasing: {tokens}")
        emit(True, "interrupted_call", f"progress 1..{len(progress)}, then {LOST_CODE} after {took:.1f} s; {len(tokens)} tokens")
    except Exception as e:  # noqa: BLE001
        emit(False, "interrupted_call", err_text(e))
    return ready, progress


async def resume_with_token(
    run: Run, session: Any, params: types.CallToolRequestParams, ready: list[str], progress: list[float]
) -> None:
    """Explicit resumption with the READY token, once the orchestrator says mcpd is back."""
    with anyio.fail_after(CHECK_TIMEOUT_S):
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    require(line.strip() == "RESTARTED", f"orchestrator said {line!r}, want RESTARTED")
    require(ready, "no READY token to resume from")
    call_tokens = {tok for ph, tok, _ in run.notified if ph == "call"}
    require(len(call_tokens) == 1, f"progress tokens of the call: {call_tokens}")
    (old_token,) = call_tokens
    run.phase = "resume"
    tokens: list[str] = []

    async def on_token(token: str) -> None:
        tokens.append(token)

    outcome: BaseException | None = None
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            await session.send_request(
                types.CallToolRequest(params=params),
                types.CallToolResult,
                metadata=ClientMessageMetadata(resumption_token=ready[0], on_resumption_token_update=on_token),
            )
    except Exception as e:  # noqa: BLE001
        outcome = e
    require(not isinstance(outcome, TimeoutError), f"no outcome within {CHECK_TIMEOUT_S:.0f} s (hang)")
    require_lost(outcome, "resumed call")
    await anyio.sleep(0.2)
    run.phase = "after"
    replayed = [p for ph, tok, p in run.notified if ph == "resume" and tok == old_token]
    others = [(tok, p) for ph, tok, p in run.notified if ph == "resume" and tok != old_token]
    require(not others, f"progress for other tokens during the resume: {others}")
    require_consecutive(replayed, 3, "resumed call")
    require(
        replayed == progress[2:],
        f"replayed {replayed}, but the call had seen {progress} (want everything after progress 2)",
    )
    stream0, seq0 = split_id(ready[0])
    seqs = [split_id(t)[1] for t in tokens]
    require(all(split_id(t)[0] == stream0 for t in tokens), f"tokens of another stream: {tokens}")
    require(all(s > seq0 for s in seqs) and all(b > a for a, b in zip(seqs, seqs[1:])), f"tokens {tokens} after {ready[0]}")
    shown = ",".join(f"{p:g}" for p in replayed) or "none"
    emit(True, "resume_with_token", f"from {ready[0]}: progress {shown}, then {LOST_CODE}")


async def session_after_restart(client: Client) -> None:
    with anyio.fail_after(CHECK_TIMEOUT_S):
        r = await client.call_tool("echo", {"message": "after the restart"})
        text = next((c.text for c in r.content if isinstance(c, types.TextContent)), None)
        require(text == "after the restart", f"echo said {text!r}")
        seen: list[float] = []

        async def on_p(p: float, total: float | None, message: str | None) -> None:
            seen.append(p)

        r = await client.call_tool("countdown", {"steps": 3, "interval_ms": 20}, progress_callback=on_p)
        text = next((c.text for c in r.content if isinstance(c, types.TextContent)), None)
        require(text == "done" and not r.is_error, f"countdown said {text!r}")
        await anyio.sleep(0.1)
        require(seen == [1.0, 2.0, 3.0], f"progress {seen}")
    emit(True, "session_after_restart", "echo, countdown with progress")


async def main(url: str) -> int:
    run = Run()
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0), event_hooks={"response": [run.on_response]})
    async with http:
        # One bound on the whole run (connect, checks, close); each wait inside has its own too.
        with anyio.move_on_after(6 * CHECK_TIMEOUT_S) as overall:
            try:
                async with Client(
                    streamable_http_client(url, http_client=http, terminate_on_close=True),
                    mode="legacy",
                    read_timeout_seconds=CHECK_TIMEOUT_S,
                    message_handler=run.on_message,
                    client_info=types.Implementation(name="mcpd-interop-py-resume", version="0.0.0"),
                ) as client:
                    emit(True, "initialize", f"protocol {client.protocol_version}")
                    session = client.session
                    params = types.CallToolRequestParams(name="countdown", arguments={"steps": STEPS, "interval_ms": 300})
                    ready, progress = await interrupted_call(session, params)
                    try:
                        await resume_with_token(run, session, params, ready, progress)
                    except Exception as e:  # noqa: BLE001
                        emit(False, "resume_with_token", err_text(e))
                    try:
                        await session_after_restart(client)
                    except Exception as e:  # noqa: BLE001
                        emit(False, "session_after_restart", err_text(e))
            except Exception as e:  # noqa: BLE001
                emit(False, "client", err_text(e))
        if overall.cancelled_caught:
            emit(False, "client", f"did not finish within {6 * CHECK_TIMEOUT_S:.0f} s")
        emit(run.deletes == [200], "delete_session", f"DELETE answered {run.deletes}")
    print(f"resume: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python resume.py <mcp endpoint url> (see the docstring: needs an orchestrator)", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
