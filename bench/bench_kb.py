#!/usr/bin/env python3
"""Whole-process timing of aibuddy's knowledge commands on a corpus of ~10 KB Markdown documents.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_kb.py
The corpus is generated once under bench/out/kb-corpus-N/ (git-ignored) and reused; the vault is
rebuilt from it on every run. Warm searches are timed beside `rg -c` of the same query.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from benchlib import check_run, run_once

OUT = Path(__file__).resolve().parent / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
Row = tuple[str, float, float | None]  # label, median ms, ms of the rg run it is compared with
RARE_EN, RARE_ZH, PHRASE = "zephyrine", "熔断", "rolling restart procedure"
PLANTED = {  # sentence -> how many documents carry it (a near miss tests the phrase filter)
    f"The {RARE_EN} cache tier must be warmed before any traffic is shifted.": 5,
    f"服务之间必须配置{RARE_ZH}，避免一个节点的超时拖垮整个集群。": 5,
    f"Follow the {PHRASE} in the runbook and watch the error rate between batches.": 5,
    "The old rolling-restart procedure is kept only for the legacy cluster.": 3,
}
EN_WORDS = """api cache build deploy release branch merge review test staging production database
schema migration index query latency timeout retry queue worker cron backup restore logging
metrics alert dashboard oncall incident postmortem ticket roadmap customer billing report weekly
summary template python rust docker helm terraform nginx postgres redis kafka bucket region cluster
node container image registry token secret certificate proxy firewall configuration performance
security ownership string benchmark profile memory disk quota budget audit privacy rollback
kubernetes feature flag canary restart rolling procedure upgrade service client server request
response handler pipeline artifact version owner team process checklist runbook failover""".split()
ZH_WORDS = """部署 数据库 配置 字符串 所有权 测试 性能 安全 周报 流程 服务 接口 缓存 日志 监控 告警
版本 发布 回滚 集群 节点 容器 镜像 权限 用户 请求 响应 超时 重试 队列 消息 索引 查询 事务 备份
恢复 迁移 环境 脚本 文档 团队 会议 计划 风险 进展 问题 方案 优化 延迟 吞吐量 并发 线程 内存 磁盘""".split()
ZH_GLUE = "的 在 需要 如果 我们 应该 之前 之后 可以 通过 进行 检查 确认 更新 和 把".split()
IDENTIFIERS = """max_connections retry_policy HttpClient parse_config() DATABASE_URL user_id
ConfigLoader pool_size Arc<Mutex<T>> String::from cache_ttl""".split()
CODE = {  # fenced blocks; their "#" lines are comments, never headings
    "bash": ["#!/bin/sh", "# {w}: one batch", "export POOL_SIZE={n}", "kubectl rollout status deploy/{w}"],
    "python": ["# {w} helper", "def load_{w}(path):", "    # retries: {n}", "    return parse_config(path)"],
    "yaml": ["# {w} settings", "{w}:", "  timeout: {n}s", "  retries: 3"],
    "markdown": ["# {w} template", "## Not a section of this document", "- owner: {w}"],
}


def en_sentence(rng: random.Random) -> str:
    return " ".join(rng.choices(EN_WORDS, k=rng.randint(8, 20))).capitalize() + "."


def zh_sentence(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(6, 12)):
        roll = rng.random()
        pool = IDENTIFIERS if roll < 0.08 else ZH_GLUE if roll < 0.35 else ZH_WORDS
        word = rng.choice(pool)
        parts.append(f" `{word}` " if pool is IDENTIFIERS else word)
    return "".join(parts).strip() + "。"


def heading_words(rng: random.Random, chinese: bool) -> str:
    if chinese:
        return "".join(rng.choices(ZH_WORDS, k=rng.randint(2, 4)))
    return " ".join(rng.choices(EN_WORDS, k=rng.randint(2, 5))).capitalize()


def code_block(rng: random.Random) -> str:
    lang = rng.choice(sorted(CODE))
    word, number = rng.choice(EN_WORDS), rng.randint(1, 99)
    return f"```{lang}\n" + "\n".join(line.format(w=word, n=number) for line in CODE[lang]) + "\n```"


def make_document(rng: random.Random, chinese: bool, extras: list[str], size: int = 10_000) -> str:
    """A Markdown document of about `size` bytes: title, sections, paragraphs, lists and code."""
    sentence = zh_sentence if chinese else en_sentence
    count = rng.randint(4, 10)
    budget = size // count
    extra_at: dict[int, list[str]] = {}
    for extra in extras:
        extra_at.setdefault(rng.randrange(count), []).append(extra)
    blocks = [f"# {heading_words(rng, chinese)}", " ".join(sentence(rng) for _ in range(2))]
    for number in range(count):
        level = "##" if number == 0 or rng.random() < 0.6 else "###"
        section = [f"{level} {heading_words(rng, chinese)}"]
        first = " ".join(sentence(rng) for _ in range(rng.randint(1, 3)))
        section.append(" ".join([first, *extra_at.get(number, [])]))
        while len("\n\n".join(section).encode()) < budget:
            roll = rng.random()
            if roll < 0.15:
                section.append(code_block(rng))
            elif roll < 0.35:
                section.append("\n".join(f"- {sentence(rng)}" for _ in range(rng.randint(2, 5))))
            else:
                section.append(" ".join(sentence(rng) for _ in range(rng.randint(2, 5))))
        blocks += section
    return "\n\n".join(blocks) + "\n"


def build_corpus(n: int) -> Path:
    """The cached corpus of n documents in three folders; generated if missing."""
    corpus = OUT / f"kb-corpus-{n}"
    if corpus.is_dir():
        return corpus
    print(f"generating {n:,} documents in {corpus} ...", file=sys.stderr)
    rng = random.Random(42)
    chinese = [rng.random() < 0.3 for _ in range(n)]
    extras: list[list[str]] = [[] for _ in range(n)]
    for text, copies in PLANTED.items():
        pool = [i for i in range(n) if chinese[i] == (RARE_ZH in text)]
        for i in rng.sample(pool, copies):
            extras[i].append(text)
    staging = OUT / f"kb-corpus-{n}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    for i in range(n):
        folder = staging / ("zh" if chinese[i] else rng.choice(["ops", "dev"]))
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{i:05d}-{rng.choice(EN_WORDS)}-{rng.choice(EN_WORDS)}.md"
        (folder / name).write_text(make_document(rng, chinese[i], extras[i]), encoding="utf-8")
    staging.rename(corpus)
    return corpus


def measure(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms per command; one captured warm-up each, then `runs` interleaved rounds."""
    for argv in commands.values():
        check_run(argv, env, ok=(0, 1) if argv[0] == "rg" else (0,))
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(run_once(argv, env))
    return {label: statistics.median(values) for label, values in samples.items()}


