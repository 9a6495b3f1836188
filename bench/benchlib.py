"""What the benchmark scripts share: timing one whole process, running one to check it, and
keeping a report."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def run_once(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one whole process, in milliseconds."""
    start = time.perf_counter()
    subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return (time.perf_counter() - start) * 1000


def check_run(
    argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    """Run once with output captured (outside timing); warn on an unexpected exit code."""
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode not in ok:
        problem = done.stderr.strip()[:500]
        print(f"WARNING: {' '.join(argv)} exited {done.returncode}: {problem}", file=sys.stderr)
    return done


def report(lines: list[str], out: Path) -> None:
    """The report's lines written to out (its folder made) and printed."""
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
