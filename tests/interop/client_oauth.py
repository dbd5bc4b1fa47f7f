"""OAuth interop check: the official Python MCP SDK client (PyPI `mcp`, pinned in requirements.txt)
against an mcpd with auth on, whose tokens come from a real authorization server (tests/authserver:
npm oidc-provider). From nothing: 401 -> protected-resource metadata (RFC 9728) -> authorization-server
metadata -> dynamic client registration -> authorization code + PKCE + `resource` (RFC 8707) -> token
-> MCP calls, through `mcp.client.auth.OAuthClientProvider` (an httpx2 auth flow) with an in-memory
`TokenStorage`. The "browser" is headless: redirect_handler follows the AS's redirects with httpx2 and a
cookie jar (the AS finishes login + consent at once) until the redirect_uri carries the code, and
callback_handler hands code, state and iss (RFC 9207) back to the SDK.

Usage: MCP_URL=http://127.0.0.1:PORT/mcp python client_oauth.py [URL] [modern|legacy]

  modern (default): `Client(..., mode="auto")` (server/discover, the stateless 2026-07-28 era);
  legacy: `Client(..., mode="legacy")` (initialize, a session).

Environment (all optional but the URL), as for client-oauth.mjs:
  OAUTH_CHECKS         comma list of groups: flow,stepup,expiry,rotation,cc (dpop: reported as skipped,
                       the Python SDK has no DPoP)
  OAUTH_STEPUP_TOOL    tool needing a scope the first token lacks (default server_stats);
  OAUTH_STEPUP_ARGS    its arguments as JSON (default {})
  OAUTH_EXPECT_TOKEN   jwt | opaque
  OAUTH_CC_CLIENT_ID, OAUTH_CC_CLIENT_SECRET  the AS's client_credentials client
                       (default mcp-cc-client / mcp-cc-client-secret, tests/authserver's defaults)
  OAUTH_CC_SCOPE       scope for ClientCredentialsOAuthProvider (default: none, i.e. the challenged one)
  OAUTH_MAX_EXPIRY_WAIT  longest access-token lifetime (s) the expiry check waits out (default 30)
  OAUTH_EXPIRY_LEEWAY  seconds the server still accepts an expired token (mcpd auth.leeway_seconds;
                       default 0). The SDK itself drops a token at its expires_in (no leeway).
  OAUTH_PREFIX         check-name prefix (default "oauth:")
  OAUTH_VERBOSE=1      print every HTTP exchange to stderr

Prints "PASS <prefix><name>" / "FAIL <prefix><name>: <reason>" / "SKIP <prefix><name>: <reason>" lines,
then "oauth: N passed, M failed[, K skipped]"; exits 0 only when nothing failed and something passed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlparse

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from report import Report

warnings.filterwarnings("ignore")

URL = os.environ.get("MCP_URL") or (sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].startswith("http") else None)
ARGS = [a for a in sys.argv[1:] if not a.startswith("http")]
MODE = ARGS[0] if ARGS else "modern"
if not URL or MODE not in ("modern", "legacy"):
    print("usage: MCP_URL=http://127.0.0.1:PORT/mcp python client_oauth.py [URL] [modern|legacy]", file=sys.stderr)
    sys.exit(2)
MCP_URL = URL
STEPUP_TOOL = os.environ.get("OAUTH_STEPUP_TOOL") or "server_stats"
STEPUP_ARGS = json.loads(os.environ.get("OAUTH_STEPUP_ARGS") or "{}")
EXPECT_TOKEN = os.environ.get("OAUTH_EXPECT_TOKEN", "")
CC_CLIENT_ID = os.environ.get("OAUTH_CC_CLIENT_ID") or "mcp-cc-client"
CC_CLIENT_SECRET = os.environ.get("OAUTH_CC_CLIENT_SECRET") or "mcp-cc-client-secret"
CC_SCOPE = os.environ.get("OAUTH_CC_SCOPE") or None
MAX_EXPIRY_WAIT = float(os.environ.get("OAUTH_MAX_EXPIRY_WAIT") or 30)
EXPIRY_LEEWAY = float(os.environ.get("OAUTH_EXPIRY_LEEWAY") or 0)
P = os.environ.get("OAUTH_PREFIX", "oauth:")
VERBOSE = os.environ.get("OAUTH_VERBOSE") == "1"
if not VERBOSE:
    # The SDK logs a traceback ("OAuth flow error") for a refused authorization; the FAIL line says it.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
CHECK_TIMEOUT_S = 30.0
REDIRECT_URI = "http://127.0.0.1:9/oauth/callback"  # never contacted: the headless driver stops at it
_wanted = {c.strip() for c in (os.environ.get("OAUTH_CHECKS") or "").split(",") if c.strip()}


def wants(group: str, default: bool = True) -> bool:
    return group in _wanted if _wanted else default


REPORT = Report(P, reason_limit=600)
emit_pass, emit_fail, emit_skip = REPORT.emit_pass, REPORT.emit_fail, REPORT.emit_skip


class CheckFailed(Exception):
    pass


def err_text(e: BaseException) -> str:
    if isinstance(e, CheckFailed):
        return str(e)
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(err_text(sub) for sub in e.exceptions)
    cause = f" (caused by {err_text(e.__cause__)})" if e.__cause__ and not isinstance(e, CheckFailed) else ""
    return f"{type(e).__name__}: {e}{cause}"


def require(cond: Any, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


async def check(name: str, fn: Callable[[], Awaitable[str | None]], timeout: float = CHECK_TIMEOUT_S) -> bool:
    try:
        with anyio.fail_after(timeout):
            detail = await fn()
        emit_pass(name, detail)
        return True
    except TimeoutError:
        emit_fail(name, f"timed out after {timeout:.0f} s")
    except Exception as e:  # noqa: BLE001 - every failure is a FAIL line
        emit_fail(name, err_text(e))
    return False


def first_text(result: types.CallToolResult) -> str:
    for c in result.content:
        if isinstance(c, types.TextContent):
            return c.text
    raise CheckFailed(f"result has no text content: {result.model_dump_json()[:200]}")


def decode_jwt(token: str | None) -> dict[str, Any] | None:
    parts = (token or "").split(".")
    if len(parts) != 3:
        return None
    try:
        dec = lambda s: json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))  # noqa: E731
        return {"header": dec(parts[0]), "payload": dec(parts[1])}
    except Exception:  # noqa: BLE001
        return None


def token_summary(tokens: OAuthToken | None) -> str:
    if tokens is None:
        return "no token"
    jwt = decode_jwt(tokens.access_token)
    if not jwt:
        return f"opaque token, expires_in {tokens.expires_in}, scope {tokens.scope!r}"
    p = jwt["payload"]
    return (
        f"JWT kid {jwt['header'].get('kid')} alg {jwt['header'].get('alg')}, aud {p.get('aud')!r}, "
        f"scope {p.get('scope')!r}, exp-iat {p.get('exp', 0) - p.get('iat', 0)} s"
    )


# ---- wire log: every HTTP exchange of the SDK's httpx2 client, and of the headless browser ----------
class Wire:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def is_mcp(self, url: str) -> bool:
        return url.split("?")[0] == MCP_URL

    async def on_response(self, response: httpx2.Response) -> None:
        req = response.request
        url = str(req.url)
        form = None
        if req.method == "POST" and req.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(parse_qsl(req.content.decode()))
        body_json = None
        if req.method == "POST" and req.headers.get("content-type", "").startswith("application/json") and not self.is_mcp(url):
            try:
                body_json = json.loads(req.content)
            except Exception:  # noqa: BLE001
                body_json = None
        resp_json = None
        error_body = None
        if not self.is_mcp(url):
            try:
                raw = await response.aread()
                if response.status_code < 300:
                    resp_json = json.loads(raw)
                else:
                    error_body = raw.decode(errors="replace")[:300]
            except Exception:  # noqa: BLE001
                pass
        self.add(
            who="sdk",
            method=req.method,
            url=url,
            status=response.status_code,
            authorization=(req.headers.get("authorization") or "")[:20] or None,
            www_authenticate=response.headers.get("www-authenticate"),
            form=form,
            json=body_json,
            response_json=resp_json,
            error_body=error_body,
        )

    def add(self, **e: Any) -> None:
        e["at"] = time.monotonic()
        self.events.append(e)
        if VERBOSE:
            print(f"  http {e['who']} {e['method']} {e['url'][:160]} -> {e['status']}", file=sys.stderr)

    def since(self, t: float) -> list[dict[str, Any]]:
        return [e for e in self.events if e["at"] >= t]


wire = Wire()


def last_refusal(t: float) -> str:
    """mcpd's last 401/403 since t, for failure reasons."""
    r = next((e for e in reversed(wire.since(t)) if e["status"] in (401, 403) and wire.is_mcp(e["url"])), None)
    return f"; mcpd's last {r['status']}: {r['www_authenticate']} (request sent {r['authorization'] or 'no Authorization'})" if r else ""


