"""The tool-author examples (crates/mcpd/examples) called by the official
Python MCP SDK client (PyPI `mcp`, pinned in requirements.txt), in either
protocol era: what a new user's server built from docs/extending.md must
do for a real client.

Usage: python examples.py URL EXAMPLE [modern|legacy]

  EXAMPLE: minimal (one tool, `add`), weather (a tool over an arguments
      struct, with progress), confirm (a typed question to the user), counter
      (state shared by two tools), report (a task-capable tool, called
      without declaring the Tasks extension: a plain result) or station (two
      tools, a resource, a template, a prompt). modern: `Client(url, mode="auto")`, which adopts
      2026-07-28 (stateless); legacy: the 2025 session era.

Prints "PASS <prefix><name>" / "FAIL <prefix><name>: reason" per check and
exits 0 only when every check passed (run by examples.sh).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from report import Report

warnings.filterwarnings("ignore")


class CheckFailed(Exception):
    pass


def require(cond: Any, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def text_of(result: types.CallToolResult) -> str:
    for c in result.content:
        if isinstance(c, types.TextContent):
            return c.text
    raise CheckFailed(f"no text content: {result.model_dump_json()[:200]}")


async def main(url: str, example: str, modern: bool) -> int:
    report = Report(f"py{'2026' if modern else ':legacy'}:{example}:")

    async def check(name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
        try:
            with anyio.fail_after(15):
                report.emit_pass(name, await fn())
        except Exception as e:  # noqa: BLE001 - every failure is a FAIL line
            report.emit_fail(name, f"{type(e).__name__}: {e}")

    progress: list[float] = []
    asked: list[Any] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        # The first question is confirmed, the next declined.
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="decline")

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    async with Client(
        streamable_http_client(url, terminate_on_close=True),
        mode="auto" if modern else "legacy",
        read_timeout_seconds=10.0,
        elicitation_callback=on_elicit,
        client_info=types.Implementation(name="mcpd-examples-py", version="0.0.0"),
    ) as client:
        want = "2026-07-28" if modern else "2025-11-25"
        await check("era", lambda: era(client, want))

        async def add() -> str:
            r = await client.call_tool("add", {"a": 2, "b": 40})
            require(not r.is_error and text_of(r) == "42", f"add: {r.model_dump_json()[:200]}")
            tools = await client.list_tools()
            add = next(t for t in tools.tools if t.name == "add")
            schema = add.input_schema
            require(schema.get("required") == ["a", "b"], f"input schema {schema}")
            return "2 + 40 = 42"

        async def weather() -> str:
            r = await client.call_tool("forecast", {"city": "Lisbon", "days": 3}, progress_callback=on_progress)
            require(text_of(r) == "Lisbon: sunny for the next 3 days", f"forecast: {r.model_dump_json()[:200]}")
            require(progress == [1.0, 2.0, 3.0], f"progress {progress}")
            bad = await client.call_tool("forecast", {"city": "Lisbon", "days": 9})
            require(bad.is_error and "between 1 and 7" in text_of(bad), f"days 9: {bad.model_dump_json()[:200]}")
            return "3 progress notifications; days 9 refused"

        async def confirm() -> str:
            r = await client.call_tool("transfer", {"amount": 10})
            require(text_of(r) == "sent 10 €", f"confirmed: {r.model_dump_json()[:200]}")
            schema = asked[0].requested_schema
            require(schema["properties"]["confirm"]["type"] == "boolean", f"schema {schema}")
            r = await client.call_tool("transfer", {"amount": 20})
            require(text_of(r) == "not sent", f"declined: {r.model_dump_json()[:200]}")
            return f"{len(asked)} questions: confirmed, then declined"

        async def counter() -> str:
            before = int(text_of(await client.call_tool("visits", {})))
            first = int(text_of(await client.call_tool("visit", {})))
            second = int(text_of(await client.call_tool("visit", {})))
            after = int(text_of(await client.call_tool("visits", {})))
            require((first, second, after) == (before + 1, before + 2, before + 2), f"{before} {first} {second} {after}")
            return f"visits {before} -> {after}"

        async def report_() -> str:
            r = await client.call_tool("report", {"topic": "Tides", "sections": 3}, progress_callback=on_progress)
            text = text_of(r)
            require(not r.is_error and text.startswith("# Tides") and "## Part 3 of 3" in text, f"report: {r.model_dump_json()[:200]}")
            require(progress == [1.0, 2.0, 3.0], f"progress {progress}")
            bad = await client.call_tool("report", {"topic": "Tides", "sections": 9})
            require(bad.is_error and "between 1 and 5" in text_of(bad), f"sections 9: {bad.model_dump_json()[:200]}")
            return "undeclared: a plain result, with 3 progress notifications"

        if example == "report":
            await check("report", report_)
            return 0 if report.failed == 0 else 1
        if example == "counter":
            await check("shared_state", counter)
            return 0 if report.failed == 0 else 1
        if example == "confirm":
            await check("transfer", confirm)
            return 0 if report.failed == 0 else 1
        if example == "weather":
            await check("forecast", weather)
            return 0 if report.failed == 0 else 1
        await check("add", add)
        if example == "minimal":
            return 0 if report.failed == 0 else 1

        async def forecast() -> str:
            r = await client.call_tool("forecast", {"city": "Lisbon", "days": 2}, progress_callback=on_progress)
            require(text_of(r) == "Lisbon: sunny for 2 days", f"forecast: {r.model_dump_json()[:200]}")
            require(progress == [1.0, 2.0], f"progress {progress}")
            return "2 progress notifications"

        async def resource() -> str:
            r = await client.read_resource("config://station")
            c = r.contents[0]
            require(getattr(c, "text", None) == '{"units": "metric"}', f"contents {r.model_dump_json()[:200]}")
            require(c.mime_type == "application/json", f"mime {c.mime_type}")
            return "config://station"

        async def template() -> str:
            ts = await client.list_resource_templates()
            require(
                [t.uri_template for t in ts.resource_templates] == ["weather://{city}/today"],
                f"templates {ts.model_dump_json()[:200]}",
            )
            r = await client.read_resource("weather://Lima/today")
            require(getattr(r.contents[0], "text", None) == "Lima: 21 °C", f"contents {r.model_dump_json()[:200]}")
            done = await client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="weather://{city}/today"),
                {"name": "city", "value": "L"},
            )
            require(done.completion.values == ["Lisbon", "London", "Lima"], f"completion {done.completion.values}")
            return "weather://Lima/today, city completed"

        async def prompt() -> str:
            ps = await client.list_prompts()
            p = next(p for p in ps.prompts if p.name == "plan")
            args = {a.name: a.required for a in p.arguments or []}
            require(args == {"city": True, "days": False}, f"arguments {args}")
            r = await client.get_prompt("plan", {"city": "Lisbon", "days": "4"})
            m = r.messages[0]
            require(m.role == "user" and getattr(m.content, "text", None) == "Plan 4 days in Lisbon.", f"{r.model_dump_json()[:200]}")
            done = await client.complete(types.PromptReference(type="ref/prompt", name="plan"), {"name": "city", "value": "Lo"})
            require(done.completion.values == ["London"], f"completion {done.completion.values}")
            return "plan rendered, city completed"

        await check("forecast_progress", forecast)
        await check("resource", resource)
        await check("template", template)
        await check("prompt", prompt)
    return 0 if report.failed == 0 else 1


async def era(client: Client, want: str) -> str:
    require(client.protocol_version == want, f"protocol version {client.protocol_version}, want {want}")
    info = client.server_info
    require(info is not None and info.name, f"server info {info!r}")
    return f"{want}, serverInfo {info.name} {info.version}"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(anyio.run(main, sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "modern") == "modern"))