def publish_all(env: dict[str, str]) -> int:
    """Publish every pending document with one `kb publish DOC…` call, as a reviewer would."""
    listed = check_run([str(AIBUDDY), "kb", "list", "--status", "pending", "--json"], env)
    pending = [doc["doc"] for doc in json.loads(listed.stdout)["documents"]]
    done = check_run([str(AIBUDDY), "kb", "publish", *pending, "--json"], env)
    return len(json.loads(done.stdout)["published"])


def search_json(query: str, env: dict[str, str], limit: int = 10) -> list[dict]:
    done = check_run([str(AIBUDDY), "kb", "search", query, "--limit", str(limit), "--json"], env)
    try:
        return json.loads(done.stdout)["hits"]
    except (ValueError, KeyError, TypeError):
        return []


def check_hits(vault: Path, label: str, query: str, needle: str, env: dict[str, str]) -> str:
    """Compare the documents search finds with those rg finds, and that each hit holds the needle."""
    hits = search_json(query, env, limit=100)
    found = {hit["doc"].split("/")[-1] for hit in hits}
    rg = check_run(["rg", "-l", "-i", "-F", needle, str(vault / "knowledge"), "-g", "*.md"], env, ok=(0, 1))
    expected = {Path(line).name[: -len(".md")] for line in rg.stdout.split()}
    wrong = []
    for hit in hits:
        body = vault / "knowledge" / "system" / "ready" / f"{hit['doc'].split('/')[-1]}.md"
        start, end = hit["lines"]
        section = "".join(body.read_text(encoding="utf-8").splitlines(keepends=True)[start - 1 : end])
        if needle.casefold() not in section.casefold():
            wrong.append(f"{hit['doc']}#{hit['anchor']}")
    verdict = "OK" if found == expected and not wrong else "MISMATCH"
    note = f"{label}: {len(hits)} section hit(s) in {len(found)} doc(s); rg -l: {len(expected)} doc(s)"
    note += f" — {verdict}"
    if found != expected:
        note += f" (missed: {sorted(expected - found)[:5]}, extra: {sorted(found - expected)[:5]})"
    if wrong:
        note += f"; hits whose section lacks {needle!r}: {wrong[:5]}"
    return note