def describe(events: list[dict[str, Any]]) -> str:
    out = []
    origin = urlparse(MCP_URL).netloc
    for e in events:
        u = urlparse(e["url"])
        gt = f" {e['form']['grant_type']}" if e.get("form") and "grant_type" in e["form"] else ""
        out.append(f"{e['method']} {'' if u.netloc == origin else 'AS'}{u.path}{gt} {e['status']}")
    return " → ".join(out)


# ---- in-memory TokenStorage --------------------------------------------------------------------------
class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.token_history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.token_history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


# ---- the headless browser: redirect_handler + callback_handler ------------------------------------------
class HeadlessBrowser:
    def __init__(self) -> None:
        self.http = httpx2.AsyncClient(follow_redirects=False, timeout=15.0)  # keeps the AS's cookies
        self.authorizations: list[dict[str, Any]] = []
        self._result: dict[str, str] | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        record: dict[str, Any] = {"url": authorization_url, "query": dict(parse_qsl(urlparse(authorization_url).query))}
        self.authorizations.append(record)
        hops: list[str] = []
        nxt = authorization_url
        for _ in range(15):
            if nxt.startswith(REDIRECT_URI):
                record["hops"] = hops
                record["result"] = dict(parse_qsl(urlparse(nxt).query))
                self._result = record["result"]
                return
            r = await self.http.get(nxt)
            wire.add(who="browser", method="GET", url=nxt, status=r.status_code)
            path = urlparse(nxt).path
            hops.append(f"{'/'.join(path.split('/')[:2])}{'/…' if path.count('/') > 1 else ''} {r.status_code}")
            loc = r.headers.get("location")
            if 300 <= r.status_code < 400 and loc:
                nxt = urljoin(nxt, loc)
                continue
            raise CheckFailed(f"authorization stopped at {path} with HTTP {r.status_code} ({' → '.join(hops)}): {r.text[:300]}")
        raise CheckFailed(f"authorization: too many redirects ({' → '.join(hops)})")

    async def callback_handler(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise CheckFailed("callback_handler called without a finished authorization")
        if "error" in result:
            asked = self.authorizations[-1]["query"].get("scope")
            raise CheckFailed(
                f"authorization refused by the AS: {result['error']}: {result.get('error_description', '')} (asked scope={asked!r})"
            )
        return AuthorizationCodeResult(code=result["code"], state=result.get("state"), iss=result.get("iss"))


found: dict[str, Any] = {}


async def discover_as_url() -> str | None:
    """The first authorization server mcpd's protected-resource metadata names (no SDK)."""
    if found.get("as_url"):
        return found["as_url"]
    async with httpx2.AsyncClient(timeout=10.0) as raw:
        r = await raw.post(MCP_URL, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"accept": "application/json, text/event-stream"})
        w = r.headers.get("www-authenticate", "")
        start = w.find('resource_metadata="')
        if start < 0:
            return None
        prm_url = w[start + len('resource_metadata="') :].split('"', 1)[0]
        prm = (await raw.get(prm_url)).json()
        found["as_url"] = prm["authorization_servers"][0]
        return found["as_url"]


