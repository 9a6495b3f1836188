#!/usr/bin/env python3
"""The PostgreSQL store beside the folder store as the vault grows (issue 35), in one run: warm
recall by kind of question (common words, a rare word, Chinese, a dated question), cold recall,
save and list, at 10,000 records (and 100,000 with --large).

Warm recall: one long-lived process per store and code tree opens the vault once and recalls each
question RUNS times (p50 / p99 per kind, in ms). Cold recall, save and list are whole processes
(median of RUNS, after the index exists), beside `python -c pass` of the same run. With
`--baseline DIR` (another checkout, e.g. main) both trees are measured in the same run.

The vaults are bench_memory's (generated once under bench/out/); the scratch copies, the
PostgreSQL cluster (Debian's server binaries, tests/postgres_server.py's way: `runuser -u
postgres` when root, a Unix socket, no TCP) and its loaded databases are kept under
/dev/shm/aibuddy-bench-store/ and reused: delete that folder to start again. The cluster is left
running for the next run (`--stop` stops it). Writes bench/out/store-growth-results.md.

    python bench/bench_store_growth.py [--large] [--runs 15] [--baseline /path/to/main]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from bench_memory import COMMON_QUERY, EN_QUERY, USER, ZH_QUERY, build_vault, restore_mtimes  # noqa: E402

CACHE = Path("/dev/shm/aibuddy-bench-store")
OUT = HERE / "out" / "store-growth-results.md"
QUESTIONS = {  # kind -> question
    "common words": COMMON_QUERY,
    "rare words": EN_QUERY,
    "Chinese": ZH_QUERY,
    "dated": "what did the release review decide last month",
}
SIDES = ("folder", "pg")
WARM_SCRIPT = r"""
import json, os, sys, time
from pathlib import Path
from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault

vault, user, runs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
questions = json.loads(sys.argv[4])
environ = {k: v for k, v in os.environ.items() if k.startswith("AIBUDDY_STORE")}
session = Session(Vault.open(vault), user, environ=environ)
found = {}
for kind, question in questions.items():
    session.memory.recall(question)  # the first call of each kind: caches, not timed
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = session.memory.recall(question)
        times.append((time.perf_counter() - started) * 1000)
    found[kind] = {"times": times, "names": [r.name for r in result.records]}
print(json.dumps(found))
"""


# --- the cluster ----------------------------------------------------------------------------------


class Cluster:
    """A PostgreSQL cluster kept under CACHE between runs (started if it is not running)."""

    def __init__(self) -> None:
        from postgres_server import binaries

        folder = binaries()
        if folder is None:
            print("SKIP: bench_store_growth: no PostgreSQL server binary (apt-get install postgresql)")
            sys.exit(0)
        try:
            import psycopg  # noqa: F401
        except ImportError:
            print("SKIP: bench_store_growth needs psycopg: pip install 'aibuddy-cli[postgres]'")
            sys.exit(0)
        self.bin = folder
        self.root = CACHE / f"pg-{folder.parent.name}"
        self.data = self.root / "data"
        self.prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if not self.data.is_dir():
            shutil.rmtree(self.root, ignore_errors=True)
            self.root.mkdir(parents=True)
            if self.prefix:
                shutil.chown(self.root, "postgres")
            self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        if subprocess.run([*self.prefix, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"],
                          capture_output=True).returncode != 0:  # fmt: skip
            options = f"-k {self.root} -c listen_addresses='' -c max_connections=300 -c shared_buffers=256MB"
            self.run(
                "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start"
            )

    def run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.prefix, str(self.bin / tool), *args], check=True, capture_output=True, timeout=300
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql:///{database}?host={self.root}&user=postgres"

    def database(self, name: str) -> tuple[str, bool]:
        """The URL of database name, and whether it was made just now (empty)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return self.url(name), False
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name), True

    def drop(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def version(self) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            return str(admin.execute("SHOW server_version").fetchone()[0]).split()[0]  # type: ignore[index]

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "stop")


# --- the hosts ------------------------------------------------------------------------------------


