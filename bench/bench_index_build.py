#!/usr/bin/env python3
"""The first memory index build and the first recall after it, at 10,000 records (or --sizes).

Three processes in a row on a vault whose `.aibuddy/` was deleted: `memory list --json` (the
index build: read, parse, dates, tokens, character runs, SQLite), then `memory recall` (the first
question: every record's meaning vector is computed, semantic.py), then the same recall again
(the index complete), beside `python -c pass`; with `--baseline DIR` the same with another source
tree (e.g. /work/main), round by round, so both are measured on a machine equally busy. Wall and
CPU time (user + system: steadier on a busy machine), medians of --runs rounds.

With --baseline, the answers too: each tree builds the index of bench_recall_warm's 10,000 records
(common words, rare ones, ~15 % Chinese, dated) anew and ranks its 210 questions and a few more
Chinese ones (words, meaning and their fusion, the top 10 names with their scores, as recall
ranks them); the script says whether both trees answer every question the same, to the last bit
of each score. A faster build must not change an answer (--no-answers skips it).

Run with the project's virtualenv:  .venv/bin/python bench/bench_index_build.py [--baseline /work/main]
The vault is bench_growth's (cached under /dev/shm/aibuddy-bench-growth/), copied once to
/dev/shm/aibuddy-bench-build/ (or $AIBUDDY_BENCH_BUILD) so its index can be deleted freely.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
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


ANSWERS_SIZE = 10_000
EXTRA_QUESTIONS = ["周报格式", "会议纪要", "预算", "她平时吃荤吗？", "上周的会议", "2024年3月8日"]


def answers_vault() -> Path:
    """A copy of bench_recall_warm's vault, made once, that only this check reads (nothing
    recalls in it, so no record's telemetry changes between two trees' answers)."""
    import bench_recall_warm

    copy = COPIES / f"answers-{ANSWERS_SIZE}"
    if not (copy / ".complete").is_file():
        generated = bench_recall_warm.generate(ANSWERS_SIZE)
        staging = copy.with_name(copy.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(generated.path, staging, ignore=shutil.ignore_patterns(CACHE_DIR))
        (staging / "facts.json").write_text(json.dumps(generated.facts), encoding="utf-8")
        (staging / ".complete").write_text("", encoding="utf-8")
        shutil.rmtree(copy, ignore_errors=True)
        staging.rename(copy)
    return copy


def dump_answers(vault: Path) -> None:
    """(In a child process, the tree under test first on its path.) The index of vault built
    anew, then each question's rankings, one JSON line each."""
    import bench_recall_warm

    from aibuddy_cli.app.session import Session
    from aibuddy_cli.memory.semantic import shared
    from aibuddy_cli.memory.service import today
    from aibuddy_cli.vault import Vault

    facts = json.loads((vault / "facts.json").read_text(encoding="utf-8"))
    asked = [question for _, question in bench_recall_warm.questions(bench_recall_warm.Vault(vault, facts))]
    shutil.rmtree(vault / CACHE_DIR, ignore_errors=True)
    with Session(Vault.open(vault, {}), bench_recall_warm.USER, environ={}) as session:
        index = session.memory.index()
        for question in [*asked, *EXTRA_QUESTIONS]:
            ranked = index.ranked(question, 10, today(), shared())
            found = [question, ranked.scored, ranked.signals, ranked.words[:10], ranked.meaning[:10]]
            print(json.dumps(found, ensure_ascii=False))


def answers(source: str, vault: Path) -> list[str]:
    env = {**bench_env(vault, source), "PYTHONPATH": os.pathsep.join([source, str(Path(__file__).parent)])}
    argv = [sys.executable, __file__, "--dump-answers", str(vault)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.splitlines()


def compare_answers(sources: dict[str, str]) -> None:
    vault = answers_vault()
    (before, after) = (answers(source, vault) for source in sources.values())
    differing = [json.loads(line)[0] for line, other in zip(before, after, strict=True) if line != other]
    print(
        f"\nAnswers ({len(before)} questions over {ANSWERS_SIZE:,} records, top 10 names and scores of words,"
        f" meaning and their fusion, each tree's index built anew): "
        + ("identical." if not differing else f"{len(differing)} DIFFER: {differing[:10]}")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", help="another source tree to time beside this one (PYTHONPATH)")
    parser.add_argument("--no-answers", action="store_true", help="with --baseline: skip comparing answers")
    parser.add_argument("--dump-answers", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump_answers:
        dump_answers(args.dump_answers)
        return
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
    if args.baseline and not args.no_answers:
        compare_answers(sources)


if __name__ == "__main__":
    main()