def client_for(http: httpx2.AsyncClient) -> Client:
    return Client(
        streamable_http_client(MCP_URL, http_client=http, terminate_on_close=True),
        mode="auto" if MODE == "modern" else "legacy",
        read_timeout_seconds=20.0,
        client_info=types.Implementation(name="mcpd-interop-py-oauth", version="0.0.0"),
    )


async def in_client(http: httpx2.AsyncClient, fn: Callable[[Client], Awaitable[Any]]) -> Any:
    """Runs fn with a fresh Client on `http` (so on its OAuth provider and stored tokens). Each check
    gets its own, properly nested in the check's cancel scope: a failure inside the transport (a refused
    re-authorization raises in its task group) then ends only that check."""
    async with client_for(http) as c:
        return await fn(c)


def echo_says(http: httpx2.AsyncClient, message: str) -> Callable[[], Awaitable[str]]:
    """A check that `echo` returns `message` through `http`."""

    async def run() -> str:
        r = await in_client(http, lambda c: c.call_tool("echo", {"message": message}))
        require(message in first_text(r), f"echo said {first_text(r)!r}")
        return "ok"

    return run


def _mk_wait(value: Any) -> Callable[[Client], Awaitable[Any]]:
    async def fn(c: Client) -> Any:
        return value(c)

    return fn


