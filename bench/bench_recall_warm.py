#!/usr/bin/env python3
"""A warm MCP server's `memory_recall` over a realistic question mix, on stdio and on HTTP.

The vault: N memory records whose words are as in real notes. A vocabulary of common words each
occurs in 5 to 20 % of the records ("deploy", "report", "budget", "meeting", "customer", ...),
over a filler vocabulary of a few thousand words; rare words are in 1 to 3 records each; about
15 % of the records are in Chinese (their common words 预算, 会议, 部署, 报告, ... in 5 to 20 % of
them); every record has header dates over the past year, and a third state a day in their text.

The questions (a fixed seed, 210 of them), by category:
- common: two or three common words ("deploy report", "budget meeting notes");
- rare: a rare word, alone or beside a common one;
- chinese: Chinese common words (预算会议, 部署报告) and a Chinese sentence;
- dated: "what did we decide last Tuesday", "meeting on 2026-03-14", "budget notes from last week";
- paraphrase: the same needs in other words ("money planning session", "shipping the build").

Each transport runs one server on the vault (`aibuddy mcp`, `aibuddy mcp --http`), makes one call
(the index checked, the modules imported), then every question once in a shuffled order, timed as
the SDK's client sees it (request to answer). Beside them, in the same run: the SDK's floor
(`tools/list`, the client's cache bypassed: the server answers no `ping`; and `task_list` over a
vault without tasks, the cheapest tool call, on the same connection) and
`python -c pass`. --baseline SRC runs the same mix against a second source tree (e.g. main's, from
`git archive`) in the same run: the figures before and after side by side.

--profile profiles the service's recall in process over the same vault and questions (cProfile),
the top functions by their own time and by cumulative time.

Vaults are generated once under /dev/shm/aibuddy-bench-<user>/ keyed by their parameters (the
first recall builds their index, which stays with them). Sizes 1,000 and 10,000 by default;
--large adds 100,000.

Run with the project's virtualenv:  .venv/bin/python bench/bench_recall_warm.py
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import getpass
import json
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_mcp import HttpServer, percentile, token
from benchlib import run_once

from aibuddy_cli.memory.records import TYPES, MemoryRecord, render_record
from aibuddy_cli.vault import init_vault

AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
SEED = 20261206
GENERATOR = 1  # bump when the generator changes: the cache key
CACHE = Path("/dev/shm") / f"aibuddy-bench-{os.environ.get('AIBUDDY_BENCH_NAME') or getpass.getuser()}"

# Common words and the share of the records holding each (5 to 20 %).
COMMON = {
    "deploy": 0.15, "report": 0.12, "budget": 0.08, "meeting": 0.18, "customer": 0.10,
    "notes": 0.20, "release": 0.14, "review": 0.09, "team": 0.19, "plan": 0.16,
    "decided": 0.06, "invoice": 0.05, "server": 0.11, "design": 0.13, "bug": 0.07,
    "weekly": 0.06, "client": 0.08, "schedule": 0.07, "database": 0.09, "test": 0.17,
}  # fmt: skip
ZH_COMMON = {
    "预算": 0.10, "会议": 0.18, "部署": 0.15, "报告": 0.12, "客户": 0.10,
    "发布": 0.14, "测试": 0.17, "周报": 0.06, "决定": 0.07, "服务器": 0.09,
}  # fmt: skip
ZH_FILLER = (
    "我们今天讨论了项目的进展情况大家都同意下一步先完成接口然后再看性能问题需要注意数据迁移的风险"
    "产品经理希望在月底之前上线新的功能用户反馈说页面加载太慢了运维同事建议增加缓存并且监控报警"
)
SYLLABLES = "ka ri to mu sen lo va ter quin dor pel zu mar ol vex tra nim bo cul fen gra hal ost ry".split()
PARAPHRASES = [
    "money planning session", "shipping the build to production", "talk with the buyer",
    "what we agreed on for the rollout", "paperwork sent to the client for payment",
    "who is on the crew", "problems found while checking the code", "the plan for next quarter",
    "storage of the tables", "summary written every week", "fixing the crash", "the launch timetable",
    "costs of the cloud machines", "notes from the sync call", "trying the new version before launch",
]  # fmt: skip
ZH_QUESTIONS = [
    "预算会议", "部署报告", "客户会议", "发布测试", "周报", "服务器部署", "会议决定", "预算报告",
    "上次会议决定了什么", "客户对发布有什么反馈", "测试环境的部署脚本在哪里", "我们的预算是多少",
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
SIZES = (1_000, 10_000)
LARGE = 100_000


def filler_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(2, 3))))
    return sorted(words)


def iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Vault:
    """A generated vault: its folder and what the questions need of it."""

    def __init__(self, path: Path, facts: dict[str, Any]) -> None:
        self.path, self.facts = path, facts


def generate(n: int) -> Vault:
    """The cached vault of n records (made when missing)."""
    path = CACHE / f"recall-warm-v{GENERATOR}-s{SEED}-n{n}"
    facts_path = path.with_suffix(".json")
    if path.is_dir() and facts_path.is_file():
        return Vault(path, json.loads(facts_path.read_text(encoding="utf-8")))
    print(f"generating {n:,} records in {path} ...", file=sys.stderr, flush=True)
    rng = random.Random(SEED)
    staging = path.with_name(path.name + ".tmp")
    for old in (path, staging):
        shutil.rmtree(old, ignore_errors=True)
    init_vault(staging, USER)
    folder = staging / "memory" / USER
    folder.mkdir(parents=True, exist_ok=True)
    filler = filler_words(rng, 4000)
    rare_words = filler_words(random.Random(SEED + 1), 4000 + n // 20)[4000:]
    rare_words = [w for w in rare_words if w not in set(filler)][: max(50, n // 50)]
    rare_homes: dict[str, list[int]] = {w: rng.sample(range(n), rng.randint(1, 3)) for w in rare_words}
    rare_of: dict[int, list[str]] = {}
    for word, homes in rare_homes.items():
        for home in homes:
            rare_of.setdefault(home, []).append(word)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    days: list[str] = []
    for i in range(n):
        chinese = rng.random() < 0.15
        moment = now - dt.timedelta(seconds=rng.randint(3600, 365 * 86400))
        words = rng.choices(filler, k=rng.randint(25, 160))
        chosen = COMMON if not chinese else {}
        for word, share in chosen.items():
            if rng.random() < share:
                for _ in range(rng.randint(1, 2)):
                    words.insert(rng.randrange(len(words) + 1), word)
        words[rng.randrange(len(words)) :] += rare_of.get(i, [])
        if rng.random() < 0.33:
            day = (moment - dt.timedelta(days=rng.randint(0, 20))).date()
            days.append(day.isoformat())
            words[rng.randrange(len(words)) :] += (
                ["on", day.isoformat()] if rng.random() < 0.6 else ["on", f"{day:%B} {day.day}"]
            )
        text = " ".join(words)
        sentences = [text[k : k + 90].strip().capitalize() + "." for k in range(0, len(text), 90)]
        body = "\n\n".join(" ".join(sentences[k : k + 4]) for k in range(0, len(sentences), 4))
        description = " ".join(words[:10]).capitalize()
        if chinese:
            parts = [ZH_FILLER[s : s + rng.randint(6, 14)] for s in rng.sample(range(len(ZH_FILLER) - 14), 8)]
            for word, share in ZH_COMMON.items():
                if rng.random() < share:
                    parts.insert(rng.randrange(len(parts) + 1), word)
            chinese_text = "，".join(parts) + "。"
            description = chinese_text[:30]
            body = chinese_text + "\n\n" + body[: rng.randint(0, 300)]
        kind = rng.choice(TYPES)
        name = f"{kind[:4]}-{rng.choice(filler)}-{i:06d}"
        record = MemoryRecord(
            name=name, description=description, type=kind, body=body.strip() + "\n",
            provenance="manual", created=iso(moment), updated=iso(moment),
        )  # fmt: skip
        (folder / f"{name}.md").write_text(render_record(record), encoding="utf-8")
    facts = {"rare": sorted(rare_homes), "filler": filler[:200], "days": sorted(set(days))}
    staging.rename(path)
    facts_path.write_text(json.dumps(facts), encoding="utf-8")
    return Vault(path, facts)


def questions(vault: Vault) -> list[tuple[str, str]]:
    """(category, question): 210 of them, in a shuffled fixed order."""
    rng = random.Random(SEED + 2)
    common = list(COMMON)
    asked: list[tuple[str, str]] = []
    for _ in range(60):
        asked.append(("common", " ".join(rng.sample(common, rng.choice([2, 2, 3])))))
    for _ in range(40):
        word = rng.choice(vault.facts["rare"])
        asked.append(("rare", word if rng.random() < 0.5 else f"{word} {rng.choice(common)}"))
    for k in range(40):
        if k < len(ZH_QUESTIONS):
            asked.append(("chinese", ZH_QUESTIONS[k]))
        else:
            asked.append(("chinese", "".join(rng.sample(list(ZH_COMMON), 2))))
    dated_forms = [
        lambda: f"what did we decide last {rng.choice(WEEKDAYS)}",
        lambda: f"meeting on {rng.choice(vault.facts['days'])}",
        lambda: f"{rng.choice(common)} notes from last week",
        lambda: "what happened yesterday",
        lambda: f"{rng.choice(common)} {rng.choice(common)} in {rng.choice(['March', 'May', 'October'])}",
        lambda: f"the {rng.choice(common)} we discussed two weeks ago",
    ]
    for k in range(40):
        asked.append(("dated", dated_forms[k % len(dated_forms)]()))
    for k in range(30):
        asked.append(("paraphrase", PARAPHRASES[k % len(PARAPHRASES)]))
    rng.shuffle(asked)
    return asked


# --- timing through the SDK -------------------------------------------------------------------


async def with_stdio(env: dict[str, str], body: Callable[[Any], Awaitable[Any]]) -> Any:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=str(AIBUDDY), args=["mcp"], env=env)) as client:
        return await body(client)


async def with_http(url: str, secret: str, body: Callable[[Any], Awaitable[Any]]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=600) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return await body(client)


FLOOR_CALLS = 100
WRITES = 30  # recalls each timed right after a memory_save (the category "after a save")


def timed_mix(asked: list[tuple[str, str]]) -> Callable[[Any], Awaitable[dict[str, list[float]]]]:
    """Per category, the seconds of each recall; and the floor's ("ping", "task_list")."""

    async def body(client: Any) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        started = time.perf_counter()
        await client.call_tool("memory_recall", {"query": "deploy report"})  # opens, maybe builds
        found["first call"] = [time.perf_counter() - started]
        for _, question in asked[:10]:  # warm: each kind of question once
            await client.call_tool("memory_recall", {"query": question})
        for _ in range(10):
            await client.list_tools(cache_mode="bypass")
            await client.call_tool("task_list", {})
        for label, call in (("floor: tools/list", lambda: client.list_tools(cache_mode="bypass")),
                            ("floor: task_list", lambda: client.call_tool("task_list", {}))):  # fmt: skip
            times = found.setdefault(label, [])
            for _ in range(FLOOR_CALLS):
                started = time.perf_counter()
                await call()
                times.append(time.perf_counter() - started)
        for category, question in asked:
            started = time.perf_counter()
            result = await client.call_tool("memory_recall", {"query": question})
            elapsed = time.perf_counter() - started
            if result.is_error:
                sys.exit(f"recall of {question!r} failed: {result.content}")
            found.setdefault(category, []).append(elapsed)
            found.setdefault("all", []).append(elapsed)
        for number, (_, question) in enumerate(
            asked[:WRITES]
        ):  # each right after a save (asked before: warm)
            await client.call_tool(
                "memory_save",
                {
                    "name": f"bench-save-{os.getpid()}-{time.monotonic_ns()}-{number}",
                    "type": "project",
                    "description": f"Deploy report {number} budget",
                    "body": f"budget meeting notes {number}",
                },
            )
            started = time.perf_counter()
            result = await client.call_tool("memory_recall", {"query": question})
            found.setdefault("after a save", []).append(time.perf_counter() - started)
        return found

    return body


