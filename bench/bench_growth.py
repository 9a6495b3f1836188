#!/usr/bin/env python3
"""How a cold command's time grows with the data: 1,000 and 10,000 (and, with --big, 100,000)
memory records, knowledge documents and table rows.

Each command is a new process once the index exists (`memory recall` of a common-word question,
`memory list`, `kb search`, `table filter`), as a ratio to `python -c pass` of the same run, with
the growth factor of each step of ten times the data (target: at most 2×). The first command
after deleting `.aibuddy/` (the index build) is timed once per size as well.

`--baseline DIR` times the same commands with another source tree (e.g. /work/main) in the same
rounds, so a change is seen beside what it changes on a machine as busy as it was then.

Run with the project's virtualenv:  .venv/bin/python bench/bench_growth.py [--big] [--runs 5]
Generated vaults are cached under /dev/shm/aibuddy-bench-growth/ (or $AIBUDDY_BENCH_CACHE).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_kb import make_document
from bench_memory import make_records
from bench_tables import COLUMNS, make_rows, write_jsonl
from benchlib import check_run

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.records import render_record
from aibuddy_cli.vault import CACHE_DIR, Vault, init_vault

CACHE = Path(os.environ.get("AIBUDDY_BENCH_CACHE", "/dev/shm/aibuddy-bench-growth"))
AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
FORMAT = 1  # bump when what is generated changes, so cached vaults are made again
RECALL_QUERY = "deploy report"  # each word in a large share of the records
KB_QUERY = "database configuration performance"
TABLE = "big"
TABLE_FILTER = 'price > 990 and category == "tools"'
RECALL = f'memory recall "{RECALL_QUERY}"'
ZH_QUERY = "周报格式"  # Chinese: ranked by the characters it shares with the records (ngrams.py)
SEARCH = f'kb search "{KB_QUERY}"'
FILTER = f"table filter {TABLE} --where '{TABLE_FILTER}'"


def cached(kind: str, n: int, make) -> Path:  # type: ignore[no-untyped-def]
    """The vault of `kind` at size n, made by make(staging) unless a complete one is cached."""
    vault = CACHE / f"{kind}-{n}-v{FORMAT}"
    if (vault / ".complete").is_file():
        return vault
    print(f"generating {kind} at {n:,} in {vault} ...", file=sys.stderr, flush=True)
    staging = vault.with_name(vault.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(vault, ignore_errors=True)
    init_vault(staging, USER)
    make(staging, n)
    (staging / ".complete").write_text("", encoding="utf-8")
    staging.rename(vault)
    return vault


def make_memory(vault: Path, n: int) -> None:
    folder = vault / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    for record, mtime in make_records(n, time.time()):
        path = folder / f"{record.name}.md"
        path.write_text(render_record(record), encoding="utf-8")
        os.utime(path, (mtime, mtime))


def make_knowledge(vault: Path, n: int) -> None:
    """n documents of about 2 KB (30 % Chinese), imported and published through the service."""
    rng = random.Random(7)
    corpus = vault.parent / f"{vault.name}-corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    for number in range(n):
        folder = corpus / f"part-{number // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc-{number:06d}.md").write_text(
            make_document(rng, rng.random() < 0.3, [], size=2000), encoding="utf-8"
        )
    with Session(Vault.open(vault, {}), USER, environ={}) as session:
        outcomes = session.knowledge.import_paths([str(corpus)], scope="system", recursive=True)
        docs = [outcome.doc for outcome in outcomes if outcome.doc]
        for start in range(0, len(docs), 5000):
            session.knowledge.publish(*docs[start : start + 5000])
    shutil.rmtree(corpus, ignore_errors=True)


def make_table(vault: Path, n: int) -> None:
    rows_file = vault.parent / f"{vault.name}-rows.jsonl"
    write_jsonl(rows_file, make_rows(n, random.Random(42), set()))
    env = bench_env(vault, None)
    create = [str(AIBUDDY), "table", "create", TABLE, "-d", "generated benchmark rows"]
    check_run(create + [arg for column in COLUMNS for arg in ("-c", column)], env)
    check_run([str(AIBUDDY), "table", "add", TABLE, "--file", str(rows_file), "--json"], env)
    rows_file.unlink()


MAKERS = {"memory": make_memory, "knowledge": make_knowledge, "table": make_table}
COMMANDS = {  # label -> (vault kind, argv after `aibuddy`)
    RECALL: ("memory", ["memory", "recall", RECALL_QUERY, "--json"]),
    f'memory recall "{ZH_QUERY}"': ("memory", ["memory", "recall", ZH_QUERY, "--json"]),
    "memory list": ("memory", ["memory", "list"]),
    "memory list --limit 50": ("memory", ["memory", "list", "--limit", "50"]),  # a terminal's page
    "memory list --json": ("memory", ["memory", "list", "--json"]),
    SEARCH: ("knowledge", ["kb", "search", KB_QUERY, "--json"]),
    FILTER: ("table", ["table", "filter", TABLE, "--where", TABLE_FILTER, "--json"]),
}
BUILDS = {  # label -> (vault kind, argv): the first command after deleting .aibuddy/
    "memory: first `memory recall` (index build)": ("memory", COMMANDS[RECALL][1]),
    "knowledge: first `kb search` (index build)": ("knowledge", COMMANDS[SEARCH][1]),
    "table: first `table filter` (index build)": ("table", COMMANDS[FILTER][1]),
}


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) ms of one whole process: on a busy machine the CPU time is the
    steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def bench_env(vault: Path, source: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_MODEL", "AIBUDDY_USER"))}
    env.update(AIBUDDY_VAULT=str(vault), AIBUDDY_USER=USER)
    if source:
        env["PYTHONPATH"] = source
    # Every source compiled once, into a cache of the bench's own (never into a source tree).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    return env


def measure(vaults: dict[str, Path], sources: dict[str, str | None], runs: int) -> dict[str, float]:
    """Median ms per (source, command), interleaved round by round after one warm-up each."""
    jobs = {"python -c pass": ([sys.executable, "-c", "pass"], dict(os.environ))}
    for name, source in sources.items():
        for label, (kind, argv) in COMMANDS.items():
            jobs[f"{name}|{label}"] = ([str(AIBUDDY), *argv], bench_env(vaults[kind], source))
    for argv, env in jobs.values():
        check_run(argv, env)
    return sample(jobs, runs)


def sample(jobs: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, float]:
    """Median wall and CPU ms per job label ("cpu|" + label), the jobs interleaved round by round."""
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in jobs}
    for _ in range(runs):
        for label, (argv, env) in jobs.items():
            samples[label].append(run_once(argv, env))
    timings = {}
    for label, values in samples.items():
        timings[label] = statistics.median(wall for wall, _ in values)
        timings[f"cpu|{label}"] = statistics.median(cpu for _, cpu in values)
    return timings


def builds(vaults: dict[str, Path], sources: dict[str, str | None]) -> dict[str, float]:
    """One index build per source and kind: .aibuddy/ removed, then the first command."""
    timings = {}
    for name, source in sources.items():
        for label, (kind, argv) in BUILDS.items():
            shutil.rmtree(vaults[kind] / CACHE_DIR, ignore_errors=True)
            wall, cpu = run_once([str(AIBUDDY), *argv], bench_env(vaults[kind], source))
            timings[f"{name}|{label}"], timings[f"cpu|{name}|{label}"] = wall, cpu
    return timings


def report(results: dict[int, dict[str, float]], sources: dict[str, str | None], runs: int) -> str:
    sizes = sorted(results)
    steps = list(zip(sizes, sizes[1:], strict=False))
    lines = [
        f"Median of {runs} runs after 1 warm-up, each a new process with the index built (the index"
        " builds: 1 run); × = ratio to `python -c pass` of the same size's rounds; growth = time at"
        " 10× the data ÷ time (target ≤ 2×). Wall time, then CPU time (user + system, steadier on a"
        f" busy machine). Load average at the end: {os.getloadavg()[0]:.1f}.",
    ]
    for title, prefix in (("wall", ""), ("CPU", "cpu|")):
        lines += [
            "",
            "| "
            + " | ".join(
                [
                    "source",
                    f"command ({title})",
                    *(f"N = {n:,}" for n in sizes),
                    *(f"{a:,}→{b:,}" for a, b in steps),
                ]
            )
            + " |",
            "|---|---|" + "---|" * (len(sizes) + len(steps)),
        ]
        base = {n: results[n][f"{prefix}python -c pass"] for n in sizes}
        lines.append(
            "| | `python -c pass` | "
            + " | ".join(f"{base[n]:.0f} ms" for n in sizes)
            + " |"
            + " |" * len(steps)
        )
        for name in sources:
            for label in [*COMMANDS, *BUILDS]:
                key = f"{prefix}{name}|{label}"
                got = {n: results[n].get(key) for n in sizes}
                cells = [f"{ms:.0f} ms ({ms / base[n]:.1f}×)" if ms else "-" for n, ms in got.items()]
                growth = [f"{got[b] / got[a]:.2f}×" if got[a] and got[b] else "-" for a, b in steps]
                lines.append(f"| {name} | {label} | " + " | ".join(cells + growth) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="also 100,000 (slow to generate the first time)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to run instead of 1,000 and 10,000")
    parser.add_argument("--baseline", help="another source tree to time beside this one (PYTHONPATH)")
    parser.add_argument(
        "--builds-up-to",
        type=int,
        default=10_000,
        help="time index builds at sizes up to this (default 10,000)",
    )
    parser.add_argument("--kinds", nargs="*", default=list(MAKERS), help="memory knowledge table")
    args = parser.parse_args()
    sizes = args.sizes or ([1_000, 10_000, 100_000] if args.big else [1_000, 10_000])
    sources: dict[str, str | None] = {"this": str(Path(__file__).resolve().parent.parent)}
    if args.baseline:
        sources = {"baseline": args.baseline, **sources}
    global COMMANDS, BUILDS
    COMMANDS = {label: job for label, job in COMMANDS.items() if job[0] in args.kinds}
    BUILDS = {label: job for label, job in BUILDS.items() if job[0] in args.kinds}
    CACHE.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, float]] = {}
    for n in sizes:
        vaults = {kind: cached(kind, n, MAKERS[kind]) for kind in args.kinds}
        results[n] = builds(vaults, sources) if n <= args.builds_up_to else {}
        results[n].update(measure(vaults, sources, args.runs))
        print(f"N={n:,} done (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    print(report(results, sources, args.runs))


if __name__ == "__main__":
    main()
