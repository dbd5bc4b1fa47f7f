"""Interop check: the official Python MCP SDK client (PyPI `mcp`, pinned in
requirements.txt) against mcpd's "demo" tool set, in either protocol era.

Usage: python client.py http://127.0.0.1:PORT/mcp [modern|legacy]

  modern (default): `Client(url, mode="auto")`. The client probes `server/discover`
      at 2026-07-28; mcpd speaks it, so the client adopts the stateless era (no
      `initialize`, no session). Checks are prefixed "py2026:".
  legacy: `Client(url, mode="legacy")`. No probe; the 2025 `initialize` handshake,
      a session, the GET stream, DELETE on close. Checks are prefixed "py:legacy:".

Prints one line per check, "PASS <prefix><name>" or "FAIL <prefix><name>: <reason>",
and exits 0 only when every check passed. run.sh counts the lines.

Written against mcp 2.3.0: `mcp.client.Client` drives a `ClientSession` over the
transport from `mcp.client.streamable_http.streamable_http_client`; an httpx2 event
hook records every HTTP exchange (see NOTES.md).
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
from mcp.client.subscriptions import ResourceUpdated
from report import Report

# resources/subscribe etc. are deprecated for 2026-07-28; the legacy run uses them on purpose.
warnings.filterwarnings("ignore")

MODERN = "2026-07-28"
SUPPORTED_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
CHECK_TIMEOUT_S = 15.0
EXPECTED_TOOLS = ["echo", "countdown", "ask_user", "summarize", "big_payload", "server_stats"]
HANDSHAKE_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"]

P = "py2026:"
REPORT = Report(P)
emit_pass, emit_fail = REPORT.emit_pass, REPORT.emit_fail


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
        content_type = response.headers.get("content-type", "")
        parsed = None
        if content_type.startswith("application/json"):
            # Reading here caches the body; the SDK's own aread() then gets the same bytes.
            # SSE bodies are left alone (a listen stream never ends).
            try:
                parsed = json.loads(await response.aread())
            except Exception:  # noqa: BLE001
                parsed = None
        self.events.append(
            {
                "kind": "response",
                "at": time.monotonic(),
                "method": response.request.method,
                "status": response.status_code,
                "content_type": content_type,
                "session_id": response.headers.get("mcp-session-id"),
                "json": parsed,
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

    def posts(self, since: int = 0) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events[since:]
            if e["kind"] == "request" and e["method"] == "POST" and isinstance(e["body"], dict)
        ]

    def posts_of(self, rpc_method: str, since: int = 0, name: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.posts(since)
            if e["body"].get("method") == rpc_method
            and (name is None or (e["body"].get("params") or {}).get("name") == name)
        ]

    def result_of(self, post: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON-RPC result of a POST answered with application/json (None for SSE answers)."""
        resp = self.response_to(post["request"])
        if resp is None or not isinstance(resp["json"], dict):
            return None
        return resp["json"].get("result")

    def session_id(self) -> str | None:
        sid = None
        for e in self.events:
            if e["kind"] == "response" and e["session_id"]:
                sid = e["session_id"]
        return sid


def require_modern_request(wire: WireLog, post: dict[str, Any], name: str | None = None) -> None:
    h = post["headers"]
    method = post["body"]["method"]
    require(h.get("mcp-protocol-version") == MODERN, f"{method} MCP-Protocol-Version {h.get('mcp-protocol-version')!r}")
    require(h.get("mcp-method") == method, f"{method} Mcp-Method {h.get('mcp-method')!r}")
    if name is not None:
        require(h.get("mcp-name") == name, f"{method} Mcp-Name {h.get('mcp-name')!r}, want {name!r}")
    require("mcp-session-id" not in h, f"{method} went out with Mcp-Session-Id")
    meta = (post["body"].get("params") or {}).get("_meta") or {}
    require(meta.get("io.modelcontextprotocol/protocolVersion") == MODERN, f"{method} _meta lacks protocolVersion: {meta}")
    require("io.modelcontextprotocol/clientCapabilities" in meta, f"{method} _meta lacks clientCapabilities")


