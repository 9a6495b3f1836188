#!/usr/bin/env python3
"""The first memory index build and the first recall after it, at 10,000 records (or --sizes).

Three processes in a row on a vault whose `.aibuddy/` was deleted: `memory list --json` (the
index build: read, parse, dates, tokens, character runs, SQLite), then `memory recall` (the first
question: every record's meaning vector is computed, semantic.py), then the same recall again
(the index complete), beside `python -c pass`; with `--baseline DIR` the same with another source
tree (e.g. /work/main), round by round, so both are measured on a machine equally busy. Wall and
CPU time (user + system: steadier on a busy machine), medians of --runs rounds.

Run with the project's virtualenv:  .venv/bin/python bench/bench_index_build.py [--baseline /work/main]
The vault is bench_growth's (cached under /dev/shm/aibuddy-bench-growth/), copied once to
/dev/shm/aibuddy-bench-build/ (or $AIBUDDY_BENCH_BUILD) so its index can be deleted freely.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

from bench_growth import AIBUDDY, CACHE, RECALL_QUERY, bench_env, cached, make_memory, run_once

from aibuddy_cli.vault import CACHE_DIR

COPIES = Path(os.environ.get("AIBUDDY_BENCH_BUILD", "/dev/shm/aibuddy-bench-build"))
STEPS = {  # label -> argv after `aibuddy`, run in this order after deleting the index
    "index build (first `memory list --json`)": ["memory", "list", "--json"],
    "first `memory recall` (meaning vectors)": ["memory", "recall", RECALL_QUERY, "--json"],
    "next `memory recall`": ["memory", "recall", RECALL_QUERY, "--json"],
}


def vault_copy(n: int) -> Path:
    """A copy of bench_growth's memory vault of n records, made once (its own index deleted freely)."""
    source = cached("memory", n, make_memory)
    copy = COPIES / f"memory-{n}"
    if not (copy / ".complete").is_file():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy.with_name(copy.name + ".tmp"), ignore=shutil.ignore_patterns(CACHE_DIR))
        copy.with_name(copy.name + ".tmp").rename(copy)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", help="another source tree to time beside this one (PYTHONPATH)")
    args = parser.parse_args()
    sources: dict[str, str] = {"this": str(Path(__file__).resolve().parent.parent)}
    if args.baseline:
        sources = {"baseline": args.baseline, **sources}
    CACHE.mkdir(parents=True, exist_ok=True)
    COPIES.mkdir(parents=True, exist_ok=True)
    print(f"| N | source | step | wall (median of {args.runs}) | CPU | × `python -c pass` (CPU) |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        vault = vault_copy(n)
        samples: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            samples.setdefault("python -c pass", []).append(
                run_once([sys.executable, "-c", "pass"], dict(os.environ))
            )
            for name, source in sources.items():
                shutil.rmtree(vault / CACHE_DIR, ignore_errors=True)
                env = bench_env(vault, source)
                for label, argv in STEPS.items():
                    samples.setdefault(f"{name}|{label}", []).append(run_once([str(AIBUDDY), *argv], env))
        floor = statistics.median(cpu for _, cpu in samples["python -c pass"])
        for label, values in samples.items():
            name, _, step = label.rpartition("|")
            wall = statistics.median(w for w, _ in values)
            cpu = statistics.median(c for _, c in values)
            print(f"| {n:,} | {name} | {step} | {wall:.0f} ms | {cpu:.0f} ms | {cpu / floor:.1f}× |")
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