def bench(n: int, runs: int) -> tuple[list[Row], float, list[str]]:
    """Rows (label, ms, rg ms or None), the `python -c pass` time and notes, for one corpus."""
    corpus, vault = build_corpus(n), OUT / f"kb-vault-{n}"
    shutil.rmtree(vault, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_MODEL", "AIBUDDY_USER"))}
    check_run([str(AIBUDDY), "--user", USER, "init", str(vault)], env)
    env["AIBUDDY_VAULT"] = str(vault)
    notes: list[str] = []

    start = time.perf_counter()
    argv = [str(AIBUDDY), "kb", "import", "--recursive", "--scope", "system", str(corpus), "--json"]
    done = check_run(argv, env)
    import_ms = (time.perf_counter() - start) * 1000
    imported = json.loads(done.stdout or "{}").get("imported")
    notes.append(f"import: {imported} imported of {n} — {'OK' if imported == n else 'WRONG'}")

    start = time.perf_counter()
    published = publish_all(env)
    publish_ms = (time.perf_counter() - start) * 1000
    notes.append(f"publish: {published} published of {n} — {'OK' if published == n else 'WRONG'}")

    shutil.rmtree(vault / ".aibuddy", ignore_errors=True)
    cold_ms = run_once([str(AIBUDDY), "kb", "search", RARE_EN, "--json"], env)

    knowledge = str(vault / "knowledge")
    queries = {  # kb search query -> rg arguments for the same query
        RARE_EN: [RARE_EN],
        f'"{PHRASE}"': [PHRASE],
        RARE_ZH: [RARE_ZH],
        "database configuration performance": ["-e", "database", "-e", "configuration", "-e", "performance"],
    }
    hit = (search_json(RARE_EN, env) or [{"doc": "missing", "anchor": "missing"}])[0]
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    for query, rg_args in queries.items():
        commands[f"kb search {query}"] = [str(AIBUDDY), "kb", "search", query, "--json"]
        commands[f"rg {query}"] = ["rg", "-c", *rg_args, knowledge]
    read_label = f"kb read {hit['doc']} {hit['anchor']}"
    commands[read_label] = [str(AIBUDDY), "kb", "read", hit["doc"], hit["anchor"], "--json"]
    warm = measure(commands, env, runs)

    notes.append(check_hits(vault, "search zephyrine", RARE_EN, RARE_EN, env))
    notes.append(check_hits(vault, "search phrase", f'"{PHRASE}"', PHRASE, env))
    notes.append(check_hits(vault, "search 熔断", RARE_ZH, RARE_ZH, env))
    three = search_json("database configuration performance", env)
    notes.append(f"search database configuration performance: {len(three)} hit(s)")

    rows: list[Row] = [
        (f"kb import --recursive --scope system ({n:,} docs, 1 run)", import_ms, None),
        (f"kb list --status pending + kb publish of all {n:,} docs (1 run)", publish_ms, None),
        (f"first kb search {RARE_EN} after deleting .aibuddy/ (index build, 1 run)", cold_ms, None),
    ]
    for query, rg_args in queries.items():
        rg_ms = warm[f"rg {query}"]
        rows.append((f"kb search {query} --json", warm[f"kb search {query}"], rg_ms))
        shown = " ".join(arg if arg.isalnum() or arg == "-e" else f"'{arg}'" for arg in rg_args)
        rows.append((f"rg -c {shown} <vault>/knowledge", rg_ms, rg_ms))
    rows.append((f"{read_label} --json", warm[read_label], None))
    return rows, warm["python -c pass"], notes


def seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 10_000 else f"{ms:.0f} ms"


def report(n: int, runs: int, rows: list[Row], base: float, notes: list[str]) -> str:
    """The Markdown table, the target checks and the correctness notes."""
    lines = [
        f"N = {n:,} documents. Warm commands: median of {runs} interleaved runs after 1 warm-up;"
        " ratios to `rg -c` of the same query and to `python -c pass`, measured in the same run.\n",
        "| command | median | × rg -c | × python -c pass |",
        "|---|---|---|---|",
        f"| `python -c pass` | {base:.0f} ms | | 1.0× |",
    ]
    for label, ms, rg in rows:
        ratio = f"{ms / rg:.1f}×" if rg else ""
        lines.append(f"| `{label}` | {seconds(ms)} | {ratio} | {ms / base:.1f}× |")
    lines += ["", "Targets:", ""]
    for label, ms, rg in rows:
        if rg and label.startswith("kb search"):
            verdict = "PASS" if ms <= 3 * rg else "FAIL"
            lines.append(f"- `{label}` within 3× `rg -c`: {ms / rg:.1f}× — {verdict}")
    import_ms = rows[0][1]
    per_2000 = import_ms * 2000 / n
    scaled = "" if n == 2000 else f" (extrapolated from {n:,}: {per_2000 / 1000:.1f} s)"
    lines.append(
        f"- import of 2,000 documents under 60 s{scaled}: {per_2000 / 1000:.1f} s — "
        f"{'PASS' if per_2000 < 60_000 else 'FAIL'}"
    )
    lines += ["", "Checks:", ""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000, help="documents in the corpus")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per warm command (median)")
    parser.add_argument("--quick", action="store_true", help="smoke check: 200 documents, 3 runs")
    args = parser.parse_args()
    n, runs = (200, 3) if args.quick else (args.docs, args.runs)
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    if shutil.which("rg") is None:
        sys.exit("rg (ripgrep) not found: apt-get install ripgrep")
    OUT.mkdir(parents=True, exist_ok=True)
    rows, base, notes = bench(n, runs)
    text = report(n, runs, rows, base, notes)
    print(text)
    (OUT / "kb-results.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