def serve_and_time(
    env: dict[str, str], transport: str, asked: list[tuple[str, str]]
) -> dict[str, list[float]]:
    if transport == "stdio":
        return asyncio.run(with_stdio(env, timed_mix(asked)))
    server = HttpServer(env)
    try:
        secret = token(env, f"bench-{os.getpid()}-{time.monotonic_ns()}")  # (a name is given once)
        return asyncio.run(with_http(server.url, secret, timed_mix(asked)))
    finally:
        server.stop()


def copied(path: Path) -> Path:
    """A cached copy of the vault at path, for the baseline tree."""
    copy = path.with_name(path.name + "-baseline")
    if not copy.is_dir():
        shutil.copytree(path, copy.with_name(copy.name + ".tmp"), symlinks=True, dirs_exist_ok=True)
        copy.with_name(copy.name + ".tmp").rename(copy)
    return copy


def fmt(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0] * 1000:.0f} ms"
    return "/".join(f"{v * 1000:.1f}" for v in (statistics.median(values), percentile(values, 0.95),
                                                 percentile(values, 0.99)))  # fmt: skip


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# --- profile in process -----------------------------------------------------------------------


def profile(vault: Vault, asked: list[tuple[str, str]]) -> None:
    """cProfile of MemoryService.recall over the mix, in this process (the server's work without
    the SDK), and the in-process p50/p99 per category."""
    import cProfile
    import io
    import pstats

    from aibuddy_cli.app.session import Session
    from aibuddy_cli.store.folder_watch import FolderWatch
    from aibuddy_cli.vault import Vault as AibuddyVault

    # A FolderWatch as the server keeps one: a recall reads no folder listing.
    with Session(AibuddyVault.open(vault.path, {}), USER, environ={}, watch=FolderWatch()) as session:
        session.memory.recall("deploy report")
        for _, question in asked[:10]:
            session.memory.recall(question)
        times: dict[str, list[float]] = {}
        profiler = cProfile.Profile()
        for category, question in asked:
            started = time.perf_counter()
            profiler.enable()
            session.memory.recall(question)
            profiler.disable()
            elapsed = time.perf_counter() - started
            times.setdefault(category, []).append(elapsed)
            times.setdefault("all", []).append(elapsed)
    print(f"\nIn process, MemoryService.recall (profiled; load {load()}), p50/p95/p99 ms:\n")
    for category, values in times.items():
        print(f"- {category}: {fmt(values)} (n={len(values)})")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(28)
        print(f"\nTop by {order}:\n```")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))
        print("```")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also 100,000 records")
    parser.add_argument("--sizes", help="comma-separated record counts instead of 1000,10000")
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument("--baseline", type=Path, help="a source tree to run beside this one (PYTHONPATH)")
    parser.add_argument("--profile", action="store_true", help="profile the recall in process")
    args = parser.parse_args()
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    sizes = [*SIZES, *([LARGE] if args.large else [])]
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",")]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    here = str(Path(__file__).resolve().parent.parent)
    trees = {"this": here, **({"baseline": str(args.baseline.resolve())} if args.baseline else {})}
    bare = statistics.median(run_once([sys.executable, "-c", "pass"], base) for _ in range(7))
    print(f"`python -c pass` in this run: {bare:.0f} ms; load average at start {load()}")
    for n in sizes:
        vault = generate(n)
        asked = questions(vault)
        if args.profile:
            profile(vault, asked)
            continue
        results: dict[tuple[str, str], dict[str, list[float]]] = {}
        for transport in args.transports.split(","):
            for tree, source in trees.items():
                # The baseline on a copy: its index (maybe another version) is kept, not rebuilt.
                where = vault.path if tree == "this" else copied(vault.path)
                env = {**base, "AIBUDDY_VAULT": str(where), "AIBUDDY_USER": USER, "AIBUDDY_WORKER": "0",
                       "PYTHONPATH": source}  # fmt: skip
                results[(transport, tree)] = serve_and_time(env, transport, asked)
                for saved in where.glob("memory/*/bench-save-*.md"):  # the cached vault as it was
                    saved.unlink()
                done = f"  ({n:,} records, {transport}, {tree}: done, load {load()})"
                print(done, file=sys.stderr, flush=True)
        print(f"\nWarm `memory_recall`, {n:,} records, {len(asked)} questions once each"
              f" (p50/p95/p99 ms; load {load()}):\n")  # fmt: skip
        columns = list(results)
        print("| | " + " | ".join(f"{t} {tree}" for t, tree in columns) + " |")
        print("|---" * (len(columns) + 1) + "|")
        rows = ["all", "common", "rare", "chinese", "dated", "paraphrase",
                "after a save", "floor: tools/list", "floor: task_list", "first call"]  # fmt: skip
        for row in rows:
            print(f"| {row} | " + " | ".join(fmt(results[c].get(row, [0.0])) for c in columns) + " |")
        for column in columns:
            values = results[column]["all"]
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            goal50, goal99 = (0.010, 0.025) if n <= 10_000 else (0.020, None)
            met = p50 <= goal50 and (goal99 is None or p99 <= goal99)
            print(f"- {column[0]} {column[1]}: p50 {p50 * 1000:.1f} ms (goal {goal50 * 1000:.0f})"
                  + (f", p99 {p99 * 1000:.1f} ms (goal {goal99 * 1000:.0f})" if goal99 else "")
                  + f": {'PASS' if met else 'FAIL'}")  # fmt: skip


if __name__ == "__main__":
    main()
