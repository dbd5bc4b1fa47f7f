"""One PASS/FAIL/SKIP line per check, as run.sh and tests/authserver/run.sh
count them: `PASS <prefix><name> (detail)`, `FAIL <prefix><name>: reason`
(on one line), `SKIP <prefix><name>: reason`."""

from __future__ import annotations


class Report:
    def __init__(self, prefix: str, reason_limit: int = 500) -> None:
        self.prefix = prefix
        self.reason_limit = reason_limit
        self.passed = self.failed = self.skipped = 0

    def emit_pass(self, name: str, detail: str | None = None) -> None:
        self.passed += 1
        print(f"PASS {self.prefix}{name}" + (f" ({detail})" if detail else ""), flush=True)

    def emit_fail(self, name: str, reason: str) -> None:
        self.failed += 1
        print(f"FAIL {self.prefix}{name}: {self.one_line(reason)}", flush=True)

    def emit_skip(self, name: str, reason: str) -> None:
        self.skipped += 1
        print(f"SKIP {self.prefix}{name}: {self.one_line(reason)}", flush=True)

    def one_line(self, reason: object) -> str:
        return " ".join(str(reason).split())[: self.reason_limit]