def aibuddy(tree: Path) -> list[str]:
    return [sys.executable, "-m", "aibuddy_cli"]


def tree_env(tree: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    return {**base, "PYTHONPATH": str(tree), "AIBUDDY_WORKER": "0", "AIBUDDY_USER": USER}


def hosts(n: int, tree_name: str, tree: Path, cluster: Cluster) -> dict[str, dict[str, str]]:
    """Per side, the environment of a host of n records for this tree (made once, then reused):
    a scratch copy of the folder vault, and a host folder on a database loaded from it."""
    source, mtimes = build_vault(n)
    env = tree_env(tree)
    folder = CACHE / f"folder-{n}-{tree_name}"
    if not (folder / ".ready").exists():
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, folder, ignore=lambda d, _: [".aibuddy"] if Path(d) == source else [])
        restore_mtimes(folder, mtimes)
        (folder / ".ready").touch()
    folder_env = {**env, "AIBUDDY_VAULT": str(folder)}
    url, made = cluster.database(f"growth_{n}")
    if made or not (CACHE / f"growth_{n}.loaded").exists():
        print(f"loading {n:,} records into PostgreSQL ...", file=sys.stderr)
        loader = CACHE / f"load-{n}"
        shutil.rmtree(loader, ignore_errors=True)
        shutil.copytree(source, loader, ignore=lambda d, _: [".aibuddy"] if Path(d) == source else [])
        restore_mtimes(loader, mtimes)
        argv = [*aibuddy(ROOT), "store", "copy", "--to", url, "--json"]
        loader_env = {**tree_env(ROOT), "AIBUDDY_VAULT": str(loader)}
        done = subprocess.run(argv, env=loader_env, capture_output=True, text=True, cwd=ROOT)
        shutil.rmtree(loader, ignore_errors=True)
        if done.returncode != 0:
            cluster.drop(f"growth_{n}")
            sys.exit(f"store copy failed: {done.stderr.strip()[:500]}")
        (CACHE / f"growth_{n}.loaded").touch()
    host = CACHE / f"host-{n}-{tree_name}"
    if not (host / "aibuddy.toml").exists():
        shutil.rmtree(host, ignore_errors=True)
        subprocess.run(
            [*aibuddy(tree), "--user", USER, "init", str(host)],
            env=env,
            check=True,
            capture_output=True,
            cwd=tree,
        )
    pg_env = {**env, "AIBUDDY_VAULT": str(host), "AIBUDDY_STORE_URL": url}
    return {"folder": folder_env, "pg": pg_env}


# --- measuring ------------------------------------------------------------------------------------


def whole(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    # cwd: `-m` and `-c` put the working directory first on sys.path, before PYTHONPATH (the tree)
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, cwd=env["PYTHONPATH"])
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        print(
            f"WARNING: {' '.join(argv[2:])} exited {done.returncode}: {done.stderr[:300]!r}", file=sys.stderr
        )
    return elapsed


