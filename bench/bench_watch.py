#!/usr/bin/env python3
"""Cold commands with and without the vault's watch process, at 1,000 and 10,000 (and, with
--big, 100,000) memory records: bench_growth.py's commands and vaults, each a new process once the
index exists, beside `python -c pass` of the same rounds.

"no watch" runs with AIBUDDY_WATCH=off (a stat per file, as before the watch process); "watch"
with the default, "auto": a folder of 2,000 files or more gets a watch process, started by the
warm-up, and the index takes its cursor before the timed rounds (below 2,000 files none starts,
and the two are the same). The watch process's resident memory is printed after the table.

`--baseline DIR` times the same with another source tree (e.g. /work/main) in the same rounds.

Run with the project's virtualenv:  .venv/bin/python bench/bench_watch.py [--big] [--runs 5] [--baseline DIR]
Vaults are bench_growth.py's cache (/dev/shm/aibuddy-bench-growth/ or $AIBUDDY_BENCH_CACHE).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's code, as the commands run

import bench_growth  # noqa: E402
from bench_growth import AIBUDDY, CACHE, MAKERS, bench_env, cached, report, sample  # noqa: E402
from benchlib import check_run  # noqa: E402

from aibuddy_cli.store import watch_client  # noqa: E402

SOURCE = str(Path(__file__).resolve().parent.parent)
RUNTIME = CACHE / "run"  # the watch process's socket folder (XDG_RUNTIME_DIR) for this bench
VARIANTS = {"no watch": {"AIBUDDY_WATCH": "off"}, "watch": {"AIBUDDY_WATCH": "auto"}}


def variant_env(vault: Path, variant: str, source: str = SOURCE) -> dict[str, str]:
    return {**bench_env(vault, source), "XDG_RUNTIME_DIR": str(RUNTIME), **VARIANTS[variant]}


def wait_for_watch(env: dict[str, str], vault: Path) -> bool:
    """Whether a watch process serves vault (waited for up to a minute where one should start)."""
    files = max(
        (len(names) for top, _, names in os.walk(vault) if not Path(top).name.startswith(".")), default=0
    )  # the largest folder's (auto watches a folder of MIN_FILES or more)
    if files < watch_client.MIN_FILES:
        return False  # auto starts none for so few: nothing to wait for
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if watch_client.status(env, vault).running:
            return True
        time.sleep(0.1)
    return False


def resident_kb(pid: int | None) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), None)


def measure(
    vaults: dict[str, Path], runs: int, watched: list[str], sources: dict[str, str]
) -> dict[str, float]:
    jobs = {"python -c pass": ([sys.executable, "-c", "pass"], dict(os.environ))}
    for name, source in sources.items():
        for variant in VARIANTS:
            for label, (kind, argv) in bench_growth.COMMANDS.items():
                env = variant_env(vaults[kind], variant, source)
                jobs[f"{name}{variant}|{label}"] = ([str(AIBUDDY), *argv], env)
    for label, (argv, env) in jobs.items():
        check_run(argv, env)  # warm-up: a walk, and a watch process started for a big folder
        if "watch|" in label and "no watch|" not in label and wait_for_watch(env, Path(env["AIBUDDY_VAULT"])):
            check_run(argv, env)  # the watch process's first look: a walk, then the index keeps its cursor
            found = watch_client.status(env, Path(env["AIBUDDY_VAULT"]))
            line = f"{env['AIBUDDY_VAULT']}: pid {found.pid}, {resident_kb(found.pid)} kB resident"
            if not any(seen.split(":")[0] == line.split(":")[0] for seen in watched):
                watched.append(line)
    return sample(jobs, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="also 100,000 (slow to generate the first time)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to run instead of 1,000 and 10,000")
    parser.add_argument("--kinds", nargs="*", default=["memory"], help="memory knowledge table")
    parser.add_argument("--baseline", help="another source tree to time beside this one (PYTHONPATH)")
    args = parser.parse_args()
    sources = {"": SOURCE} if not args.baseline else {"baseline, ": args.baseline, "this, ": SOURCE}
    sizes = args.sizes or ([1_000, 10_000, 100_000] if args.big else [1_000, 10_000])
    chosen = {label: job for label, job in bench_growth.COMMANDS.items() if job[0] in args.kinds}
    bench_growth.COMMANDS = chosen
    bench_growth.BUILDS = {}
    CACHE.mkdir(parents=True, exist_ok=True)
    RUNTIME.mkdir(mode=0o700, exist_ok=True)
    results: dict[int, dict[str, float]] = {}
    watched: list[str] = []
    vaults_seen: list[Path] = []
    try:
        for n in sizes:
            vaults = {kind: cached(kind, n, MAKERS[kind]) for kind in args.kinds}
            vaults_seen += vaults.values()
            results[n] = measure(vaults, args.runs, watched, sources)
            print(f"N={n:,} done (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    finally:
        for vault in vaults_seen:  # no watch process outlives the bench
            watch_client.stop(variant_env(vault, "watch"), vault)
    print(report(results, {f"{name}{variant}": None for name in sources for variant in VARIANTS}, args.runs))
    print()
    print("Watch processes (resident memory after the warm-up):")
    for line in watched or ["none started (every folder below 2,000 files)"]:
        print(f"- {line}")


if __name__ == "__main__":
    main()
