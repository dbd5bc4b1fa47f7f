#!/usr/bin/env python3
"""Jepsen-style chaos run for mcpd: three replicas on one Redis behind nginx.

Everything runs on 127.0.0.1 in a temp dir this script owns (removed at
exit unless --keep; every child is killed, also on Ctrl-C or failure):

* one redis-server with the append-only file on;
* three mcpd replicas (MCPD_STORE_BACKEND=redis), each on a fixed port,
  restarted on that same port after a fault stopped it;
* nginx, round robin over the replicas with no affinity, retrying a request
  whose replica is dead on the next one (`proxy_next_upstream ...
  non_idempotent`).

`--clients` threads each open an MCP session through nginx and loop
`countdown` calls (progress as SSE), resuming with `Last-Event-ID` when a
stream breaks, when the server closes it after a `retry:` hint, and on
purpose in 15 % of calls. Every 5-15 s a fault hits: SIGKILL or SIGTERM one
replica (then restart it), restart Redis (SHUTDOWN NOSAVE, start again: the
AOF reloads), or pause Redis for 2 s (SIGSTOP/SIGCONT). After `--duration`
seconds the faults stop, the cluster settles, and 50 fresh calls must all
succeed.

Every call is checked against the invariants below (the `check_*`
functions); a Markdown table goes to stdout (and, with --out DIR, to
DIR/summary.md with DIR/summary.json, DIR/calls.jsonl and the logs).
Exit status: 0 when every invariant held, 1 when one did not, 2 when the
cluster could not be started.

    python3 loadtest/chaos.py --mcpd target/debug/mcpd --duration 60

Standard library only (Python 3.11+).
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

PROTOCOL_VERSION = "2025-11-25"
REPO_ROOT = Path(__file__).resolve().parent.parent
FINAL_CALLS = 50
DELIBERATE_DROP_RATIO = 0.15
CALL_SLACK_S = 40.0  # a call's deadline: steps * interval + this
SETTLE_S = 5.0
REPLICAS = 3

T0 = time.monotonic()


def now() -> float:
    """Seconds since the script started."""
    return time.monotonic() - T0


def log(msg: str) -> None:
    """A progress line on stderr, with the elapsed time and the wall clock."""
    sys.stderr.write(f"[{now():7.1f}s {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def free_ports(n: int) -> list[int]:
    """`n` distinct free TCP ports on 127.0.0.1 (all held until all are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def short(text: str, n: int = 100) -> str:
    """`text` on one line, at most `n` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple[int, str]:
    """GET http://127.0.0.1:port/path -> (status, body); (0, error) when no answer."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read(4096).decode("utf-8", "replace")
        c.close()
        return r.status, body
    except (OSError, http.client.HTTPException) as e:
        return 0, repr(e)


def tail(path: Path, lines: int = 15) -> str:
    """The last `lines` lines of a log file."""
    try:
        return "\n".join(path.read_text("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


# --------------------------------------------------------------------------
# The cluster: Redis, three mcpd replicas, nginx.
# --------------------------------------------------------------------------


class Proc:
    """A child in its own process group (so a terminal's Ctrl-C reaches only us)."""

    def __init__(self, name: str):
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.lock = threading.RLock()
        self.expected_exit = False  # we signalled it
        self.starts = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def wait_exit(self, bound: float) -> int | None:
        """Waits up to `bound` s; the exit status, or None while still running."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=max(0.0, bound))
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self) -> None:
        """SIGCONT then SIGKILL to its whole process group, then reap (bounded)."""
        if self.proc is None:
            return
        self.expected_exit = True
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        self.wait_exit(5)


class Cluster:
    """Owns the temp dir and every child; `cleanup()` is idempotent."""

    def __init__(self, mcpd: str, keep: bool, stats: "Stats"):
        self.mcpd = mcpd
        self.keep = keep
        self.stats = stats
        self.dir = Path(tempfile.mkdtemp(prefix="mcpd-chaos-"))
        ports = free_ports(REPLICAS + 2)
        self.redis_port, self.nginx_port = ports[0], ports[1]
        self.replica_ports = ports[2:]
        self.redis = Proc("redis")
        self.replicas = [Proc(f"r{i + 1}") for i in range(REPLICAS)]
        self.nginx = Proc("nginx")
        self.stopping = threading.Event()  # set once cleanup begins
        self._cleaned = False
        self._clean_lock = threading.Lock()

    # ---- Redis ----------------------------------------------------------

    def start_redis(self, bound: float = 10.0) -> bool:
        """Starts redis-server (AOF on) on its port and dir; True once it answers PING."""
        with self.redis.lock:
            logf = open(self.dir / "redis.log", "ab")
            self.redis.expected_exit = False
            self.redis.proc = subprocess.Popen(
                [
                    "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else "redis-server",
                    "--port", str(self.redis_port),
                    "--bind", "127.0.0.1",
                    "--appendonly", "yes",
                    "--save", "",
                    "--dir", str(self.dir),
                    "--daemonize", "no",
                ],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            logf.close()
            self.redis.starts += 1
            if self.stopping.is_set():  # cleanup began meanwhile: do not leave it behind
                self.redis.kill_group()
                return False
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if self.redis_cmd("PING") == "+PONG":
                return True
            if not self.redis.running():
                return False
            time.sleep(0.05)
        return False

    def redis_cmd(self, *args: str, timeout: float = 1.0) -> str | None:
        """Sends one command over RESP; the first reply line, or None."""
        payload = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
        try:
            with socket.create_connection(("127.0.0.1", self.redis_port), timeout=timeout) as s:
                s.sendall(payload.encode())
                data = s.recv(256)
                return data.split(b"\r\n", 1)[0].decode("utf-8", "replace") if data else ""
        except OSError:
            return None

    def stop_redis(self) -> str:
        """SHUTDOWN NOSAVE (AOF still flushed), SIGTERM then SIGKILL as fallbacks."""
        with self.redis.lock:
            self.redis.expected_exit = True
            self.redis.signal(signal.SIGCONT)
            how = "SHUTDOWN NOSAVE"
            self.redis_cmd("SHUTDOWN", "NOSAVE", timeout=2.0)
            if self.redis.wait_exit(5) is None:
                how = "SIGTERM"
                self.redis.signal(signal.SIGTERM)
                if self.redis.wait_exit(5) is None:
                    how = "SIGKILL"
                    self.redis.kill_group()
            return how

    # ---- mcpd replicas ---------------------------------------------------

    def replica_log(self, i: int) -> Path:
        return self.dir / f"mcpd-{self.replicas[i].name}.log"

    def start_replica(self, i: int, bound: float = 20.0, need_ready: bool = False) -> bool:
        """Starts replica `i` on its fixed port; True once /healthz (or /readyz) answers 200."""
        r, port = self.replicas[i], self.replica_ports[i]
        env = dict(os.environ)
        env.update(
            MCPD_STORE_BACKEND="redis",
            MCPD_STORE_REDIS_URL=f"redis://127.0.0.1:{self.redis_port}",
            MCPD_SERVER_SHUTDOWN_DELAY_SECS="0",
            MCPD_SERVER_SHUTDOWN_GRACE_SECS="1",
            MCPD_LOG_LEVEL="info",
        )
        with r.lock:
            if self.stopping.is_set():
                return False
            path = self.replica_log(i)
            with open(path, "ab") as f:
                f.write(f"=== chaos: start #{r.starts + 1} at {now():.1f}s ({time.strftime('%H:%M:%S')}) ===\n".encode())
            logf = open(path, "ab")
            r.expected_exit = False
            r.proc = subprocess.Popen(
                [self.mcpd, "--listen", f"127.0.0.1:{port}"],
                env=env, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            logf.close()
            r.starts += 1
            if self.stopping.is_set():  # cleanup began meanwhile: do not leave it behind
                r.kill_group()
                return False
        return self.wait_replica(i, bound, need_ready)

    def wait_replica(self, i: int, bound: float, need_ready: bool) -> bool:
        """Polls the replica's /readyz (200) or, unless `need_ready`, /healthz."""
        r, port = self.replicas[i], self.replica_ports[i]
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and not self.stopping.is_set():
            if not r.running():
                return False
            status, _ = http_get(port, "/readyz" if need_ready else "/healthz", timeout=1.0)
            if status == 200:
                return True
            time.sleep(0.1)
        return False

    def stop_replica(self, i: int, sig: int, bound: float) -> tuple[int | None, float]:
        """Signals replica `i` (marked as expected) and waits up to `bound` s: (status, seconds)."""
        r = self.replicas[i]
        r.expected_exit = True
        t = time.monotonic()
        r.signal(sig)
        status = r.wait_exit(bound)
        return status, time.monotonic() - t

    # ---- nginx ---------------------------------------------------------

    def nginx_conf(self) -> str:
        p = self.dir / "nginx"
        servers = "\n".join(
            f"        server 127.0.0.1:{port} max_fails=0;" for port in self.replica_ports
        )
        return f"""# Written by loadtest/chaos.py.
worker_processes 1;
daemon off;
pid {p}/nginx.pid;
error_log {p}/error.log notice;
events {{ worker_connections 4096; }}
http {{
    log_format chaos '$msec $request_method $status up=$upstream_addr upst=$upstream_status '
                     'rt=$request_time sid=$http_mcp_session_id lei=$http_last_event_id';
    access_log {p}/access.log chaos;
    client_body_temp_path {p}/client_body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    upstream mcpd {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{self.nginx_port};
        location / {{
            proxy_pass http://mcpd;
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 300s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502 non_idempotent;
            add_header X-Chaos-Upstream $upstream_addr always;
        }}
    }}
}}
"""

    def start_nginx(self, bound: float = 10.0) -> bool:
        """Starts nginx in the foreground with its prefix in the temp dir; True once it proxies."""
        prefix = self.dir / "nginx"
        prefix.mkdir(exist_ok=True)
        conf = prefix / "nginx.conf"
        conf.write_text(self.nginx_conf())
        binary = "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else shutil.which("nginx")
        if not binary:
            raise SystemExit("nginx not found (apt-get install -y nginx)")
        logf = open(prefix / "stderr.log", "ab")
        self.nginx.proc = subprocess.Popen(
            [binary, "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        logf.close()
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if not self.nginx.running():
                return False
            if http_get(self.nginx_port, "/healthz", timeout=1.0)[0] == 200:
                return True
            time.sleep(0.05)
        return False

    # ---- whole cluster ---------------------------------------------------

    def snapshot_binary(self) -> None:
        """Hard-links (else copies) the mcpd binary into the temp dir: a rebuild
        during the run (cargo replaces the file) must not mix versions."""
        src = Path(self.mcpd)
        st = src.stat()
        self.binary_info = {"path": str(src), "size": st.st_size,
                            "mtime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))}
        dst = self.dir / "mcpd"
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        self.mcpd = str(dst)

    def start(self) -> None:
        """Redis, the replicas (in parallel, each until ready), nginx; raises on failure."""
        log(f"temp dir {self.dir}")
        self.snapshot_binary()
        log(f"mcpd binary {self.binary_info['path']} ({self.binary_info['mtime']})")
        if not self.start_redis():
            raise RuntimeError(f"redis-server did not start:\n{tail(self.dir / 'redis.log')}")
        log(f"redis-server pid {self.redis.pid} on :{self.redis_port} (appendonly yes)")
        ok = [False] * REPLICAS

        def one(i: int) -> None:
            ok[i] = self.start_replica(i, bound=60.0, need_ready=True)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(REPLICAS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, good in enumerate(ok):
            if not good:
                raise RuntimeError(
                    f"mcpd replica {self.replicas[i].name} did not become ready:\n{tail(self.replica_log(i))}"
                )
            log(f"mcpd {self.replicas[i].name} pid {self.replicas[i].pid} on :{self.replica_ports[i]}")
        if not self.start_nginx():
            raise RuntimeError(
                "nginx did not start:\n" + tail(self.dir / "nginx" / "error.log") + tail(self.dir / "nginx" / "stderr.log")
            )
        log(f"nginx pid {self.nginx.pid} on :{self.nginx_port} -> {self.replica_ports}")

    def cleanup(self) -> None:
        """Kills every child (nginx gets SIGTERM first) and removes the temp dir unless --keep."""
        with self._clean_lock:
            if self._cleaned:
                return
            self._cleaned = True
        self.stopping.set()
        if self.nginx.running():
            self.nginx.expected_exit = True
            self.nginx.signal(signal.SIGTERM)
            self.nginx.wait_exit(5)
        self.nginx.kill_group()
        for r in self.replicas:
            r.kill_group()
        self.redis.kill_group()
        if self.keep:
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------
# Calls and their records.
# --------------------------------------------------------------------------


@dataclass
class Call:
    """One countdown call from POST to result, error or deadline."""

    phase: str  # "load" or "final"
    client: int
    session: str
    req_id: int
    steps: int
    interval_ms: int
    drop_after: int | None  # deliberate cut after this many progress events
    dropped: bool = False
    started: float = 0.0
    deadline_s: float = 0.0
    ended: float | None = None
    outcome: str = "running"  # ok | error | hang | no-result
    error_kind: str = ""  # refused | jsonrpc | tool-error | resume-http | session-lost
    error: dict = field(default_factory=dict)
    event_ids: list = field(default_factory=list)
    progress: list = field(default_factory=list)
    streams: list = field(default_factory=list)  # one per POST/GET: kind, status, upstream, events, end
    resumes: dict = field(default_factory=lambda: {"deliberate": 0, "break": 0, "retry": 0})
    where: str = "not started"
    last_event_at: float | None = None
    notes: list = field(default_factory=list)

    def summary(self) -> dict:
        d = asdict(self)
        d["deadline_at"] = round(self.started + self.deadline_s, 3)
        return d


class StreamEnd:
    """How reading one SSE stream ended."""

    def __init__(self, kind: str, detail: str = "", retry_ms: int | None = None, message: dict | None = None):
        self.kind = kind  # result | error | eof | retry | broken | dropped | timeout | garbage
        self.detail = detail
        self.retry_ms = retry_ms
        self.message = message


class SessionLost(Exception):
    pass


def jsonrpc_error_of(body: str) -> tuple[int | None, str | None]:
    """(code, message) of a JSON-RPC error body, or (None, None)."""
    try:
        v = json.loads(body)
        err = v.get("error") if isinstance(v, dict) else None
        if isinstance(err, dict):
            return err.get("code"), str(err.get("message"))
    except (ValueError, AttributeError):
        pass
    return None, None


def http_error_key(method: str, status: int, body: str) -> str:
    """The tally key of an HTTP error answer: status plus JSON-RPC code/message or the body."""
    code, message = jsonrpc_error_of(body)
    if code is not None:
        return f"{method} HTTP {status} {code}: {short(message)}"
    text = re.sub(r"<[^>]+>", " ", body)  # nginx's HTML error pages
    return f"{method} HTTP {status}: {short(text) or '(empty body)'}"


class McpClient:
    """A Streamable HTTP client of one MCP session, through nginx, one connection per request."""

    def __init__(self, port: int, stats: "Stats", client_id: int, rng: random.Random):
        self.port = port
        self.stats = stats
        self.client_id = client_id
        self.rng = rng
        self.session: str | None = None
        self.next_id = 2

    # ---- HTTP -------------------------------------------------------------

    def _headers(self, accept: str) -> dict:
        h = {"Accept": accept}
        if self.session:
            h["Mcp-Session-Id"] = self.session
            h["MCP-Protocol-Version"] = PROTOCOL_VERSION
        return h

    def _send(self, method: str, body: dict | None, headers: dict, timeout: float):
        """Opens a connection and sends one request: (conn, sock, response)."""
        timeout = max(0.05, timeout)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.connect()
        sock = conn.sock
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers = dict(headers, **{"Content-Type": "application/json"})
        conn.request(method, "/mcp", body=data, headers=headers)
        resp = conn.getresponse()
        return conn, sock, resp

    def _get_broke(self, c, kind: str, backoff: float, deadline: float) -> float:
        """A resuming GET that failed before its stream began: counted as a
        break, then a pause; returns the next (doubled) pause."""
        c.resumes["break"] += 1
        self.stats.resume("break")
        self.stats.break_kind(kind)
        time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
        return min(2.0, backoff * 2)

    @staticmethod
    def _close(conn, sock, resp) -> None:
        for f in (lambda: sock.shutdown(socket.SHUT_RDWR), resp.close, conn.close, sock.close):
            try:
                f()
            except Exception:
                pass

    @staticmethod
    def _read_body(sock, resp, timeout: float) -> str:
        try:
            sock.settimeout(max(0.05, timeout))
            return resp.read(65536).decode("utf-8", "replace")
        except Exception as e:  # noqa: BLE001 - any failure is reported as the body
            return f"(body unreadable: {e!r})"

    # ---- session ---------------------------------------------------------

    def initialize(self, stop: threading.Event | None, bound: float = 60.0) -> bool:
        """initialize + notifications/initialized, retried with backoff; False when it never worked."""
        deadline = time.monotonic() + bound
        backoff = 0.2
        while time.monotonic() < deadline:
            if stop is not None and stop.is_set():
                return False
            self.session = None
            why = self._initialize_once()
            if why is None:
                self.stats.count("sessions_opened")
                return True
            self.stats.init_failure(why)
            time.sleep(backoff * (0.5 + self.rng.random()))
            backoff = min(2.0, backoff * 2)
        return False

    def _initialize_once(self) -> str | None:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "chaos", "version": "1"},
        }
        req = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        try:
            conn, sock, resp = self._send("POST", req, self._headers("application/json, text/event-stream"), 10)
        except (OSError, http.client.HTTPException) as e:
            return f"initialize: {type(e).__name__}"
        body = self._read_body(sock, resp, 10)
        self._close(conn, sock, resp)
        if resp.status != 200:
            return "initialize " + http_error_key("POST", resp.status, body)
        sid = resp.getheader("Mcp-Session-Id")
        if not sid:
            return "initialize: 200 without Mcp-Session-Id"
        if "text/event-stream" in (resp.getheader("Content-Type") or ""):
            body = "\n".join(l[5:].strip() for l in body.splitlines() if l.startswith("data:") and l[5:].strip())
        try:
            if "result" not in json.loads(body):
                return f"initialize: no result: {short(body)}"
        except ValueError:
            return f"initialize: unparsable answer: {short(body)}"
        self.session = sid
        try:
            conn, sock, resp = self._send(
                "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                self._headers("application/json, text/event-stream"), 10,
            )
        except (OSError, http.client.HTTPException) as e:
            return f"notifications/initialized: {type(e).__name__}"
        body = self._read_body(sock, resp, 10)
        self._close(conn, sock, resp)
        if resp.status not in (200, 202):
            if resp.status == 404:
                self.stats.count("sessions_lost")
            return "notifications/initialized " + http_error_key("POST", resp.status, body)
        return None

    # ---- one call --------------------------------------------------------

    def new_call(self, phase: str) -> Call:
        rid = self.next_id
        self.next_id += 1
        steps = self.rng.randint(3, 15)
        interval = self.rng.randint(50, 250)
        drop = None
        if self.rng.random() < DELIBERATE_DROP_RATIO:
            drop = self.rng.randint(1, steps - 1)
        return Call(phase, self.client_id, self.session or "", rid, steps, interval, drop)

    def call(self, c: Call) -> Call:
        """Runs the call to its end: result, clear error, or (past its deadline) hang/no-result."""
        c.started = now()
        c.deadline_s = c.steps * c.interval_ms / 1000.0 + CALL_SLACK_S
        deadline = time.monotonic() + c.deadline_s
        try:
            self._call(c, deadline)
        except SessionLost:
            self.session = None
        except Exception as e:  # noqa: BLE001 - a harness bug must not kill the client
            c.outcome = "no-result"
            c.error = {"harness_exception": repr(e), "traceback": traceback.format_exc()}
            c.where += " (harness exception)"
        c.ended = now()
        return c

    def _finish_error(self, c: Call, kind: str, **error) -> None:
        c.outcome, c.error_kind, c.error = "error", kind, error

    def _call(self, c: Call, deadline: float) -> None:
        req = {
            "jsonrpc": "2.0", "id": c.req_id, "method": "tools/call",
            "params": {
                "name": "countdown",
                "arguments": {"steps": c.steps, "interval_ms": c.interval_ms},
                "_meta": {"progressToken": f"p-{c.req_id}"},
            },
        }
        c.where = "POST: waiting for the response headers"
        try:
            conn, sock, resp = self._send(
                "POST", req, self._headers("application/json, text/event-stream"), deadline - time.monotonic()
            )
        except TimeoutError:
            c.outcome = "hang"
            return
        except (OSError, http.client.HTTPException) as e:
            c.outcome = "no-result"
            c.error = {"detail": f"POST got no HTTP answer from nginx: {e!r}"}
            return
        upstream = resp.getheader("X-Chaos-Upstream")
        ctype = resp.getheader("Content-Type") or ""
        stream = {"kind": "POST", "status": resp.status, "upstream": upstream, "events": 0, "end": ""}
        c.streams.append(stream)
        if resp.status != 200:
            body = self._read_body(sock, resp, deadline - time.monotonic())
            self._close(conn, sock, resp)
            stream["end"] = "http error"
            if resp.status == 404:
                self.stats.count("sessions_lost")
                self._finish_error(c, "session-lost", status=404, body=short(body, 300),
                                   key=http_error_key("POST", 404, body))
                raise SessionLost()
            self._finish_error(c, "refused", status=resp.status, body=short(body, 300),
                               key=http_error_key("POST", resp.status, body))
            return
        if "text/event-stream" not in ctype:
            body = self._read_body(sock, resp, deadline - time.monotonic())
            self._close(conn, sock, resp)
            stream["end"] = "json"
            self._json_answer(c, body)
            return
        c.where = f"reading the POST stream (upstream {upstream})"
        backoff = 0.25
        gets = 0
        empty_in_a_row = 0
        last_get = ""
        while True:
            end = self._read_stream(c, conn, sock, resp, stream, deadline)
            self._close(conn, sock, resp)
            stream["end"] = end.kind + (f": {end.detail}" if end.detail else "")
            if end.kind == "result":
                self._result(c, end.message)
                return
            if end.kind == "error":
                err = end.message.get("error") or {}
                self._finish_error(c, "jsonrpc", code=err.get("code"), message=str(err.get("message")),
                                   key=f"JSON-RPC {err.get('code')}: {short(err.get('message'))}")
                return
            if end.kind == "timeout":
                c.outcome = "hang"
                ago = f"{now() - c.last_event_at:.1f} s" if c.last_event_at else "never"
                c.where += f"; last event {ago} ago"
                return
            if end.kind == "garbage":
                c.outcome = "no-result"
                c.error = {"detail": end.detail}
                return
            if not c.event_ids:
                c.outcome = "no-result"
                c.error = {"detail": f"stream ended ({end.kind} {end.detail}) before any event id: nothing to resume from"}
                return
            empty_in_a_row = empty_in_a_row + 1 if stream["events"] == 0 and stream["kind"] == "GET" else 0
            # Decide why we resume and how long to wait first.
            if end.kind == "dropped":
                reason, pause = "deliberate", 0.0
            elif end.kind == "retry":
                reason, pause = "retry", (end.retry_ms or 0) / 1000.0
            else:  # eof without hint, broken connection
                reason, pause = "break", backoff * (0.5 + self.rng.random())
                backoff = min(2.0, backoff * 2)
                empty = " (empty stream)" if stream["events"] == 0 and stream["kind"] == "GET" else ""
                self.stats.break_kind(f"{stream['kind']} stream: {end.kind}{empty}")
            c.resumes[reason] += 1
            self.stats.resume(reason)
            c.where = f"sleeping {pause:.2f} s before resuming ({reason})"
            if time.monotonic() + pause >= deadline:
                time.sleep(max(0.0, deadline - time.monotonic()))
                self._past_deadline(c, empty_in_a_row, last_get)
                return
            time.sleep(pause)
            # Resume: GET with Last-Event-ID until a stream is open, an error is clear, or the deadline.
            while True:
                if time.monotonic() >= deadline:
                    self._past_deadline(c, empty_in_a_row, last_get)
                    return
                gets += 1
                last_id = c.event_ids[-1]
                c.where = f"GET #{gets} (Last-Event-ID {last_id}): waiting for the response headers"
                h = self._headers("text/event-stream")
                h["Last-Event-ID"] = last_id
                try:
                    conn, sock, resp = self._send("GET", None, h, deadline - time.monotonic())
                except TimeoutError:
                    c.outcome = "hang"
                    return
                except (OSError, http.client.HTTPException) as e:
                    last_get = f"GET #{gets}: {e!r}"
                    backoff = self._get_broke(c, f"GET connection error {type(e).__name__}", backoff, deadline)
                    continue
                upstream = resp.getheader("X-Chaos-Upstream")
                stream = {"kind": "GET", "status": resp.status, "upstream": upstream, "events": 0,
                          "end": "", "last_event_id": last_id}
                c.streams.append(stream)
                if resp.status == 200 and "text/event-stream" in (resp.getheader("Content-Type") or ""):
                    c.where = f"reading GET #{gets} stream (upstream {upstream}, Last-Event-ID {last_id})"
                    break
                body = self._read_body(sock, resp, deadline - time.monotonic())
                self._close(conn, sock, resp)
                stream["end"] = "http error"
                last_get = f"GET #{gets}: HTTP {resp.status} {short(body)}"
                if resp.status in (502, 504):  # nginx: the replica it tried died; resume again
                    backoff = self._get_broke(c, f"GET HTTP {resp.status}", backoff, deadline)
                    continue
                if resp.status == 404:
                    self.stats.count("sessions_lost")
                    self._finish_error(c, "session-lost", status=404, body=short(body, 300),
                                       key=http_error_key("GET", 404, body))
                    raise SessionLost()
                if resp.status >= 400 and body.strip():
                    self._finish_error(c, "resume-http", status=resp.status, body=short(body, 300),
                                       key=http_error_key("GET", resp.status, body))
                    return
                c.outcome = "no-result"
                c.error = {"detail": f"resumption GET answered HTTP {resp.status} "
                                     f"{resp.getheader('Content-Type')!r} without an explanation: {short(body)!r}"}
                return

    def _past_deadline(self, c: Call, empty_in_a_row: int, last_get: str) -> None:
        """A call whose deadline passed while resuming: empty streams -> no-result, else hang."""
        if empty_in_a_row >= 2:
            c.outcome = "no-result"
            c.error = {"detail": f"{empty_in_a_row} resumptions in a row answered an empty 200 stream; deadline passed"}
            c.where = f"resuming: {empty_in_a_row} empty streams in a row"
        else:
            c.outcome = "hang"
            c.where += f" (deadline passed while resuming; last GET: {last_get or 'stream'})"

    def _json_answer(self, c: Call, body: str) -> None:
        try:
            msg = json.loads(body)
        except ValueError:
            c.outcome = "no-result"
            c.error = {"detail": f"200 JSON answer unparsable: {short(body)!r}"}
            return
        if isinstance(msg, dict) and msg.get("id") == c.req_id and "result" in msg:
            self._result(c, msg)
        elif isinstance(msg, dict) and msg.get("id") == c.req_id and "error" in msg:
            err = msg["error"] or {}
            self._finish_error(c, "jsonrpc", code=err.get("code"), message=str(err.get("message")),
                               key=f"JSON-RPC {err.get('code')}: {short(err.get('message'))}")
        else:
            c.outcome = "no-result"
            c.error = {"detail": f"200 JSON answer is not our response: {short(body)!r}"}

    def _result(self, c: Call, msg: dict) -> None:
        result = msg.get("result") or {}
        texts = [x.get("text") for x in result.get("content") or [] if isinstance(x, dict)]
        if result.get("isError"):
            self._finish_error(c, "tool-error", message=short(" ".join(map(str, texts)), 300),
                               key=f"tool error: {short(' '.join(map(str, texts)))}")
        elif texts == ["done"]:
            c.outcome = "ok"
        else:
            c.outcome = "no-result"
            c.error = {"detail": f"result without 'done': {short(json.dumps(result))}"}

    def _read_stream(self, c: Call, conn, sock, resp, stream: dict, deadline: float) -> StreamEnd:
        """Reads SSE events until our response, the end of the stream, a break or the deadline."""
        ev_id: str | None = None
        data: list[str] = []
        retry: int | None = None
        has_field = False
        last_was_hint = False
        retry_ms = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return StreamEnd("timeout")
            try:
                sock.settimeout(remaining)
                raw = resp.readline(1 << 20)
            except TimeoutError:
                return StreamEnd("timeout")
            except (OSError, http.client.HTTPException, ValueError) as e:
                return StreamEnd("broken", type(e).__name__)
            if not raw or not raw.endswith(b"\n"):
                # http.client reports a chunked body cut before its last chunk as a
                # clean end; chunk_left is None only after the last chunk.
                cut = bool(raw) or (resp.chunked and resp.chunk_left is not None)
                if last_was_hint:
                    return StreamEnd("retry", "cut" if cut else "", retry_ms=retry_ms)
                return StreamEnd("broken", "closed without the last chunk") if cut else StreamEnd("eof")
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                return StreamEnd("garbage", f"non-UTF-8 line {raw[:80]!r}")
            if line == "":
                if not has_field:
                    continue
                end = self._dispatch(c, ev_id, data, retry, stream)
                # mcpd's hand-over hint is a bare `retry:` event (the priming
                # event also carries `retry:`, with an id).
                last_was_hint = retry is not None and ev_id is None and not any(data)
                if retry is not None:
                    retry_ms = retry
                ev_id, data, retry, has_field = None, [], None, False
                if end is not None:
                    if end.kind == "dropped":
                        self._close(conn, sock, resp)
                    return end
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            has_field = True
            if name == "id":
                ev_id = value
            elif name == "data":
                data.append(value)
            elif name == "retry":
                try:
                    retry = int(value)
                except ValueError:
                    return StreamEnd("garbage", f"bad retry field {value!r}")

    def _dispatch(self, c: Call, ev_id, data, retry, stream) -> StreamEnd | None:
        """One SSE event: records its id and progress; a StreamEnd when the stream is done for us."""
        c.last_event_at = now()
        if ev_id is not None:
            c.event_ids.append(ev_id)
            stream["events"] += 1
        text = "\n".join(data)
        if not text.strip():
            return None  # priming event, or a bare retry hint
        if ev_id is None:
            stream["events"] += 1
        try:
            msg = json.loads(text)
        except ValueError:
            return StreamEnd("garbage", f"event data is not JSON: {short(text)!r}")
        if not isinstance(msg, dict):
            return StreamEnd("garbage", f"event data is not a JSON-RPC message: {short(text)!r}")
        if msg.get("method") == "notifications/progress":
            p = msg.get("params") or {}
            if p.get("progressToken") != f"p-{c.req_id}":
                c.notes.append(f"progress for another token {p.get('progressToken')!r}")
                return None
            try:
                c.progress.append(int(float(p.get("progress"))))
            except (TypeError, ValueError):
                return StreamEnd("garbage", f"progress without a number: {short(text)!r}")
            if c.drop_after is not None and not c.dropped and len(c.progress) == c.drop_after:
                c.dropped = True  # once per call
                return StreamEnd("dropped")
            return None
        if "id" in msg and ("result" in msg or "error" in msg):
            if msg["id"] != c.req_id:
                return StreamEnd("garbage", f"response for another id {msg['id']!r}: {short(text)!r}")
            return StreamEnd("result" if "result" in msg else "error", message=msg)
        c.notes.append(f"other message: {short(text, 80)}")
        return None


# --------------------------------------------------------------------------
# Invariants: each returns the violations it found (a list of dicts).
# --------------------------------------------------------------------------


def check_no_hang(c: Call) -> list[dict]:
    """Invariant 1: every call ends (result or error) within its deadline,
    steps * interval + 40 s. A call still waiting then is a HANG: its
    session, request id, the event ids it saw and where it was waiting."""
    if c.outcome != "hang":
        return []
    return [{
        "invariant": 1, "kind": "HANG", "phase": c.phase, "client": c.client, "session": c.session,
        "request_id": c.req_id, "steps": c.steps, "interval_ms": c.interval_ms,
        "deadline_s": c.deadline_s, "started_at": round(c.started, 1), "where": c.where,
        "event_ids": c.event_ids, "progress": c.progress, "streams": c.streams,
    }]


def check_no_duplicate(c: Call) -> list[dict]:
    """Invariant 2: within a call (across its POST stream and every
    resumption) no event id is delivered twice and no progress value
    arrives twice."""
    dup_ids = [k for k, n in collections.Counter(c.event_ids).items() if n > 1]
    dup_progress = [k for k, n in collections.Counter(c.progress).items() if n > 1]
    if not dup_ids and not dup_progress:
        return []
    return [{
        "invariant": 2, "kind": "DUPLICATE", "phase": c.phase, "session": c.session, "request_id": c.req_id,
        "duplicate_event_ids": dup_ids, "duplicate_progress": dup_progress,
        "event_ids": c.event_ids, "progress": c.progress, "streams": c.streams,
    }]


def check_no_silent_gap(c: Call) -> list[dict]:
    """Invariant 3: the progress values a call received, in order (repeats
    set aside: invariant 2), are 1, 2, 3, ... with no hole. A call that got
    its result must have seen exactly 1..steps; a hole is allowed only when
    the call ended with an error (or did not end: invariant 1/4)."""
    seen, ordered = set(), []
    for p in c.progress:
        if p not in seen:
            seen.add(p)
            ordered.append(p)
    if c.outcome == "ok":
        expected = list(range(1, c.steps + 1))
    elif c.outcome == "error":
        return []
    else:
        expected = list(range(1, len(ordered) + 1))
    if ordered == expected:
        return []
    return [{
        "invariant": 3, "kind": "SILENT GAP", "phase": c.phase, "session": c.session,
        "request_id": c.req_id, "steps": c.steps, "outcome": c.outcome,
        "progress": c.progress, "missing": sorted(set(expected) - seen),
        "event_ids": c.event_ids, "streams": c.streams,
    }]


def check_result_or_clear_error(c: Call) -> list[dict]:
    """Invariant 4: a call ends with its result ("done") or a clear error:
    a JSON-RPC error response with its id, an HTTP error status on the POST
    before any event (refused), or an HTTP 4xx/5xx with a body on a
    resumption GET (404: session lost). Anything else -- streams ending
    without result while resumptions keep answering empty streams up to the
    deadline, garbage, a stream broken before any event id -- violates it.
    (Hangs are invariant 1.)"""
    if c.outcome != "no-result":
        return []
    return [{
        "invariant": 4, "kind": "NO RESULT", "phase": c.phase, "session": c.session,
        "request_id": c.req_id, "steps": c.steps, "detail": c.error, "where": c.where,
        "event_ids": c.event_ids, "progress": c.progress, "streams": c.streams,
    }]


def check_final_calls(calls: list[Call], expected: int) -> list[dict]:
    """Invariant 5: after the faults stopped and the cluster settled, all
    `expected` fresh calls succeed with their full result (and keep
    invariants 2 and 3)."""
    out = []
    ok = {id(c) for c in calls if c.outcome == "ok" and not check_no_duplicate(c) and not check_no_silent_gap(c)}
    if len(ok) != expected:
        for c in calls:
            if id(c) not in ok:
                out.append({
                    "invariant": 5, "kind": "FINAL CALL FAILED", "session": c.session, "request_id": c.req_id,
                    "outcome": c.outcome, "error": c.error, "where": c.where, "progress": c.progress,
                    "event_ids": c.event_ids, "streams": c.streams,
                })
        if len(calls) < expected:
            out.append({"invariant": 5, "kind": "FINAL CALLS MISSING",
                        "detail": f"only {len(calls)} of {expected} calls ran (initialize failed?)"})
    return out


def check_no_crash(cluster: Cluster, crashes: list[dict]) -> list[dict]:
    """Invariant 6: no replica crashed: none exited without being signalled
    by us, and no replica log contains a panic (`panicked`)."""
    out = [dict(c, invariant=6, kind="CRASH (unexpected exit)") for c in crashes]
    for i, r in enumerate(cluster.replicas):
        try:
            lines = cluster.replica_log(i).read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines):
            if "panicked" in line:
                out.append({"invariant": 6, "kind": "PANIC", "replica": r.name, "line": n + 1,
                            "excerpt": "\n".join(lines[max(0, n - 2): n + 6])})
    return out


# --------------------------------------------------------------------------
# Stats, faults, the run.
# --------------------------------------------------------------------------


class Stats:
    """Counters shared by the threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counters = collections.Counter()
        self.calls: list[Call] = []
        self.final_calls: list[Call] = []
        self.resumes = collections.Counter()
        self.break_kinds = collections.Counter()
        self.init_failures = collections.Counter()
        self.faults = collections.Counter()
        self.fault_log: list[dict] = []
        self.crashes: list[dict] = []
        self.anomalies: list[dict] = []
        self.in_flight = 0

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counters[name] += n

    def resume(self, reason: str) -> None:
        with self.lock:
            self.resumes[reason] += 1

    def break_kind(self, kind: str) -> None:
        with self.lock:
            self.break_kinds[kind] += 1

    def init_failure(self, why: str) -> None:
        with self.lock:
            self.init_failures[why] += 1

    def fault(self, kind: str, detail: str) -> None:
        with self.lock:
            self.faults[kind] += 1
            self.fault_log.append({"t": round(now(), 1), "wall": time.strftime("%H:%M:%S"), "kind": kind, "detail": detail})
        log(f"FAULT {kind}: {detail}")

    def anomaly(self, what: str, **detail) -> None:
        with self.lock:
            self.anomalies.append(dict(detail, t=round(now(), 1), what=what))
        log(f"note: {what}")


def client_loop(i: int, cluster: Cluster, stats: Stats, stop: threading.Event, seed: int, callsf) -> None:
    """One client thread: a session through nginx, countdown calls until `stop`."""
    rng = random.Random(seed * 1000 + i)
    cl = McpClient(cluster.nginx_port, stats, i, rng)
    while not stop.is_set():
        if cl.session is None and not cl.initialize(stop):
            continue
        c = cl.new_call("load")
        with stats.lock:
            stats.counters["calls_started"] += 1
            stats.in_flight += 1
        cl.call(c)
        with stats.lock:
            stats.in_flight -= 1
            stats.calls.append(c)
            if callsf:
                callsf.write(json.dumps(c.summary()) + "\n")
        v = check_no_hang(c) + check_no_duplicate(c) + check_no_silent_gap(c) + check_result_or_clear_error(c)
        for x in v:
            log(f"VIOLATION {x['kind']}: client {i} session {c.session} request {c.req_id} "
                f"(steps {c.steps}, progress {c.progress}) {x.get('where') or x.get('detail') or ''}")
        if c.outcome == "error" and c.error_kind == "refused":
            time.sleep(0.1 + rng.random() * 0.2)  # as a client would, briefly


def monitor_loop(cluster: Cluster, stats: Stats, done: threading.Event) -> None:
    """Notices a replica (or Redis) that exited without being signalled: a crash; restarts it."""
    while not done.wait(0.2):
        for i, r in enumerate(cluster.replicas):
            if not r.lock.acquire(timeout=0.01):
                continue
            try:
                if r.proc is None or r.expected_exit or r.proc.poll() is None or cluster.stopping.is_set():
                    continue
                code = r.proc.returncode
                crash = {"replica": r.name, "pid": r.proc.pid, "exit_status": code, "t": round(now(), 1),
                         "log_tail": tail(cluster.replica_log(i), 25)}
                with stats.lock:
                    stats.crashes.append(crash)
                log(f"CRASH: replica {r.name} pid {r.proc.pid} exited by itself (status {code})")
                r.expected_exit = True
                time.sleep(1.5)
                if not cluster.start_replica(i):
                    stats.anomaly(f"replica {r.name} did not come back after its crash",
                                  log_tail=tail(cluster.replica_log(i)))
            finally:
                r.lock.release()
        rd = cluster.redis
        if rd.lock.acquire(timeout=0.01):
            try:
                if rd.proc and not rd.expected_exit and rd.proc.poll() is not None and not cluster.stopping.is_set():
                    stats.anomaly("redis-server exited by itself; restarting it",
                                  status=rd.proc.returncode, log_tail=tail(cluster.dir / "redis.log"))
                    rd.expected_exit = True
                    cluster.start_redis()
            finally:
                rd.lock.release()


def do_fault(kind: str, cluster: Cluster, stats: Stats, rng: random.Random) -> None:
    """Applies one fault and repairs it (restart), bounded in time."""
    if kind in ("kill-replica", "term-replica"):
        up = [i for i, r in enumerate(cluster.replicas) if r.running()]
        if not up:
            stats.anomaly("no replica running to fault")
            return
        i = rng.choice(up)
        r = cluster.replicas[i]
        with r.lock:
            pid = r.pid
            if kind == "kill-replica":
                stats.fault(kind, f"SIGKILL {r.name} (pid {pid}, :{cluster.replica_ports[i]})")
                status, took = cluster.stop_replica(i, signal.SIGKILL, 5)
            else:
                stats.fault(kind, f"SIGTERM {r.name} (pid {pid}, :{cluster.replica_ports[i]})")
                status, took = cluster.stop_replica(i, signal.SIGTERM, 15)
                if status is None:
                    stats.anomaly(f"{r.name} (pid {pid}) still running 15 s after SIGTERM; SIGKILL",
                                  log_tail=tail(cluster.replica_log(i), 25))
                    status, _ = cluster.stop_replica(i, signal.SIGKILL, 5)
                elif status != 0:
                    stats.anomaly(f"{r.name} (pid {pid}) exited with status {status} after SIGTERM",
                                  log_tail=tail(cluster.replica_log(i), 25))
                log(f"  {r.name} exited {took:.1f} s after SIGTERM (status {status})")
            pause = rng.uniform(1.0, 2.0)
            time.sleep(pause)
            ok = cluster.start_replica(i)
            log(f"  {r.name} restarted on :{cluster.replica_ports[i]} (pid {r.pid}) after {pause:.1f} s"
                + ("" if ok else " -- NOT answering /healthz"))
            if not ok:
                stats.anomaly(f"{r.name} restarted but not answering", log_tail=tail(cluster.replica_log(i), 25))
    elif kind == "restart-redis":
        with cluster.redis.lock:
            pid = cluster.redis.pid
            how = cluster.stop_redis()
            stats.fault(kind, f"redis-server (pid {pid}) stopped with {how}")
            time.sleep(1.0)
            ok = cluster.start_redis()
            log(f"  redis-server restarted (pid {cluster.redis.pid}), AOF reloaded"
                + ("" if ok else " -- NOT answering PING"))
            if not ok:
                stats.anomaly("redis-server did not come back", log_tail=tail(cluster.dir / "redis.log"))
    elif kind == "pause-redis":
        with cluster.redis.lock:
            stats.fault(kind, f"SIGSTOP redis-server (pid {cluster.redis.pid}) for 2 s")
            cluster.redis.signal(signal.SIGSTOP)
            time.sleep(2.0)
            cluster.redis.signal(signal.SIGCONT)
            log("  redis-server continued (SIGCONT)")


def fault_loop(cluster: Cluster, stats: Stats, seed: int, duration: float, t_start: float, done: threading.Event) -> None:
    """A fault every 5-15 s (seeded) until `duration` s after `t_start`."""
    rng = random.Random(seed)
    kinds = ["kill-replica", "term-replica", "restart-redis", "pause-redis"]
    next_at = t_start + rng.uniform(5, 15)
    while True:
        wait = next_at - time.monotonic()
        if next_at >= t_start + duration or (wait > 0 and done.wait(wait)) or done.is_set():
            return
        try:
            do_fault(rng.choice(kinds), cluster, stats, rng)
        except Exception as e:  # noqa: BLE001
            stats.anomaly(f"fault failed: {e!r}", traceback=traceback.format_exc())
        next_at += rng.uniform(5, 15)


def settle(cluster: Cluster, stats: Stats) -> list[str]:
    """Makes sure Redis and every replica run and are ready, then waits SETTLE_S; problems found."""
    problems = []
    with cluster.redis.lock:
        cluster.redis.signal(signal.SIGCONT)
        if not cluster.redis.running() or cluster.redis_cmd("PING") != "+PONG":
            if not cluster.start_redis():
                problems.append("redis-server not answering")
    for i, r in enumerate(cluster.replicas):
        with r.lock:
            if not r.running():
                r.expected_exit = True
                cluster.start_replica(i, bound=10)
    deadline = time.monotonic() + 30
    for i, r in enumerate(cluster.replicas):
        if not cluster.wait_replica(i, max(0.1, deadline - time.monotonic()), need_ready=True):
            st = http_get(cluster.replica_ports[i], "/readyz")
            problems.append(f"{r.name} not ready: {st}")
    time.sleep(SETTLE_S)
    return problems


def final_calls(cluster: Cluster, stats: Stats, seed: int) -> list[Call]:
    """FINAL_CALLS fresh calls, each on its own new session, all at once."""
    results: list[Call] = []
    lock = threading.Lock()

    def one(k: int) -> None:
        rng = random.Random(seed * 7919 + k)
        cl = McpClient(cluster.nginx_port, stats, 1000 + k, rng)
        if not cl.initialize(None, bound=20):
            c = Call("final", 1000 + k, "", 0, 0, 0, None, outcome="no-result",
                     error={"detail": "initialize failed for 20 s"}, where="initialize")
        else:
            c = cl.new_call("final")
            c.drop_after = None
            cl.call(c)
        with lock:
            results.append(c)

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(FINAL_CALLS)]
    for t in threads:
        t.start()
    # initialize (20 s) + the longest call's deadline, and a margin.
    join_by = time.monotonic() + 20 + 15 * 0.25 + CALL_SLACK_S + 5
    for t in threads:
        t.join(timeout=max(0.0, join_by - time.monotonic()))
    with lock:
        return list(results)


# --------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------


def report(args, cluster: Cluster, stats: Stats, wall: float, fault_s: float, violations: dict, settle_problems: list[str]):
    """The Markdown table and the JSON document."""
    calls = stats.calls
    outcomes = collections.Counter(c.outcome for c in calls)
    errkinds = collections.Counter(c.error_kind for c in calls if c.outcome == "error")
    tally = collections.Counter(c.error["key"] for c in calls if c.outcome == "error" and "key" in c.error)
    final_ok = sum(1 for c in stats.final_calls if c.outcome == "ok")
    fk = ", ".join(f"{k} {stats.faults[k]}" for k in ("kill-replica", "term-replica", "restart-redis", "pause-redis"))
    ek = ", ".join(f"{k} {n}" for k, n in errkinds.most_common()) or "none"
    rows = [
        ("fault period / wall time", f"{fault_s:.0f} s / {wall:.0f} s (seed {args.seed}, {args.clients} clients)"),
        ("mcpd", f"`{args.mcpd}` ({getattr(cluster, 'binary_info', {}).get('mtime', '?')})"),
        ("faults", f"{sum(stats.faults.values())}: {fk}"),
        ("calls started", str(stats.counters["calls_started"])),
        ("succeeded (\"done\")", str(outcomes["ok"])),
        ("failed with a clear error", f"{outcomes['error']} ({ek})"),
        ("hung / no result", f"{outcomes['hang']} / {outcomes['no-result']}"),
        ("resumptions", f"deliberate {stats.resumes['deliberate']}, after breaks {stats.resumes['break']}, "
                        f"after retry hints {stats.resumes['retry']}"),
        ("sessions opened / lost (404)", f"{stats.counters['sessions_opened']} / {stats.counters['sessions_lost']}"),
        ("initialize attempts refused", str(sum(stats.init_failures.values()))),
        ("final calls after settling", f"{final_ok}/{FINAL_CALLS}"),
    ]
    names = {
        1: "1. no hang (deadline steps×interval + 40 s)",
        2: "2. no duplicate event id / progress value",
        3: "3. no silent gap in progress",
        4: "4. result or clear error",
        5: f"5. {FINAL_CALLS}/{FINAL_CALLS} calls succeed after the faults",
        6: "6. no replica crashed / panicked",
    }
    md = ["## mcpd chaos run", "", "| | |", "| --- | --- |"]
    md += [f"| {k} | {v} |" for k, v in rows]
    md += ["", "| invariant | violations |", "| --- | ---: |"]
    md += [f"| {names[k]} | {len(violations[k])} |" for k in sorted(names)]
    md += ["", "| error met by clients (calls) | count |", "| --- | ---: |"]
    md += [f"| {k.replace('|', '/')} | {n} |" for k, n in tally.most_common()] or ["| (none) | 0 |"]
    if stats.init_failures:
        md += ["", "| initialize refused (retried) | count |", "| --- | ---: |"]
        md += [f"| {k.replace('|', '/')} | {n} |" for k, n in stats.init_failures.most_common()]
    if stats.break_kinds:
        md += ["", "| stream breaks (resumed) | count |", "| --- | ---: |"]
        md += [f"| {k} | {n} |" for k, n in stats.break_kinds.most_common()]
    lines = []
    for k in sorted(violations):
        for v in violations[k][:10]:
            parts = []
            for key in ("detail", "error", "where", "excerpt", "log_tail"):
                x = v.get(key)
                if isinstance(x, dict):
                    x = x.get("detail") or x.get("key") or (json.dumps(x) if x else "")
                if x and x != "not started":
                    parts.append(str(x))
            what = "; ".join(parts)
            ids = v.get("event_ids")
            who = f"replica {v['replica']}" if "replica" in v else f"session `{v.get('session', '')}`"
            lines.append(
                f"- **{v['kind']}** {who} request {v.get('request_id', '-')}"
                + (f", progress {v.get('progress')}" if "progress" in v else "")
                + (f", missing {v.get('missing')}" if v.get("missing") else "")
                + (f", duplicates {v.get('duplicate_event_ids')} / {v.get('duplicate_progress')}" if v["kind"] == "DUPLICATE" else "")
                + (f", event ids {ids[:3]}…{ids[-3:]} ({len(ids)})" if ids and len(ids) > 6 else f", event ids {ids}" if ids else "")
                + f": {short(what, 300)}"
            )
        if len(violations[k]) > 10:
            lines.append(f"- … {len(violations[k]) - 10} more of invariant {k} (see summary.json)")
    if lines:
        md += ["", "### Violations", ""] + lines
    if stats.anomalies or settle_problems:
        md += ["", "### Notes", ""]
        md += [f"- {a['t']} s: {short(a['what'], 200)}" for a in stats.anomalies]
        md += [f"- settling: {p}" for p in settle_problems]
    doc = {
        "args": {k: v for k, v in vars(args).items()},
        "mcpd_binary": getattr(cluster, "binary_info", None),
        "fault_period_s": round(fault_s, 1), "wall_s": round(wall, 1),
        "faults": dict(stats.faults), "fault_log": stats.fault_log,
        "calls": {"started": stats.counters["calls_started"], "finished": len(calls), **dict(outcomes),
                  "clear_errors_by_kind": dict(errkinds)},
        "resumptions": dict(stats.resumes), "stream_breaks": dict(stats.break_kinds),
        "sessions_opened": stats.counters["sessions_opened"], "sessions_lost": stats.counters["sessions_lost"],
        "initialize_refused": dict(stats.init_failures),
        "final_calls": {"ok": final_ok, "expected": FINAL_CALLS,
                        "outcomes": dict(collections.Counter(c.outcome for c in stats.final_calls))},
        "error_tally": dict(tally.most_common()),
        "violations": {str(k): v for k, v in violations.items()},
        "violation_counts": {str(k): len(v) for k, v in violations.items()},
        "crashes": stats.crashes, "anomalies": stats.anomalies, "settle_problems": settle_problems,
        "ok": not any(violations.values()),
    }
    return "\n".join(md) + "\n", doc


def progress_loop(stats: Stats, done: threading.Event) -> None:
    """A status line on stderr every 5 s."""
    while not done.wait(5):
        with stats.lock:
            o = collections.Counter(c.outcome for c in stats.calls)
            log(f"calls {stats.counters['calls_started']} started, {o['ok']} ok, {o['error']} clear errors, "
                f"{o['hang']} hung, {o['no-result']} no result, {stats.in_flight} in flight; "
                f"resumptions {dict(stats.resumes)}; faults {sum(stats.faults.values())}")


def main() -> int:
    p = argparse.ArgumentParser(
        description="Jepsen-style chaos run: 3 mcpd replicas on Redis behind nginx, countdown calls "
                    "with resumption while replicas and Redis are killed, stopped and paused; "
                    "checks every call against 6 invariants. Exit 0 when all hold, 1 otherwise.",
    )
    p.add_argument("--duration", type=float, default=60, help="seconds of faults (default 60)")
    p.add_argument("--clients", type=int, default=16, help="client threads, one session each (default 16)")
    p.add_argument("--seed", type=int, default=1, help="seed of the fault schedule and the calls (default 1)")
    p.add_argument("--mcpd", default=os.environ.get("MCPD_BIN") or str(REPO_ROOT / "target/debug/mcpd"),
                   help="mcpd binary (default: $MCPD_BIN, else target/debug/mcpd in the repo)")
    p.add_argument("--out", help="directory for summary.md, summary.json, calls.jsonl and the logs")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, AOF, nginx config)")
    args = p.parse_args()

    mcpd = Path(args.mcpd)
    if not (mcpd.is_file() and os.access(mcpd, os.X_OK)):
        print(f"chaos.py: mcpd binary not found or not executable: {mcpd} (--mcpd or MCPD_BIN)", file=sys.stderr)
        return 2
    for binary in ("/usr/bin/redis-server",):
        if not Path(binary).exists() and not shutil.which("redis-server"):
            print("chaos.py: redis-server not found (apt-get install -y redis-server)", file=sys.stderr)
            return 2

    stats = Stats()
    cluster = Cluster(str(mcpd.resolve()), args.keep, stats)
    done = threading.Event()  # background threads stop
    stop = threading.Event()  # clients start no new call

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    callsf = None
    try:
        try:
            cluster.start()
        except (RuntimeError, OSError) as e:
            print(f"chaos.py: the cluster did not start: {e}", file=sys.stderr)
            return 2
        callsf = open(cluster.dir / "calls.jsonl", "w")
        threading.Thread(target=monitor_loop, args=(cluster, stats, done), daemon=True).start()
        threading.Thread(target=progress_loop, args=(stats, done), daemon=True).start()
        t_start = time.monotonic()
        log(f"load: {args.clients} clients through nginx; faults for {args.duration:.0f} s (seed {args.seed})")
        clients = [
            threading.Thread(target=client_loop, args=(i, cluster, stats, stop, args.seed, callsf), daemon=True)
            for i in range(args.clients)
        ]
        for t in clients:
            t.start()
        faults = threading.Thread(target=fault_loop, args=(cluster, stats, args.seed, args.duration, t_start, done),
                                  daemon=True)
        faults.start()
        faults.join(timeout=args.duration + 60)
        time.sleep(max(0.0, t_start + args.duration - time.monotonic()))
        fault_s = time.monotonic() - t_start
        stop.set()
        # Load calls still running end by their own deadlines (at most steps*interval + 40 s).
        join_by = time.monotonic() + 15 * 0.25 + CALL_SLACK_S + 5
        log("faults over; clients finish their calls; settling")
        settle_problems = settle(cluster, stats)
        if settle_problems:
            log(f"settling: {settle_problems}")
        log(f"{FINAL_CALLS} fresh calls")
        stats.final_calls = final_calls(cluster, stats, args.seed)
        for c in stats.final_calls:
            callsf.write(json.dumps(c.summary()) + "\n")
        log(f"final calls: {sum(1 for c in stats.final_calls if c.outcome == 'ok')}/{FINAL_CALLS} ok")
        for t in clients:
            t.join(timeout=max(0.0, join_by - time.monotonic()))
        stuck = sum(1 for t in clients if t.is_alive())
        if stuck:
            stats.anomaly(f"{stuck} client threads still running past every deadline (harness bug)")
        done.set()

        violations = {k: [] for k in range(1, 7)}
        with stats.lock:
            calls = list(stats.calls)
        for c in calls:
            violations[1] += check_no_hang(c)
            violations[2] += check_no_duplicate(c)
            violations[3] += check_no_silent_gap(c)
            violations[4] += check_result_or_clear_error(c)
        violations[5] = check_final_calls(stats.final_calls, FINAL_CALLS)
        violations[6] = check_no_crash(cluster, stats.crashes)
        md, doc = report(args, cluster, stats, now(), fault_s, violations, settle_problems)
        callsf.close()
        callsf = None
        print(md)
        sys.stdout.flush()
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.md").write_text(md)
            (out / "summary.json").write_text(json.dumps(doc, indent=1, default=str))
            shutil.copy(cluster.dir / "calls.jsonl", out / "calls.jsonl")
            logs = out / "logs"
            logs.mkdir(exist_ok=True)
            for f in [*cluster.dir.glob("*.log"), *(cluster.dir / "nginx").glob("*.log")]:
                shutil.copy(f, logs / (("nginx-" if f.parent.name == "nginx" else "") + f.name))
            log(f"wrote {out}/summary.md, summary.json, calls.jsonl, logs/")
        return 0 if doc["ok"] else 1
    except KeyboardInterrupt as e:
        log(f"interrupted ({e or 'Ctrl-C'}); cleaning up")
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
        done.set()
        stop.set()
        if callsf:
            callsf.close()
        cluster.cleanup()


if __name__ == "__main__":
    sys.exit(main())
