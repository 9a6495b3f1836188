#!/usr/bin/env python3
"""What redacting costs: a process's start (with and without the secret catalogue), and a text's
scan from 1k to 1M characters, English and Chinese, beside the bare interpreter in the same run.

    .venv/bin/python bench/bench_redaction.py

The texts are this repository's README (English) and its Chinese fixture document, repeated to
size, with a credential in every 2,000 characters (a transcript that pastes keys now and then).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aibuddy_cli.redaction.detect import find, redact  # noqa: E402

ENGLISH = (REPO / "README.md").read_text()
CHINESE = (REPO / "tests/fixtures/docs/ch08-02-strings.md").read_text()
KEYS = [
    "my token is ghp_q7Rk2ZpX9mWv4LbT8sYc1Nf6Hd3Gj5Ua0E1x.",
    "DB_PASSWORD=Tr0ub4dor&3",
    "数据库密码是：Winter2024，别外传。",
    "redis://:S3cretRedisPass@cache:6379/0",
]
RUNS = 7


def sized(base: str, size: int) -> str:
    parts, total, at = [], 0, 0
    while total < size:
        chunk = base[at % len(base) : at % len(base) + 2000] + "\n" + KEYS[(at // 2000) % len(KEYS)] + "\n"
        parts.append(chunk)
        total += len(chunk)
        at += 2000
    return "".join(parts)[:size]


def process_ms(code: str, env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    bare = process_ms("pass", env)
    call = "from aibuddy_cli.redaction.detect import redact; redact({!r})"
    plain = call.format("Prefers concise weekly reports, due 2026-11-29")
    named = call.format("password: Hunter2xyz")
    keyed = call.format("my token ghp_q7Rk2ZpX9mWv4LbT8sYc1Nf6Hd3Gj5Ua0E1x")
    print(f"process (median of {RUNS}; python -c pass: {bare:.0f} ms)")
    for label, code in (
        ("a sentence (no credential's name, no key's shape)", plain),
        ("'password: …' (the rules that read names; no catalogue)", named),
        ("a text with a key (the catalogue, loaded from its cache)", keyed),
    ):
        print(f"  redact {label:60} {process_ms(code, env):6.0f} ms")
    with tempfile.TemporaryDirectory() as empty:
        os.chmod(empty, 0o700)
        cold = {**env, "KF_RULE_CACHE_DIR": empty}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", keyed], env=cold, check=True, capture_output=True)
        label = "the same, the catalogue compiled (a machine's first time)"
        print(f"  {label:67} {(time.perf_counter() - start) * 1000:6.0f} ms")
    redact("warm the scanner: ghp_q7Rk2ZpX9mWv4LbT8sYc1Nf6Hd3Gj5Ua0E1x")
    print("\nscan in a warm process (median of 5)      English              Chinese")
    for size in (1_000, 10_000, 100_000, 1_000_000):
        cells = []
        for base in (ENGLISH, CHINESE):
            text = sized(base, size)
            times = []
            for _ in range(5):
                start = time.perf_counter()
                found = find(text)
                times.append((time.perf_counter() - start) * 1000)
            cells.append(f"{statistics.median(times):8.1f} ms ({len(found):4d} found)")
        print(f"  {size:>9,} characters            {cells[0]}   {cells[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