def warm(env: dict[str, str], runs: int) -> dict[str, dict]:
    argv = [sys.executable, "-c", WARM_SCRIPT, env["AIBUDDY_VAULT"], USER, str(runs), json.dumps(QUESTIONS)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=env["PYTHONPATH"])
    if done.returncode != 0:
        sys.exit(f"warm recall failed: {done.stderr[-1500:]}")
    return json.loads(done.stdout.splitlines()[-1])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(n: int, trees: dict[str, Path], cluster: Cluster, runs: int) -> dict:
    """{"trees": {tree: {side: {row: ms, or (p50, p99) for warm recall}}}, "bare": ms}. (Which
    records each store answers is bench_store's check: here the timed recalls' own telemetry,
    recall counts, differs between the stores.)"""
    envs = {name: hosts(n, name, tree, cluster) for name, tree in trees.items()}
    found: dict = {name: {side: {} for side in SIDES} for name in trees}
    print(f"{n:,} records: first recall on each host (builds its index) ...", file=sys.stderr)
    for name, tree in trees.items():
        for side in SIDES:
            found[name][side]["first recall (index build if none)"] = whole(
                [*aibuddy(tree), "memory", "recall", COMMON_QUERY, "--json"], envs[name][side]
            )
    print(f"{n:,} records: warm recall ...", file=sys.stderr)
    for name in trees:
        answers = {side: warm(envs[name][side], runs) for side in SIDES}
        for side in SIDES:
            for kind, result in answers[side].items():
                times = result["times"]
                found[name][side][f"warm: {kind}"] = (statistics.median(times), percentile(times, 0.99))
    print(f"{n:,} records: whole processes ...", file=sys.stderr)
    stamp = int(time.time() * 1000)
    rows = {
        "cold recall (common words)": lambda i: ["memory", "recall", COMMON_QUERY, "--json"],
        "cold recall (rare words)": lambda i: ["memory", "recall", EN_QUERY, "--json"],
        "save": lambda i: [
            "memory",
            "save",
            f"growth-{stamp}-{i}",
            "--type",
            "project",
            "--description",
            f"Growth bench save {i}: notes from the weekly sync",
        ],  # fmt: skip
        "list": lambda i: ["memory", "list", "--json"],
    }
    samples: dict = {name: {side: {row: [] for row in rows} for side in SIDES} for name in trees}
    bare = []
    for round_ in range(runs):
        bare.append(whole([sys.executable, "-c", "pass"], tree_env(ROOT)))
        for row, args in rows.items():
            for name, tree in trees.items():
                for side in SIDES if round_ % 2 else SIDES[::-1]:
                    argv = [*aibuddy(tree), *args(round_)]
                    if row == "save":  # a name of its own on every host (the database is shared)
                        argv[argv.index("save") + 1] += f"-{name.replace(' ', '-')}"
                    samples[name][side][row].append(whole(argv, envs[name][side]))
    for name in trees:
        for side in SIDES:
            for row, values in samples[name][side].items():
                found[name][side][row] = statistics.median(values)
    return {"trees": found, "bare": statistics.median(bare)}


def report(results: dict[int, dict], version: str, runs: int) -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"PostgreSQL {version} on a Unix socket of this machine; load average at the end {load}.", ""]
    for n, result in results.items():
        bare = result["bare"]
        trees = list(result["trees"])
        lines += [
            f"### {n:,} records (`python -c pass`: {bare:.0f} ms; warm: p50 / p99 of {runs} calls in ms;"
            f" whole processes: median of {runs}, × `python -c pass`)",
            "",
            "| | " + " | ".join(f"{SIDES_SHOWN[side]} ({tree})" for tree in trees for side in SIDES) + " |",
            "|---|" + "---|" * (len(trees) * len(SIDES)),
        ]
        rows = list(result["trees"][trees[0]]["folder"])
        for row in rows:
            cells = []
            for tree in trees:
                for side in SIDES:
                    value = result["trees"][tree][side][row]
                    if isinstance(value, (list, tuple)):
                        cells.append(f"{value[0]:.1f} / {value[1]:.1f}")
                    else:
                        cells.append(f"{value:.0f} ms ({value / bare:.1f}×)")
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


SIDES_SHOWN = {"folder": "folder", "pg": "PostgreSQL"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--large", action="store_true", help="also 100,000 records (cached after the first run)"
    )
    parser.add_argument("--runs", type=int, default=15, help="calls per warm question and runs per command")
    parser.add_argument("--baseline", type=Path, help="another checkout measured in the same run (e.g. main)")
    parser.add_argument("--sizes", type=int, nargs="*", help="record counts instead of 10,000 (and 100,000)")
    parser.add_argument("--stop", action="store_true", help="stop the cached cluster and exit")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    cluster = Cluster()
    if args.stop:
        cluster.stop()
        return
    trees = {"this tree": ROOT}
    if args.baseline:
        trees = {"baseline": args.baseline.resolve(), **trees}
    sizes = args.sizes or ([10_000, 100_000] if args.large else [10_000])
    results = {n: measure(n, trees, cluster, args.runs) for n in sizes}
    text = report(results, cluster.version(), args.runs)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