def require_cacheable(result: dict[str, Any] | None, what: str) -> str:
    require(result is not None, f"{what}: no JSON result seen on the wire")
    assert result is not None
    require(result.get("resultType") == "complete", f"{what} resultType {result.get('resultType')!r}")
    ttl = result.get("ttlMs")
    require(isinstance(ttl, int) and ttl >= 0, f"{what} ttlMs {ttl!r}")
    require(result.get("cacheScope") in ("public", "private"), f"{what} cacheScope {result.get('cacheScope')!r}")
    return f"ttlMs {ttl} {result['cacheScope']}"


async def main(url: str, era: str) -> int:
    global P
    P = "py2026:" if era == "modern" else "py:legacy:"
    REPORT.prefix = P
    modern = era == "modern"
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
        connect_name = "discover" if modern else "initialize"
        try:
            client = await stack.enter_async_context(
                Client(
                    streamable_http_client(url, http_client=http, terminate_on_close=True),
                    mode="auto" if modern else "legacy",
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
                caps = client.server_capabilities
                posts = wire.posts()
                require(posts, "no POST went out")
                first = posts[0]
                if modern:
                    require(pv == MODERN, f"protocol version {pv}, want {MODERN} (auto mode fell back?)")
                    missing = [c for c in ("tools", "resources", "prompts") if getattr(caps, c) is None]
                    require(not missing, f"server capabilities lack {', '.join(missing)}")
                    require(first["body"].get("method") == "server/discover", f"first POST was {first['body'].get('method')!r}")
                    require(
                        first["headers"].get("mcp-protocol-version") == MODERN,
                        f"probe MCP-Protocol-Version {first['headers'].get('mcp-protocol-version')!r}",
                    )
                    resp = wire.response_to(first["request"])
                    require(resp is not None and resp["status"] == 200, f"probe answered {resp and resp['status']}")
                    assert resp is not None
                    require(not resp["session_id"], f"discover answer minted Mcp-Session-Id {resp['session_id']!r}")
                    raw = wire.result_of(first)
                    hints = require_cacheable(raw, "server/discover")
                    assert raw is not None
                    require(raw.get("supportedVersions") == SUPPORTED_VERSIONS, f"supportedVersions {raw.get('supportedVersions')}")
                    dr = client.session.discover_result
                    require(dr is not None and dr.supported_versions == SUPPORTED_VERSIONS, f"discover_result {dr!r}")
                    require(not wire.posts_of("initialize"), "an initialize went out after the probe")
                    emit_pass(connect_name, f"server {info.name} {info.version}, {pv}, {hints}, connect took {connect_s:.2f} s")
                else:
                    require(pv in HANDSHAKE_VERSIONS, f"protocol version {pv} not one of {'/'.join(HANDSHAKE_VERSIONS)}")
                    missing = [c for c in ("tools", "resources", "prompts", "logging", "completions") if getattr(caps, c) is None]
                    require(not missing, f"server capabilities lack {', '.join(missing)}")
                    require(caps.resources.subscribe is True, f"resources.subscribe is not true: {caps.resources!r}")
                    require(first["body"].get("method") == "initialize", f"first POST was {first['body'].get('method')!r}, want initialize (no probe)")
                    require("mcp-protocol-version" not in first["headers"], "initialize carried MCP-Protocol-Version")
                    require(wire.session_id(), "server gave no Mcp-Session-Id")
                    emit_pass(connect_name, f"server {info.name} {info.version}, protocol {pv}, no probe, connect took {connect_s:.2f} s")
            except Exception as e:  # noqa: BLE001
                emit_fail(connect_name, err_text(e))
        except Exception as e:  # noqa: BLE001
            emit_fail(connect_name, f"connect failed: {err_text(e)}")
            client = None

        async def connected_check(name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
            if client is None:
                emit_fail(name, f"skipped: {connect_name} failed")
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

        async def wait_in_flight_one(seconds: float = 3.0) -> dict[str, Any]:
            deadline = time.monotonic() + seconds
            while True:
                stats = await server_stats()
                if stats["in_flight_requests"] == 1 or time.monotonic() > deadline:
                    return stats
                await anyio.sleep(0.1)

        async def c_tools_list() -> str:
            assert client is not None
            n0 = len(wire.events)
            r = await client.list_tools(cache_mode="bypass")
            names = [t.name for t in r.tools]
            missing = [n for n in EXPECTED_TOOLS if n not in names]
            require(not missing, f"missing tools {', '.join(missing)}; got {', '.join(names)}")
            post = wire.posts_of("tools/list", n0)[-1]
            if not modern:
                # Informational: 2026-only result fields should stay out of session-era results (spec rec).
                raw = wire.result_of(post)
                keys = [k for k in ("resultType", "ttlMs", "cacheScope") if raw is not None and k in raw]
                note = "" if raw is None else (f", result carries {'/'.join(keys)}" if keys else ", no 2026-only result fields")
                return f"{len(names)} tools{note}"
            require_modern_request(wire, post)
            return f"{len(names)} tools, {require_cacheable(wire.result_of(post), 'tools/list')}"

        async def c_echo() -> None:
            assert client is not None
            n0 = len(wire.events)
            message = "hello from py — ünïcödé ✓"
            r = await client.call_tool("echo", {"message": message})
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == message, f"echo returned {text!r}")
            if modern:
                post = wire.posts_of("tools/call", n0, "echo")[-1]
                require_modern_request(wire, post, "echo")
                raw = wire.result_of(post)
                require(raw is None or raw.get("resultType") == "complete", f"resultType {raw and raw.get('resultType')!r}")

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

        async def c_cancel_legacy() -> str:
            assert client is not None
            n_before = len(wire.events)
            got: list[Any] = []
            started = time.monotonic()
            with anyio.move_on_after(0.3) as scope:
                got.append(await client.call_tool("countdown", {"steps": 50, "interval_ms": 100}))
            elapsed = time.monotonic() - started
            require(scope.cancelled_caught and not got, f"call was not cancelled locally: {got!r}")
            calls = wire.posts_of("tools/call", n_before, "countdown")
            require(calls, "did not see the countdown request go out")
            req_id = calls[0]["body"]["id"]
            deadline = time.monotonic() + 3.0
            stats: dict[str, Any] = {}
            cancel_sent = False
            while True:
                cancel_sent = any(
                    (e["body"].get("params") or {}).get("requestId") == req_id
                    for e in wire.posts_of("notifications/cancelled", n_before)
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

        async def c_cancel_modern() -> str:
            # 2026-07-28: the SDK aborts the request's POST (closing its stream) and swallows
            # notifications/cancelled; closing the stream is the cancellation.
            assert client is not None
            n_before = len(wire.events)
            got: list[Any] = []
            progress: list[float] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append(p)

            scope = anyio.CancelScope()

            async def run_call() -> None:
                with scope:
                    got.append(
                        await client.call_tool("countdown", {"steps": 50, "interval_ms": 100}, progress_callback=on_progress)
                    )

            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_call)
                # While it runs, a second request sees it in flight; then cancel (the SDK closes its stream).
                await anyio.sleep(0.3)
                during = await server_stats()
                scope.cancel()
            elapsed = time.monotonic() - started
            require(scope.cancelled_caught and not got, f"call was not cancelled locally: {got!r}")
            require(
                during["in_flight_requests"] >= 2,
                f"in_flight_requests was {during['in_flight_requests']} while countdown ran, want >= 2",
            )
            calls = wire.posts_of("tools/call", n_before, "countdown")
            require(calls, "did not see the countdown request go out")
            resp = wire.response_to(calls[0]["request"])
            stats = await wait_in_flight_one()
            notes = wire.posts_of("notifications/cancelled", n_before)
            require(not notes, f"the client POSTed notifications/cancelled: {[n['body'] for n in notes[:1]]}")
            require(
                stats["in_flight_requests"] == 1,
                f"in_flight_requests still {stats['in_flight_requests']} 3 s after closing the stream",
            )
            kind = resp["content_type"].split(";")[0] if resp else "no response headers"
            return f"{len(progress)} progress events, in_flight_requests {during['in_flight_requests']} while running, stream ({kind}) closed after {elapsed:.2f} s, in_flight_requests back to 1"

        async def c_elicitation() -> str | None:
            assert client is not None
            n0 = len(wire.events)
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
            if not modern:
                return None
            # MRTR on the wire: input_required, then a retry with a new id, inputResponses and requestState.
            calls = wire.posts_of("tools/call", n0, "ask_user")
            require(len(calls) == 2, f"{len(calls)} tools/call ask_user POSTs, want 2")
            b0, b1 = calls[0]["body"], calls[1]["body"]
            require(b0["id"] != b1["id"], "the retry reused the JSON-RPC id")
            first = wire.result_of(calls[0])
            p1 = b1.get("params") or {}
            if first is not None:
                require(first.get("resultType") == "input_required", f"first answer resultType {first.get('resultType')!r}")
                entry = (first.get("inputRequests") or {}).get("elicitation-1") or {}
                require(entry.get("method") == "elicitation/create", f"inputRequests lacks elicitation-1: {first.get('inputRequests')}")
                require(p1.get("requestState") == first.get("requestState"), "the retry did not echo requestState")
            else:
                require(isinstance(p1.get("requestState"), str), "the retry carries no requestState")
            resp = (p1.get("inputResponses") or {}).get("elicitation-1") or {}
            require(
                resp.get("action") == "accept" and (resp.get("content") or {}).get("answer") == "blue",
                f"retry inputResponses {p1.get('inputResponses')}",
            )
            require_modern_request(wire, calls[1], "ask_user")
            return "input_required elicitation-1 -> retry -> 'blue'"

        async def c_sampling() -> str | None:
            assert client is not None
            n0 = len(wire.events)
            before = len(samplings)
            r = await client.call_tool("summarize", {"text": "a long text that needs a summary"})
            require(len(samplings) == before + 1, f"sampling callback called {len(samplings) - before} times")
            require(not r.is_error, f"isError result: {r.model_dump_json()[:200]}")
            text = first_text(r)
            require(text == "sampled!", f"summarize returned {text!r}, want 'sampled!'")
            if not modern:
                return None
            calls = wire.posts_of("tools/call", n0, "summarize")
            require(len(calls) == 2, f"{len(calls)} tools/call summarize POSTs, want 2")
            first = wire.result_of(calls[0])
            if first is not None:
                entry = (first.get("inputRequests") or {}).get("sampling-1") or {}
                require(entry.get("method") == "sampling/createMessage", f"inputRequests lacks sampling-1: {first.get('inputRequests')}")
            p1 = calls[1]["body"].get("params") or {}
            require("sampling-1" in (p1.get("inputResponses") or {}), "retry lacks inputResponses.sampling-1")
            return "input_required sampling-1 -> retry"

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

        listen_stack = AsyncExitStack()
        listen_open: list[Any] = []

        async def c_listen() -> str:
            assert client is not None
            n0 = len(wire.events)
            start = time.monotonic()
            sub = await listen_stack.enter_async_context(client.listen(resource_subscriptions=["demo://clock"]))
            listen_open.append(sub.subscription_id)
            posts = wire.posts_of("subscriptions/listen", n0)
            require(posts, "no subscriptions/listen POST went out")
            require_modern_request(wire, posts[0])
            resp = wire.response_to(posts[0]["request"])
            require(
                resp is not None and resp["status"] == 200 and resp["content_type"].startswith("text/event-stream"),
                f"listen answered {resp and resp['status']} {resp and resp['content_type']}, want 200 SSE",
            )
            honored = sub.honored.resource_subscriptions or []
            require("demo://clock" in honored, f"acknowledged filter {sub.honored!r} lacks demo://clock")
            with anyio.fail_after(5.0):
                event = await sub.__anext__()
            require(
                isinstance(event, ResourceUpdated) and event.uri == "demo://clock",
                f"first event {event!r}, want ResourceUpdated(demo://clock)",
            )
            return f"subscription {sub.subscription_id!r} acked, update after {time.monotonic() - start:.2f} s"

        async def c_listen_close() -> str:
            require(listen_open, "skipped: no open subscription")
            n0 = len(wire.events)
            open_stats = await server_stats()
            # Leaving the listen context cancels its POST: the client closes the stream.
            await listen_stack.aclose()
            stats = await wait_in_flight_one()
            require(
                stats["in_flight_requests"] == 1,
                f"in_flight_requests still {stats['in_flight_requests']} 3 s after closing the listen stream",
            )
            notes = wire.posts_of("notifications/cancelled", n0)
            counted = (
                f"in_flight_requests {open_stats['in_flight_requests']} with the listen open"
                if open_stats["in_flight_requests"] >= 2
                else "server_stats does not count the open listen"
            )
            return f"{counted}, stream closed, in_flight_requests 1 after; {len(notes)} notifications/cancelled POSTed"

        async def c_read() -> str:
            assert client is not None
            n0 = len(wire.events)
            r = await client.read_resource("demo://clock", cache_mode="bypass")
            require(len(r.contents) > 0, f"no contents: {r.model_dump_json()[:200]}")
            post = wire.posts_of("resources/read", n0)[-1]
            require_modern_request(wire, post)
            require(post["headers"].get("mcp-name") == "demo://clock", f"Mcp-Name {post['headers'].get('mcp-name')!r}")
            return require_cacheable(wire.result_of(post), "resources/read")

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
        await connected_check("cancel", c_cancel_modern if modern else c_cancel_legacy)
        await connected_check("elicitation_mrtr" if modern else "elicitation", c_elicitation)
        await connected_check("sampling_mrtr" if modern else "sampling", c_sampling)
        await connected_check("big_payload", c_big_payload)
        if modern:
            await connected_check("listen_resource_updated", c_listen)
            await connected_check("listen_close", c_listen_close)
            await connected_check("resources_read", c_read)
        else:
            await connected_check("resource_subscribe", c_subscribe)
        await connected_check("prompts_get", c_prompt)
        await connected_check("completion", c_complete)

        # Closing the client: ClientSession exits, then streamable_http_client's finally
        # sends DELETE with the session id (terminate_on_close=True) - in the session era only.
        sid = wire.session_id()
        pv = client.protocol_version if client is not None else None
        n_before = len(wire.events)
        close_err = None
        try:
            await listen_stack.aclose()
            # No timeout scope here: the client's task groups were entered outside
            # it, and anyio forbids exiting them inside a newer cancel scope. run.sh
            # bounds the whole run instead.
            await stack.aclose()
        except Exception as e:  # noqa: BLE001 - includes ExceptionGroup from task groups
            close_err = e

        if client is None:
            emit_fail("stateless" if modern else "delete_session", f"skipped: {connect_name} failed")
        elif modern:
            try:
                require(close_err is None, f"closing the client raised {err_text(close_err) if close_err else ''}")
                other = [e["method"] for e in wire.requests() if e["method"] != "POST"]
                require(not other, f"non-POST requests went out: {', '.join(other)}")
                require(sid is None, f"an answer carried Mcp-Session-Id {sid!r}")
                reqs = [e for e in wire.posts() if "id" in e["body"] and "method" in e["body"]]
                bad = [
                    e["body"]["method"]
                    for e in reqs
                    if e["headers"].get("mcp-protocol-version") != MODERN or e["headers"].get("mcp-method") != e["body"]["method"]
                ]
                require(not bad, f"requests without matching MCP-Protocol-Version/Mcp-Method: {', '.join(bad)}")
                require(not wire.posts_of("initialize"), "initialize went out")
                non200 = []
                for e in reqs:
                    resp = wire.response_to(e["request"])
                    if resp is not None and resp["status"] != 200:
                        non200.append(f"{e['body']['method']} -> {resp['status']}")
                require(not non200, f"non-200 answers: {', '.join(non200)}")
                emit_pass("stateless", f"{len(reqs)} requests, all POST with 2026 headers, no session, no DELETE on close")
            except Exception as e:  # noqa: BLE001
                emit_fail("stateless", err_text(e))
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
                assert resp is not None
                require(resp["status"] in (200, 204), f"DELETE answered HTTP {resp['status']}")
                headers = {
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                    "mcp-session-id": sid or "",
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
    return 0 if REPORT.failed == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("modern", "legacy")):
        print("usage: python client.py <mcp endpoint url> [modern|legacy]", file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "modern"))