async def auth_code_part() -> None:
    storage = MemoryStorage()
    browser = HeadlessBrowser()
    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=OAuthClientMetadata(
            client_name="mcpd-interop-py-oauth",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=120.0), event_hooks={"response": [wire.on_response]})
    async with http, browser.http:
        t0 = time.monotonic()

        async def connect() -> str:
            try:
                pv = await in_client(http, _mk_wait(lambda c: c.protocol_version))
            except Exception as e:  # noqa: BLE001
                raise CheckFailed(f"{err_text(e)}{last_refusal(t0)}") from None
            return f"{pv}: {describe([e for e in wire.since(t0) if e['who'] == 'sdk'][:12])}"

        connected = await check("connect", connect)

        async def discovery() -> str:
            log = wire.since(t0)
            prm = next((e for e in log if "/.well-known/oauth-protected-resource" in e["url"] and e["status"] == 200), None)
            require(prm, f"no protected-resource metadata fetched: {describe(log)}")
            found["prm"] = prm["response_json"]
            found["as_url"] = found["prm"]["authorization_servers"][0]
            asm = next(
                (
                    e
                    for e in log
                    if ("/.well-known/oauth-authorization-server" in e["url"] or "/.well-known/openid-configuration" in e["url"])
                    and e["status"] == 200
                ),
                None,
            )
            require(asm, f"no AS metadata fetched: {describe(log)}")
            found["asm"] = asm["response_json"]
            require(found["asm"]["issuer"] == found["as_url"], f"AS issuer {found['asm']['issuer']} != PRM's {found['as_url']}")
            return (
                f"PRM resource={found['prm']['resource']} as={found['as_url']} scopes_supported={found['prm'].get('scopes_supported')}; "
                f"AS metadata from {urlparse(asm['url']).path}"
            )

        await check("discovery", discovery)

        async def registration() -> str:
            reg = next(
                (e for e in wire.since(t0) if e.get("json") is not None and e["method"] == "POST" and e["url"].rstrip("/").endswith("/reg")),
                None,
            )
            require(reg, "no dynamic client registration went out")
            require(reg["status"] in (200, 201), f"registration answered {reg['status']}: {reg.get('error_body')}")
            require(storage.client_info and storage.client_info.client_id, "no client info stored")
            return (
                f"client_id {storage.client_info.client_id}, registered scope {reg['json'].get('scope')!r}, "
                f"auth method {storage.client_info.token_endpoint_auth_method}"
            )

        await check("registration", registration)

        async def authorization_request() -> str:
            require(browser.authorizations, "the SDK never called redirect_handler")
            a = browser.authorizations[0]
            q = a["query"]
            require(q.get("code_challenge_method") == "S256" and q.get("code_challenge"), f"PKCE missing: {q.get('code_challenge_method')}")
            require(q.get("resource") == (found.get("prm") or {}).get("resource"), f"resource {q.get('resource')!r}, want the PRM's")
            require(q.get("state"), "no state")
            res = a.get("result") or {}
            require(res.get("code"), f"no code: {res}")
            return f"scope={q.get('scope')!r} resource={q.get('resource')} S256; headless: {' → '.join(a['hops'])}; iss={res.get('iss')}"

        await check("authorization_request", authorization_request)

        async def token() -> str:
            tok = next((e for e in wire.since(t0) if (e.get("form") or {}).get("grant_type") == "authorization_code"), None)
            require(tok, "no authorization_code token request went out")
            require(tok["status"] == 200, f"token endpoint answered {tok['status']}: {tok.get('error_body')}")
            require(tok["form"].get("code_verifier"), "no code_verifier")
            require(tok["form"].get("resource") == found["prm"]["resource"], f"token request resource {tok['form'].get('resource')!r}")
            t = storage.tokens
            require(t and t.access_token, "no token stored")
            jwt = decode_jwt(t.access_token)
            if EXPECT_TOKEN == "opaque":
                require(not jwt, "expected an opaque token, got a JWT")
            if EXPECT_TOKEN == "jwt":
                require(jwt, "expected a JWT, got an opaque token")
            if jwt:
                p = jwt["payload"]
                aud = p.get("aud") if isinstance(p.get("aud"), list) else [p.get("aud")]
                require(found["prm"]["resource"] in aud, f"aud {p.get('aud')!r}")
                require(p.get("iss") == found["asm"]["issuer"], f"iss {p.get('iss')!r}")
            return f"{token_summary(t)}, {'with' if t.refresh_token else 'no'} refresh token"

        await check("token", token)

        if not connected:
            for n in ("tools_list", "echo"):
                emit_skip(n, "connect failed")
            return

        async def tools_list() -> str:
            r = await in_client(http, lambda c: c.list_tools())
            names = [t.name for t in r.tools]
            require("echo" in names, f"echo not listed: {names}")
            return f"{len(names)} tools; {STEPUP_TOOL} {'listed' if STEPUP_TOOL in names else 'hidden'}"

        await check("tools_list", tools_list)

        await check("echo", echo_says(http, "hello oauth"))

        if wants("stepup"):

            async def stepup() -> str:
                t = time.monotonic()
                before = len(browser.authorizations)
                try:
                    r = await in_client(http, lambda c: c.call_tool(STEPUP_TOOL, STEPUP_ARGS))
                except Exception as e:  # noqa: BLE001
                    forbid = next((x for x in wire.since(t) if x["status"] == 403), None)
                    asked = [a["query"].get("scope") for a in browser.authorizations[before:]]
                    raise CheckFailed(
                        f"{err_text(e)}; 403 challenge: {forbid and forbid['www_authenticate']}; re-authorization asked scope {asked}; "
                        f"client registered with scope {storage.client_info and storage.client_info.scope!r}"
                    ) from None
                require(not r.is_error, f"tool error: {r.model_dump_json()[:200]}")
                forbid = next((x for x in wire.since(t) if x["status"] == 403), None)
                require(forbid, f"{STEPUP_TOOL} succeeded without a 403 first")
                asked = [a["query"].get("scope") for a in browser.authorizations[before:]]
                return f"403 {forbid['www_authenticate']}; re-authorized asking {asked}; new {token_summary(storage.tokens)}"

            await check("stepup", stepup)

        if wants("expiry"):
            t_ = storage.tokens
            jwt = decode_jwt(t_.access_token if t_ else None)
            lifetime = (jwt["payload"]["exp"] - time.time()) if jwt else float(t_.expires_in if t_ and t_.expires_in else 1e9)
            if lifetime > MAX_EXPIRY_WAIT:
                emit_skip(
                    "expiry",
                    f"access token lives {t_ and t_.expires_in} s (> OAUTH_MAX_EXPIRY_WAIT {MAX_EXPIRY_WAIT:.0f}); start the AS with AS_TOKEN_TTL=5",
                )
            else:

                async def expiry() -> str:
                    await anyio.sleep(max(0.0, lifetime) + EXPIRY_LEEWAY + 1.5)
                    t = time.monotonic()
                    before = len(browser.authorizations)
                    try:
                        r = await in_client(http, lambda c: c.call_tool("echo", {"message": "after expiry"}))
                    except Exception as e:  # noqa: BLE001
                        c401 = next((x for x in wire.since(t) if x["status"] == 401), None)
                        asked = [a["query"].get("scope") for a in browser.authorizations[before:]]
                        raise CheckFailed(
                            f"{err_text(e)}; 401 challenge: {c401 and c401['www_authenticate']}; re-authorization asked scope {asked}"
                        ) from None
                    require("after expiry" in first_text(r), f"echo said {first_text(r)!r}")
                    log = wire.since(t)
                    c401 = next((x for x in log if x["status"] == 401), None)
                    grants = [f"{x['form']['grant_type']} {x['status']}" for x in log if (x.get("form") or {}).get("grant_type")]
                    asked = [a["query"].get("scope") for a in browser.authorizations[before:]]
                    return (
                        (f"401 {c401['www_authenticate']}; " if c401 else "no 401 (the SDK tracks expires_in and acted first); ")
                        + 
                        f"then {', '.join(grants) or 'no token request'}" + (f"; re-authorization asked scope {asked}" if asked else "")
                    )

                await check("expiry", expiry, lifetime + EXPIRY_LEEWAY + 30)

        if wants("rotation"):

            async def key_rotation() -> str:
                as_url = found.get("as_url") or await discover_as_url()
                require(as_url, "AS URL unknown")
                async with httpx2.AsyncClient(timeout=10.0) as raw:
                    r = await raw.post(urljoin(as_url, "/_test/rotate-keys"))
                require(r.status_code == 200, f"POST /_test/rotate-keys answered {r.status_code}")
                rot = r.json()
                old = decode_jwt(storage.tokens.access_token if storage.tokens else None)
                # Forget the tokens (and any refresh token): the next call gets a 401 and a new token.
                storage.tokens = None
                provider.context.clear_tokens()
                t = time.monotonic()
                res = await in_client(http, lambda c: c.call_tool("echo", {"message": "new key"}))
                require("new key" in first_text(res), f"echo said {first_text(res)!r}")
                new = decode_jwt(storage.tokens.access_token if storage.tokens else None)
                if new:
                    require(new["header"].get("kid") == rot["signing_kid"], f"new token kid {new['header'].get('kid')}, want {rot['signing_kid']}")
                return (
                    f"{rot['previous_kid']} → {rot['signing_kid']}; token kid {old and old['header'].get('kid')} → {new and new['header'].get('kid')}; "
                    f"{describe([e for e in wire.since(t) if e['who'] == 'sdk'])}"
                )

            await check("key_rotation", key_rotation)


