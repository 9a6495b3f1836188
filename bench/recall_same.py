#!/usr/bin/env python3
"""Whether a change of recall's code changes what it answers: the records `memory recall` would
choose (its top five) and the fused ranking behind them (names and scores) for ~200 mixed
questions (common English words, a rare one, Chinese, dated, paraphrases) over bench_growth's
memory vaults, with this tree's code and with another's (--baseline SRC, e.g. /work/main); 10,000 records,
and 100,000 with --big.

Each source ranks in a process of its own, in process (the service's own ranking, no telemetry
written, so no question changes the next one's answer), with "today" fixed; "cold" as a one-shot
command ranks (numpy not loaded), "warm" as a server does (numpy loaded: the kept sign codes).
Prints the questions whose answer differs, per category and size; exits 1 if any does.

Run with the project's virtualenv:  .venv/bin/python bench/recall_same.py [--big] [--baseline SRC]
Vaults: bench_growth.py's cache (/dev/shm/aibuddy-bench-growth/), made when missing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

TODAY = dt.date(2026, 12, 6)
SEED = 35


def questions() -> list[tuple[str, str]]:
    """(category, question), 200 different ones, from the words bench_memory's records are made of."""
    from bench_memory import VOCAB, ZH_PHRASES

    rng = random.Random(SEED)
    asked: list[tuple[str, str]] = []

    def ask(category: str, count: int, make: Callable[[], str]) -> None:
        for _ in range(count):
            question = make()
            while (category, question) in asked:
                question = make()
            asked.append((category, question))

    ask("common", 60, lambda: " ".join(rng.sample(VOCAB, rng.choice([1, 2, 2, 3]))))
    rare = ["kubernetes rollback runbook", "helm history", "kubectl rollout", "rollback"]
    ask("rare", 20, lambda: f"{rng.choice(rare)} {rng.choice(VOCAB)}")
    chinese = iter(["周报格式", "测试环境部署", "数据库迁移", "代码格式", "回归测试", "部署脚本", "组长"])

    def zh() -> str:
        phrase = rng.choice(ZH_PHRASES)
        start = rng.randrange(max(1, len(phrase) - 6))
        return next(chinese, None) or phrase[start : start + rng.randint(3, 8)]

    ask("chinese", 40, zh)
    months = ["January", "March", "May", "August", "October", "November"]
    forms = [
        lambda: f"{rng.choice(VOCAB)} notes from last week",
        lambda: f"what did we decide last {rng.choice(['Monday', 'Tuesday', 'Friday'])}",
        lambda: f"{rng.choice(VOCAB)} {rng.choice(VOCAB)} in {rng.choice(months)}",
        lambda: f"{rng.choice(VOCAB)} on {(TODAY - dt.timedelta(days=rng.randint(1, 300))).isoformat()}",
        lambda: "what happened yesterday",
        lambda: f"the {rng.choice(VOCAB)} we discussed two weeks ago",
        lambda: f"{rng.choice(ZH_PHRASES)[:4]} 上周",
    ]
    turn = iter(range(1_000_000))
    ask("dated", 50, lambda: forms[next(turn) % len(forms)]())
    paraphrases = [
        "money planning session", "shipping the build to production", "talk with the buyer",
        "how we put code live safely", "who is on call tonight", "making queries faster",
        "keeping secrets safe", "the plan for next quarter", "fixing a slow page", "what the user prefers",
    ]  # fmt: skip
    tails = ["", " please", " again", " notes"]
    ask("paraphrase", 30, lambda: rng.choice(paraphrases) + rng.choice(tails))
    return asked


def answers(vault: str, warm: bool) -> dict[str, object]:
    """In this process: each question's chosen names and fused ranking (names, scores)."""
    from aibuddy_cli.app.session import Session
    from aibuddy_cli.memory import index as memory_index
    from aibuddy_cli.memory import lexical
    from aibuddy_cli.memory import service as memory_service
    from aibuddy_cli.memory.lexical import above_floor
    from aibuddy_cli.vault import Vault

    if warm:
        import numpy  # noqa: F401  (a server has it loaded: the kept sign codes rank)
    memory_service.today = lambda: TODAY  # type: ignore[attr-defined]
    found: dict[str, object] = {}
    with Session(Vault.open(Path(vault), {}), "bench", environ={}) as session:
        service = session.memory
        index = service.index()
        limit = 5
        for category, question in questions():
            if not warm:  # each question as a one-shot command's first (index.py, lexical.py)
                memory_index._KEPT_CODES.clear()
                lexical._KEPT.clear()
                getattr(memory_index, "_KEPT_GRAMS", {}).clear()
            ranking, method = service._ranked(index, question, max(50, limit))
            matched = set(above_floor(ranking.words, len(ranking.words))) | dict(ranking.meaning).keys()
            chosen = [name for name, _ in ranking.scored[:limit] if name in matched]
            found[f"{category}|{question}"] = {
                "chosen": chosen,
                "method": method,
                "ranked": [[name, round(score, 12)] for name, score in ranking.scored[:20]],
            }
    found["numpy loaded"] = "numpy" in sys.modules
    return found


def run(source: str, vault: str, warm: bool) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, str(Path(__file__).parent)])}
    argv = [sys.executable, __file__, "--answers", vault] + (["--warm"] if warm else [])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"{source} on {vault} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="the source tree to compare with (PYTHONPATH)")
    parser.add_argument("--big", action="store_true", help="also 100,000 records")
    parser.add_argument("--answers", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.answers:
        print(json.dumps(answers(args.answers, args.warm)))
        return
    import bench_growth

    this = str(Path(__file__).resolve().parent.parent)
    baseline = args.baseline or this
    differ = 0
    for n in [10_000, 100_000] if args.big else [10_000]:
        vault = str(bench_growth.cached("memory", n, bench_growth.make_memory))
        runs = {
            (name, mode): run(source, vault, mode == "warm")
            for name, source in (("baseline", baseline), ("this", this))
            for mode in ("cold", "warm")
        }
        reference = runs[("baseline", "cold")]
        for (name, mode), got in runs.items():
            counts: dict[str, list[int]] = {}
            for key, answer in reference.items():
                if key == "numpy loaded":
                    continue
                category = key.split("|", 1)[0]
                tally = counts.setdefault(category, [0, 0, 0])
                tally[0] += 1
                other = got[key]
                assert isinstance(answer, dict) and isinstance(other, dict)
                if other["chosen"] != answer["chosen"]:
                    tally[1] += 1
                    differ += 1
                    print(f"  {n:,} {name}/{mode} {key!r}: {answer['chosen']} -> {other['chosen']}")
                elif other["ranked"] != answer["ranked"]:
                    tally[2] += 1
            summary = ", ".join(
                f"{category} {asked}: {top} top-5 differ, {ranks} ranks differ"
                for category, (asked, top, ranks) in counts.items()
            )
            print(f"{n:,} {name}/{mode} (numpy loaded: {got['numpy loaded']}) vs baseline/cold: {summary}")
    print(f"load {os.getloadavg()[0]:.1f}; questions whose top five differ: {differ}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
