"""Interop check: the official Python MCP SDK client (PyPI `mcp`, pinned in
requirements.txt) against mcpd's "demo" tool set.

Usage: python client.py http://127.0.0.1:PORT/mcp
Prints one line per check, "PASS py:<name>" or "FAIL py:<name>: <reason>",
and exits 0 only when every check passed. run.sh counts the lines.

Written against mcp 2.3.0: `mcp.client.Client` (default mode="auto") drives a
`ClientSession` over the transport from `mcp.client.streamable_http.streamable_http_client`.
In mode "auto" the client first probes `server/discover` at 2026-07-28 and falls
back to the `initialize` handshake (see NOTES.md); the probe_fallback check
records what happened on the wire.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

warnings.filterwarnings("ignore")  # resources/subscribe etc. are deprecated for 2026-07-28; we speak 2025-era here

P = "py:"
CHECK_TIMEOUT_S = 15.0
EXPECTED_TOOLS = ["echo", "countdown", "ask_user", "summarize", "big_payload", "server_stats"]
HANDSHAKE_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]

passed = 0
failed = 0


def emit_pass(name: str, detail: str | None = None) -> None:
    global passed
    passed += 1
    print(f"PASS {P}{name}" + (f" ({detail})" if detail else ""), flush=True)


def emit_fail(name: str, reason: str) -> None:
    global failed
    failed += 1
    one_line = " ".join(str(reason).split())[:500]
    print(f"FAIL {P}{name}: {one_line}", flush=True)


def err_text(e: BaseException) -> str:
    # Task groups wrap failures in (nested) exception groups; report the leaves.
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


# ---- wire tap: every HTTP request/response the SDK makes --------------------
class WireLog:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def on_request(self, request: httpx2.Request) -> None:
        body = None
        if request.method == "POST":
            try:
                body = json.loads(request.content)
            except Exception:  # noqa: BLE001 - a body we can't parse is just not recorded
                body = None
        self.events.append(
            {
                "kind": "request",
                "at": time.monotonic(),
                "method": request.method,
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": body,
                "request": request,
            }
        )

    async def on_response(self, response: httpx2.Response) -> None:
        self.events.append(
            {
                "kind": "response",
                "at": time.monotonic(),
                "method": response.request.method,
                "status": response.status_code,
                "content_type": response.headers.get("content-type", ""),
                "session_id": response.headers.get("mcp-session-id"),
                "request": response.request,
            }
        )

    def requests(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == "request"]

    def response_to(self, request: httpx2.Request) -> dict[str, Any] | None:
        for e in self.events:
            if e["kind"] == "response" and e["request"] is request:
                return e
        return None

    def posts_of(self, rpc_method: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.requests()
            if e["method"] == "POST" and isinstance(e["body"], dict) and e["body"].get("method") == rpc_method
        ]

    def session_id(self) -> str | None:
        sid = None
        for e in self.events:
            if e["kind"] == "response" and e["session_id"]:
                sid = e["session_id"]
        return sid


async def main(url: str) -> int:
    wire = WireLog()
    elicitations: list[Any] = []
    samplings: list[Any] = []
    resource_updates: list[tuple[float, str]] = []
    background: list[str] = []

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

    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"request": [wire.on_request], "response": [wire.on_response]},
    )

    async with http:
        stack = AsyncExitStack()
        client: Client | None = None
        connect_started = time.monotonic()
        try:
            client = await stack.enter_async_context(
                Client(
                    streamable_http_client(url, http_client=http, terminate_on_close=True),
                    mode="auto",
                    read_timeout_seconds=20.0,
                    sampling_callback=on_sample,
                    elicitation_callback=on_elicit,
                    message_handler=on_message,
                    client_info=types.Implementation(name="mcpd-interop-py", version="0.0.0"),
                )
            )
            connect_s = time.monotonic() - connect_started
            try:
                info = client.server_info
                pv = client.protocol_version
                require(info is not None and info.name, f"no server name: {info!r}")
                require(pv in HANDSHAKE_VERSIONS, f"protocol version {pv} not one of {'/'.join(HANDSHAKE_VERSIONS)}")
                caps = client.server_capabilities
                missing = [c for c in ("tools", "resources", "prompts", "logging", "completions") if getattr(caps, c) is None]
                require(not missing, f"server capabilities lack {', '.join(missing)}")
                require(caps.resources.subscribe is True, f"resources.subscribe is not true: {caps.resources!r}")
                emit_pass("initialize", f"server {info.name} {info.version}, protocol {pv}, connect took {connect_s:.2f} s")
            except Exception as e:  # noqa: BLE001
                emit_fail("initialize", err_text(e))
        except Exception as e:  # noqa: BLE001
            emit_fail("initialize", f"connect failed: {err_text(e)}")
            client = None

        # What the auto-mode probe did on the wire (see NOTES.md).
        try:
            posts = [e for e in wire.requests() if e["method"] == "POST" and isinstance(e["body"], dict)]
            require(posts, "no POST went out")
            first = posts[0]
            require(
                first["body"].get("method") == "server/discover",
                f"first POST was {first['body'].get('method')!r}, not the server/discover probe",
            )
            probe_pv = first["headers"].get("mcp-protocol-version")
            require(probe_pv == "2026-07-28", f"probe MCP-Protocol-Version header was {probe_pv!r}")
            probe_resp = wire.response_to(first["request"])
            answer = (
                f"HTTP {probe_resp['status']} {probe_resp['content_type'] or '(no content-type)'}"
                if probe_resp
                else "no HTTP answer"
            )
            inits = wire.posts_of("initialize")
            require(inits, f"probe answered {answer}, but no initialize followed")
            require(
                "mcp-protocol-version" not in inits[0]["headers"],
                f"initialize carried MCP-Protocol-Version {inits[0]['headers'].get('mcp-protocol-version')!r}",
            )
            delay = inits[0]["at"] - first["at"]
            emit_pass("probe_fallback", f"server/discover -> {answer} -> initialize after {delay:.2f} s")
        except Exception as e:  # noqa: BLE001
            emit_fail("probe_fallback", err_text(e))

        async def connected_check(name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
            if client is None:
                emit_fail(name, "skipped: initialize failed")
                return
            await check(name, fn)

        async def server_stats() -> dict[str, Any]:
            assert client is not None
            r = await client.call_tool("server_stats", {})
            text = first_text(r)
            stats = json.loads(text)
            require(isinstance(stats.get("in_flight_requests"), int), f"no integer in_flight_requests: {text}")
            require(isinstance(stats.get("sessions"), int), f"no integer sessions: {text}")
            return stats

        async def c_tools_list() -> str:
            assert client is not None
            r = await client.list_tools()
            names = [t.name for t in r.tools]
            missing = [n for n in EXPECTED_TOOLS if n not in names]
            require(not missing, f"missing tools {', '.join(missing)}; got {', '.join(names)}")
            return f"{len(names)} tools"

        async def c_echo() -> None:
            assert client is not None
            message = "hello from py — ünïcödé ✓"
            r = await client.call_tool("echo", {"message": message})
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == message, f"echo returned {text!r}")

        async def c_countdown() -> str:
            assert client is not None
            progress: list[tuple[float, float | None]] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append((p, total))

            r = await client.call_tool("countdown", {"steps": 3, "interval_ms": 50}, progress_callback=on_progress)
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == "done", f"result text {text!r}, want 'done'")
            require(len(progress) == 3, f"got {len(progress)} progress notifications, want 3: {progress}")
            require(all(b[0] > a[0] for a, b in zip(progress, progress[1:])), f"progress not increasing: {progress}")
            require(all(t == 3 for _, t in progress), f"progress total is not 3: {progress}")
            return "progress " + ",".join(f"{p:g}" for p, _ in progress)

        async def c_cancel() -> str:
            assert client is not None
            n_before = len(wire.events)
            got: list[Any] = []
            started = time.monotonic()
            with anyio.move_on_after(0.3) as scope:
                got.append(await client.call_tool("countdown", {"steps": 50, "interval_ms": 100}))
            elapsed = time.monotonic() - started
            require(scope.cancelled_caught and not got, f"call was not cancelled locally: {got!r}")
            new_posts = [
                e
                for e in wire.events[n_before:]
                if e["kind"] == "request" and e["method"] == "POST" and isinstance(e["body"], dict)
            ]
            req = next(
                (
                    e["body"]
                    for e in new_posts
                    if e["body"].get("method") == "tools/call" and (e["body"].get("params") or {}).get("name") == "countdown"
                ),
                None,
            )
            require(req is not None, "did not see the countdown request go out")
            req_id = req["id"]
            deadline = time.monotonic() + 3.0
            stats: dict[str, Any] = {}
            cancel_sent = False
            while True:
                cancel_sent = any(
                    e["kind"] == "request"
                    and e["method"] == "POST"
                    and isinstance(e["body"], dict)
                    and e["body"].get("method") == "notifications/cancelled"
                    and (e["body"].get("params") or {}).get("requestId") == req_id
                    for e in wire.events[n_before:]
                )
                stats = await server_stats()
                if (cancel_sent and stats["in_flight_requests"] == 1) or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.1)
            require(cancel_sent, f"no notifications/cancelled was POSTed for request {req_id}")
            require(
                stats["in_flight_requests"] == 1,
                f"in_flight_requests still {stats['in_flight_requests']} 3 s after cancel",
            )
            return f"cancelled locally after {elapsed:.2f} s, in_flight_requests back to 1"

        async def c_elicitation() -> None:
            assert client is not None
            question = "What is your favourite colour?"
            before = len(elicitations)
            r = await client.call_tool("ask_user", {"question": question})
            require(len(elicitations) == before + 1, f"elicitation callback called {len(elicitations) - before} times")
            params = elicitations[before]
            require(getattr(params, "message", None) == question, f"elicitation message {getattr(params, 'message', None)!r}")
            schema = getattr(params, "requested_schema", None) or {}
            require(
                ((schema.get("properties") or {}).get("answer") or {}).get("type") == "string",
                f"requestedSchema lacks answer:string: {schema!r}",
            )
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == "blue", f"ask_user returned {text!r}, want 'blue'")

        async def c_sampling() -> None:
            assert client is not None
            before = len(samplings)
            r = await client.call_tool("summarize", {"text": "a long text that needs a summary"})
            require(len(samplings) == before + 1, f"sampling callback called {len(samplings) - before} times")
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == "sampled!", f"summarize returned {text!r}, want 'sampled!'")

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
            raise CheckFailed(
                f"no notifications/resources/updated for demo://clock within 5 s (got {len(resource_updates)} updates)"
            )

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

        # Closing the client: ClientSession exits, then streamable_http_client's
        # finally sends DELETE with the session id (terminate_on_close=True).
        sid = wire.session_id()
        pv = client.protocol_version if client is not None else None
        n_before = len(wire.events)
        close_err = None
        try:
            # No timeout scope here: the client's task groups were entered outside
            # it, and anyio forbids exiting them inside a newer cancel scope. run.sh
            # bounds the whole run instead.
            await stack.aclose()
        except Exception as e:  # noqa: BLE001 - includes ExceptionGroup from task groups
            close_err = e

        if client is None:
            emit_fail("delete_session", "skipped: initialize failed")
        else:
            try:
                require(sid, "server gave no Mcp-Session-Id")
                deletes = [
                    e for e in wire.events[n_before:] if e["kind"] == "request" and e["method"] == "DELETE"
                ]
                require(deletes, f"closing the client sent no DELETE (close error: {close_err!r})")
                require(
                    deletes[0]["headers"].get("mcp-session-id") == sid,
                    f"DELETE carried session id {deletes[0]['headers'].get('mcp-session-id')!r}, want {sid!r}",
                )
                resp = wire.response_to(deletes[0]["request"])
                require(resp is not None, "DELETE got no HTTP answer")
                require(resp["status"] in (200, 204), f"DELETE answered HTTP {resp['status']}")
                headers = {
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                    "mcp-session-id": sid,
                }
                if pv:
                    headers["mcp-protocol-version"] = pv
                async with httpx2.AsyncClient(timeout=10.0) as raw:
                    after = await raw.post(
                        url,
                        headers=headers,
                        json={"jsonrpc": "2.0", "id": 9001, "method": "tools/list", "params": {}},
                    )
                require(after.status_code == 404, f"request with the deleted session id got HTTP {after.status_code}, want 404")
                emit_pass("delete_session", f"DELETE -> HTTP {resp['status']}, then 404")
            except Exception as e:  # noqa: BLE001
                emit_fail("delete_session", err_text(e))

    if background:
        print(f"{P} background transport errors (informational):", file=sys.stderr)
        for b in background[:10]:
            print(f"  {b}", file=sys.stderr)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python client.py <mcp endpoint url>", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1]))