async def client_credentials_part() -> None:
    as_url = found.get("as_url")
    try:
        as_url = as_url or await discover_as_url()
    except Exception:  # noqa: BLE001
        as_url = None
    storage = MemoryStorage()
    provider = ClientCredentialsOAuthProvider(
        server_url=MCP_URL,
        storage=storage,
        client_id=CC_CLIENT_ID,
        client_secret=CC_CLIENT_SECRET,
        scope=CC_SCOPE,
        issuer=as_url,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=120.0), event_hooks={"response": [wire.on_response]})
    async with http:
        t0 = time.monotonic()

        def cc_requests(since_t: float) -> list[dict[str, Any]]:
            return [e for e in wire.since(since_t) if (e.get("form") or {}).get("grant_type") == "client_credentials"]

        async def cc_connect() -> str:
            try:
                await in_client(http, _mk_wait(lambda c: c.protocol_version))
            except Exception as e:  # noqa: BLE001
                raise CheckFailed(f"{err_text(e)}{last_refusal(t0)}") from None
            reqs = cc_requests(t0)
            require(reqs, "no client_credentials token request went out")
            f = reqs[0]["form"]
            return f"{describe(wire.since(t0)[:8])}; asked scope={f.get('scope')!r} resource={f.get('resource')}; {token_summary(storage.tokens)}"

        if not await check("cc_connect", cc_connect):
            return

        async def cc_token() -> str:
            reqs = cc_requests(t0)
            require(reqs and reqs[0]["form"].get("resource"), "the client_credentials request carried no resource")
            jwt = decode_jwt(storage.tokens.access_token if storage.tokens else None)
            if jwt:
                p = jwt["payload"]
                aud = p.get("aud") if isinstance(p.get("aud"), list) else [p.get("aud")]
                require(reqs[0]["form"]["resource"] in aud, f"aud {p.get('aud')!r}")
                require(p.get("client_id") == CC_CLIENT_ID, f"client_id {p.get('client_id')!r}")
            return token_summary(storage.tokens)

        await check("cc_token", cc_token)

        await check("cc_echo", echo_says(http, "machine"))

        if wants("stepup"):

            async def cc_stepup() -> str:
                t = time.monotonic()
                try:
                    r = await in_client(http, lambda c: c.call_tool(STEPUP_TOOL, STEPUP_ARGS))
                except Exception as e:  # noqa: BLE001
                    forbid = next((x for x in wire.since(t) if x["status"] == 403), None)
                    asked = [x["form"].get("scope") for x in cc_requests(t)]
                    raise CheckFailed(
                        f"{err_text(e)}; 403 challenge: {forbid and forbid['www_authenticate']}; client_credentials requests asked {asked}"
                    ) from None
                require(not r.is_error, f"tool error: {r.model_dump_json()[:200]}")
                forbid = next((x for x in wire.since(t) if x["status"] == 403), None)
                asked = [x["form"].get("scope") for x in cc_requests(t)]
                return f"403 {forbid['www_authenticate'] if forbid else '(none)'}; client_credentials asked {asked}; {token_summary(storage.tokens)}"

            await check("cc_stepup", cc_stepup)


