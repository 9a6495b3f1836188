#!/usr/bin/env python3
"""Whole-process timing of aibuddy's memory commands on vaults of 1,000 to 10,000 records.

Recall ranks by words and meaning (the default); the same recall with `[recall] semantic = false`
(the words alone) is timed in the same rounds, in English (the static vectors) and in Chinese (the
characters the question shares with the records, memory/ngrams.py), so the table shows what meaning
costs a cold process (the index built, its vectors made), and, once, what making every record's
vector costs.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_memory.py
Vaults are generated once under bench/out/ (git-ignored) and reused; delete them to regenerate.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from benchlib import check_run, run_once

from aibuddy_cli.memory.records import TYPES, MemoryRecord, parse_record, render_record
from aibuddy_cli.vault import CACHE_DIR, init_vault

OUT = Path(__file__).resolve().parent / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
OLD_NAME = "kubernetes-rollback-runbook"
EN_QUERY = "kubernetes rollback runbook"
ZH_QUERY = "周报格式"
# Questions of common words only (each vocabulary word is in about two thirds of the records), and
# of common words beside one no record holds: every record that matches is a candidate.
COMMON_QUERY = "staging deploy release"
COMMON_ABSENT_QUERY = "staging deploy marker"
ZH_COMMON_QUERY = "测试环境部署"
# A Chinese question as long as a turn of a conversation: many characters, each with its records.
ZH_LONG_QUERY = (
    "组长说周报格式要改成三段式，进展、风险和计划分开写，"
    "部署前的测试结果也要附上，我想确认一下具体的模板放在哪里"
)
YEAR = 365 * 24 * 3600

VOCAB = """api cache build deploy release branch merge review test staging production
database schema migration index query latency timeout retry queue worker cron backup restore
logging metrics alert dashboard oncall incident postmortem ticket sprint roadmap milestone
customer invoice billing report weekly summary format template markdown table chart python
typescript rust golang docker helm terraform ansible nginx postgres redis kafka s3 bucket
region cluster node pod container image registry token secret vault rotate certificate tls
dns proxy firewall vpn laptop editor vim vscode shortcut keyboard meeting standup calendar
email slack channel thread reply tone concise verbose bullet heading prefer avoid always never
style naming convention lint formatter pytest fixture mock coverage benchmark profile memory
cpu disk quota limit budget cost vendor contract license audit compliance privacy gdpr
rollback kubernetes feature flag canary experiment metric funnel onboarding docs wiki
""".split()
ZH_PHRASES = [
    "周报格式要用三段式：进展、风险、下周计划",
    "每次部署前必须先跑完整的测试",
    "测试环境的部署脚本在 ops 仓库里",
    "周报每周五下午五点前发给组长",
    "代码格式统一用 black，行宽一百",
    "用户喜欢简洁的中文回答，不要客套话",
    "数据库迁移要在低峰期部署",
    "回归测试失败时先检查格式化工具的版本",
]


def sentence(rng: random.Random, low: int, high: int) -> str:
    """A capitalised sentence of random vocabulary words."""
    words = rng.choices(VOCAB, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def make_body(rng: random.Random, chinese: bool) -> str:
    """A Markdown body of 200-3000 UTF-8 bytes: a heading, paragraphs and a bullet list."""
    target = rng.randint(200, 3000)
    parts = [f"# {sentence(rng, 2, 5)[:-1]}"]
    while len("\n".join(parts).encode()) < target - 120:
        if chinese and rng.random() < 0.3:
            parts.append(rng.choice(ZH_PHRASES) + "。")
        elif rng.random() < 0.25:
            parts.append("\n".join(f"- {sentence(rng, 3, 8)}" for _ in range(rng.randint(2, 4))))
        else:
            parts.append(" ".join(sentence(rng, 6, 16) for _ in range(rng.randint(1, 3))))
    text = "\n\n".join(parts) + "\n"
    return text.encode()[:3000].decode(errors="ignore").rstrip() + "\n"


def iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_records(n: int, now: float) -> list[tuple[MemoryRecord, float]]:
    """n varied records with distinct mtimes over the past year; the runbook record is the oldest."""
    rng = random.Random(42)
    offsets = sorted(rng.sample(range(60, YEAR), n - 1))
    records: list[tuple[MemoryRecord, float]] = []
    for i, offset in enumerate(offsets):
        chinese = rng.random() < 0.15
        description = sentence(rng, 6, 14)
        if chinese:
            description = f"{rng.choice(ZH_PHRASES)}；{description}"
        mtime, kind = now - offset, rng.choice(TYPES)
        record = MemoryRecord(
            name=f"{kind[:4]}-{rng.choice(VOCAB)}-{rng.choice(VOCAB)}-{i:05d}",
            description=description,
            type=kind,
            body=make_body(rng, chinese),
            provenance="auto" if rng.random() < 0.3 else "manual",
            created=iso(mtime - rng.randint(0, 30 * 86400)),
            updated=iso(mtime),
            recall_count=rng.choice([0, 0, 0, 1, 2, 5]),
        )
        records.append((record, mtime))
    oldest = now - YEAR - 3600
    runbook = MemoryRecord(
        name=OLD_NAME,
        description="Kubernetes rollback runbook: how to roll a bad release back with helm and kubectl",
        type="reference",
        body="# Rollback\n\n1. `helm history app`\n2. `helm rollback app <revision>`\n"
        "3. Watch `kubectl rollout status deploy/app` and post in #incidents.\n",
        created=iso(oldest),
        updated=iso(oldest),
    )
    return [(runbook, oldest), *records]


def build_vault(n: int) -> tuple[Path, dict[str, float]]:
    """The cached vault of n records and its file mtimes; generated if missing or incomplete."""
    vault, manifest = OUT / f"vault-{n}", OUT / f"vault-{n}.mtimes.json"
    if vault.is_dir() and manifest.is_file():
        return vault, json.loads(manifest.read_text(encoding="utf-8"))
    print(f"generating {n:,} records in {vault} ...", file=sys.stderr)
    staging = OUT / f"vault-{n}.tmp"
    for path in (vault, staging):
        shutil.rmtree(path, ignore_errors=True)
    init_vault(staging, USER)
    folder = staging / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    mtimes: dict[str, float] = {}
    for record, mtime in make_records(n, time.time()):
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
        mtimes[record.name] = mtime
    staging.rename(vault)
    manifest.write_text(json.dumps(mtimes), encoding="utf-8")
    return vault, mtimes


def restore_mtimes(vault: Path, mtimes: dict[str, float]) -> None:
    """Undo earlier recalls, so the runbook record is again the oldest: recency follows a
    record's `lastRecalledAt` (then `updated`, and the mtime only for a record without dates)."""
    for name, mtime in mtimes.items():
        path = vault / "memory" / USER / f"{name}.md"
        text = path.read_text(encoding="utf-8")
        if "\nlastRecalledAt: null\n" not in text:
            record = parse_record(name, text)._replace(last_recalled_at=None)
            path.write_text(render_record(record), encoding="utf-8")
        os.utime(path, (mtime, mtime))


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms per command; one captured warm-up each, then `runs` interleaved rounds."""
    for argv in commands.values():
        check_run(argv, env)
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(run_once(argv, env))
    return {label: statistics.median(values) for label, values in samples.items()}


def recalled_names(query: str, env: dict[str, str]) -> list[str]:
    done = check_run([str(AIBUDDY), "memory", "recall", query, "--json"], env)
    try:
        return [record["name"] for record in json.loads(done.stdout)["records"]]
    except (ValueError, KeyError, TypeError):
        return []


COMMANDS = {
    "`python -c pass`": [sys.executable, "-c", "pass"],
    "`aibuddy --help`": [str(AIBUDDY), "--help"],
    "`memory list --json`": [str(AIBUDDY), "memory", "list", "--json"],
    f'`memory recall "{EN_QUERY}" --json`': [str(AIBUDDY), "memory", "recall", EN_QUERY, "--json"],
    f'`memory recall "{ZH_QUERY}" --json`': [str(AIBUDDY), "memory", "recall", ZH_QUERY, "--json"],
    **{
        f'`memory recall "{query}" --json`': [str(AIBUDDY), "memory", "recall", query, "--json"]
        for query in (COMMON_QUERY, COMMON_ABSENT_QUERY, ZH_COMMON_QUERY)
    },
}
BASE, HELP, LIST, RECALL_EN, RECALL_ZH, *RECALL_COMMON = COMMANDS
COLD = "`memory list --json`, cold index (1 run)"
WORDS_EN = f'`memory recall "{EN_QUERY}" --json`, words alone (`semantic = false`)'
MEANING_EN = f'`memory recall "{EN_QUERY}" --json`, words and meaning (same rounds)'
WORDS_ZH = f'`memory recall "{ZH_QUERY}" --json`, words alone (`semantic = false`)'
MEANING_ZH = f'`memory recall "{ZH_QUERY}" --json`, words and meaning (same rounds)'
PAIRS = ((RECALL_EN, WORDS_EN, MEANING_EN), (RECALL_ZH, WORDS_ZH, MEANING_ZH))
FIRST = "first recall after the index is built: every record's vector made (1 run)"
MEANING_BUDGET_MS = 30  # what meaning may add to a cold recall at 10,000 records


def set_semantic(vault: Path, on: bool) -> None:
    """[recall] semantic in the vault's aibuddy.toml."""
    config = vault / "aibuddy.toml"
    text = config.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("semantic =")]
    if "[recall]" not in lines:
        lines.append("[recall]")
    lines.insert(lines.index("[recall]") + 1, f"semantic = {'true' if on else 'false'}")
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure_meaning(vault: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms of the English and the Chinese recall with the words alone and with meaning,
    interleaved round by round (the setting switched between runs, outside the timing)."""
    samples: dict[str, list[float]] = {label: [] for _, words, meaning in PAIRS for label in (words, meaning)}
    for _ in range(runs):
        for command, words, meaning in PAIRS:
            for label, on in ((words, False), (meaning, True)):
                set_semantic(vault, on)
                samples[label].append(run_once(COMMANDS[command], env))
    set_semantic(vault, True)
    return {label: statistics.median(values) for label, values in samples.items()}


WARM_QUERIES = (EN_QUERY, COMMON_QUERY, COMMON_ABSENT_QUERY, ZH_QUERY, ZH_COMMON_QUERY, ZH_LONG_QUERY)
# One process answering recall after recall, as an MCP server does: the median ms of one call
# after the first (the index open, the modules imported); and of the ranking by words alone and by
# words and meaning (the index already checked against the folder, which a recall does first).
WARM_SCRIPT = """
import datetime as dt, json, statistics, sys, time
from pathlib import Path
from aibuddy_cli.memory.semantic import shared
from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault
runs, queries = int(sys.argv[2]), sys.argv[3:]
today = dt.date.today()
with Session(Vault.open(Path(sys.argv[1]), {}), "bench", environ={}) as session:
    timings = {"recall": {}, "rank": {}, "meaning": {}}
    for query in queries:
        for label, call in (
            ("recall", lambda: session.memory.recall(query)),
            ("rank", lambda index=session.memory.index(): index.rank(query, 5, today)),
            ("meaning", lambda index=session.memory.index(): index.rank(query, 5, today, shared())),
        ):
            call()
            samples = []
            for _ in range(runs):
                begun = time.perf_counter()
                call()
                samples.append((time.perf_counter() - begun) * 1000)
            timings[label][query] = statistics.median(samples)
print(json.dumps(timings))
"""


def warm(vault: Path, runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median ms of an in-process recall after the first, and of its ranking, per WARM_QUERIES."""
    done = check_run([sys.executable, "-c", WARM_SCRIPT, str(vault), str(runs), *WARM_QUERIES], env)
    try:
        found = json.loads(done.stdout)
    except ValueError:
        return {}
    recalls = {f'warm `recall("{query}")`, in process': ms for query, ms in found["recall"].items()}
    ranks = {f'its ranking by words alone, `rank("{query}", 5)`': ms for query, ms in found["rank"].items()}
    fused = {
        f'its ranking by words and meaning, `rank("{query}", 5, model)`': ms
        for query, ms in found["meaning"].items()
    }
    return recalls | ranks | fused


def bench_size(n: int, runs: int) -> tuple[dict[str, float], list[str]]:
    """Timings for one vault size, and notes on what recall returned."""
    vault, mtimes = build_vault(n)
    restore_mtimes(vault, mtimes)
    env = dict(os.environ, AIBUDDY_VAULT=str(vault), AIBUDDY_USER=USER)
    env.pop("AIBUDDY_MODEL", None)
    shutil.rmtree(vault / CACHE_DIR, ignore_errors=True)
    set_semantic(vault, True)
    cold = run_once(COMMANDS[LIST], env)
    first = run_once(COMMANDS[RECALL_EN], env)
    en, zh = recalled_names(EN_QUERY, env), recalled_names(ZH_QUERY, env)
    found = "FOUND" if OLD_NAME in en else "NOT FOUND"
    notes = [
        f"N={n:,}: {OLD_NAME} {found} (recall returned: {', '.join(en) or 'nothing'})",
        f"N={n:,}: {ZH_QUERY} recall returned {len(zh)} record(s): {', '.join(zh) or 'nothing'}",
    ]
    for query in (COMMON_QUERY, COMMON_ABSENT_QUERY, ZH_COMMON_QUERY):
        notes.append(f"N={n:,}: {query} recall returned {len(recalled_names(query, env))} record(s)")
    print("\n".join(notes), file=sys.stderr)
    timings = measure(COMMANDS, env, runs)
    timings.update(measure_meaning(vault, env, runs))
    timings[COLD] = cold
    timings[FIRST] = first
    timings.update(warm(vault, runs, env))
    return timings, notes


def cell(ms: float, base: float) -> str:
    return f"{ms:.0f} ms ({ms / base:.1f}×)"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(results: dict[int, dict[str, float]], runs: int, notes: list[str]) -> str:
    """The Markdown table, target checks and recall notes."""
    sizes = sorted(results)
    rows = [BASE, HELP, LIST, COLD, RECALL_EN, RECALL_ZH, *RECALL_COMMON, WORDS_EN, MEANING_EN, WORDS_ZH,
            MEANING_ZH, FIRST]
    lines = [
        f"Median of {runs} runs after 1 warm-up; ratio to `python -c pass` measured in the same run."
        " A command is a whole process (a cold recall: the index opened, the first question);"
        " warm: one more recall in a process that answered one already.\n",
        "| command | " + " | ".join(f"N = {n:,}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for row in rows:
        cells = [cell(results[n][row], results[n][BASE]) for n in sizes]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    for row in sorted({row for n in sizes for row in results[n] if row.startswith(("warm", "its"))}):
        cells = [f"{results[n][row]:.2f} ms" if row in results[n] else "-" for n in sizes]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")

    def ratio(n: int, row: str) -> float:
        return results[n][row] / results[n][BASE]

    worst_recall = max(ratio(n, row) for n in sizes for row in (RECALL_EN, RECALL_ZH, *RECALL_COMMON))
    worst_help = max(ratio(n, HELP) for n in sizes)
    lines += ["", "Targets:", ""]
    lines.append(f"- recall ≤ 10× bare: worst {worst_recall:.1f}× — {verdict(worst_recall <= 10)}")
    lines.append(f"- `--help` ≤ 20× bare: worst {worst_help:.1f}× — {verdict(worst_help <= 20)}")
    if 10_000 in results:
        list_ratio = ratio(10_000, LIST)
        lines.append(f"- list on 10,000 ≤ 40× bare: {list_ratio:.1f}× — {verdict(list_ratio <= 40)}")
    else:
        lines.append("- list on 10,000 ≤ 40× bare: not measured")
    for n in sizes:
        for language, (_, words, meaning) in zip(("English", "Chinese"), PAIRS, strict=True):
            extra = results[n][meaning] - results[n][words]
            lines.append(
                f"- meaning adds to a cold {language} recall at {n:,}: {extra:+.0f} ms"
                f" (≤ {MEANING_BUDGET_MS} ms at 10,000)"
                + (f" — {verdict(extra <= MEANING_BUDGET_MS)}" if n == 10_000 else "")
            )
    if 1_000 in results and 10_000 in results:
        for row in (RECALL_EN, RECALL_ZH):
            growth = results[10_000][row] / results[1_000][row]
            lines.append(
                f"- recall grows ≤ linearly ({row}): 10k/1k time ratio {growth:.2f} vs 10"
                f" — {verdict(growth <= 10)}"
            )
    else:
        lines.append("- recall growth 10k/1k: not measured")
    lines += ["", "Recall checks:", ""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,10000", help="comma-separated record counts")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (median)")
    parser.add_argument("--quick", action="store_true", help="smoke check: 1,000 records, 3 runs")
    args = parser.parse_args()
    sizes = [1000] if args.quick else [int(size) for size in args.sizes.split(",")]
    runs = 3 if args.quick else args.runs
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, float]] = {}
    notes: list[str] = []
    for n in sizes:
        results[n], size_notes = bench_size(n, runs)
        notes += size_notes
    text = report(results, runs, notes)
    print(text)
    (OUT / "results.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