async def main() -> None:
    if wants("flow") or wants("stepup") or wants("expiry") or wants("rotation"):

        async def challenge() -> str:
            async with httpx2.AsyncClient(timeout=10.0) as raw:
                r = await raw.post(
                    MCP_URL,
                    json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
                    headers={"accept": "application/json, text/event-stream"},
                )
            w = r.headers.get("www-authenticate", "")
            require(r.status_code == 401, f"status {r.status_code}, want 401")
            require(w.lower().startswith("bearer") and "resource_metadata=" in w, f"challenge {w!r}")
            return f"401, WWW-Authenticate: {w}"

        await check("challenge", challenge)
        await auth_code_part()
    if wants("cc"):
        await client_credentials_part()
    if wants("dpop", False):
        emit_skip("dpop", "the Python SDK (mcp 2.x) has no DPoP support; client-oauth.mjs covers DPoP")


async def run_all() -> None:
    limit = float(os.environ.get("OAUTH_GLOBAL_TIMEOUT_S") or 110)
    try:
        with anyio.fail_after(limit):
            await main()
    except TimeoutError:
        emit_fail("run", f"global timeout: not finished after {limit:.0f} s")


if __name__ == "__main__":
    try:
        anyio.run(run_all)
    except Exception as e:  # noqa: BLE001
        if VERBOSE:
            import traceback

            traceback.print_exc()
        emit_fail("run", err_text(e))
    r = REPORT
    print(f"oauth: {r.passed} passed, {r.failed} failed" + (f", {r.skipped} skipped" if r.skipped else ""), flush=True)
    sys.exit(0 if r.failed == 0 and r.passed > 0 else 1)
