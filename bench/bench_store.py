#!/usr/bin/env python3
"""The vault served from PostgreSQL (AIBUDDY_STORE_URL) beside the plain folder store, in one run:
save and lexical recall at 10,000 records, a recall on host B right after 1,000 saves on host A
(how fast the local index catches up), 50 concurrent MCP HTTP clients over one shared store, and
appending a line to a log of 1 MB and of 20 MB.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_store.py
It needs a PostgreSQL server binary (apt-get install postgresql) and psycopg
(pip install 'aibuddy-cli[postgres]'), and says SKIP (exit 0) without them. The server is a
throw-away cluster (tests/postgres_server.py) on a Unix socket of this machine, with fsync on as a
real server runs (--no-fsync for the tests' setting); it is stopped at the end.

A host is a vault folder (its aibuddy.toml and derived indexes under .aibuddy/) whose commands run
with AIBUDDY_STORE_URL set; several hosts share one database. The 10,000-record vault is
bench_memory's (generated once under bench/out/): the folder side runs on a scratch copy of it,
and `aibuddy store copy --to URL` puts that copy into the database. Figures are whole processes
(medians of interleaved runs after a warm-up) or, for the HTTP load, calls as the MCP SDK's
client sees them, with `python -c pass` from the same run beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_mcp import HttpServer, load, percentile, token
from bench_memory import EN_QUERY, USER, ZH_QUERY, build_vault, restore_mtimes
from benchlib import check_run, run_once

from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import CACHE_DIR

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
CATCH_UP_QUERY = "quokka marmalade handover"
SIDES = ("folder", "pg")
SIDE_NAMES = {"folder": "folder", "pg": "PostgreSQL"}

BARE = "`python -c pass`"
SAVE = "`memory save NAME --type project --description …`"
RECALL_EN = f'`memory recall "{EN_QUERY}" --json`'
RECALL_ZH = f'`memory recall "{ZH_QUERY}" --json`'
COLD = f'first `memory recall "{EN_QUERY}"` on the host, no index yet (1 run)'

COMMANDS: dict[str, Callable[[int], list[str]]] = {
    SAVE: lambda i: [
        str(AIBUDDY), "memory", "save", f"bench-save-{i}", "--type", "project",
        "--description", f"Bench save {i}: notes from the weekly sync",
    ],
    RECALL_EN: lambda i: [str(AIBUDDY), "memory", "recall", EN_QUERY, "--json"],
    RECALL_ZH: lambda i: [str(AIBUDDY), "memory", "recall", ZH_QUERY, "--json"],
}  # fmt: skip


# --- helpers ------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def cell(value_ms: float, bare_ms: float) -> str:
    return f"{value_ms:.0f} ms ({value_ms / bare_ms:.1f}×)"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time (ms) of one whole process with its output captured (to check it), and the run."""
    start = time.perf_counter()
    done = check_run(argv, env)
    return (time.perf_counter() - start) * 1000, done


def document(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        found = json.loads(done.stdout)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def recalled(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [record.get("name", "?") for record in document(done).get("records", [])]


def shown_names(names: list[str]) -> str:
    if not names:
        return "none"
    return f"{len(names)} new record(s), first {names[0]}"


def init_host(folder: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [str(AIBUDDY), "--user", USER, "init", str(folder)], env=env, check=True, capture_output=True
    )


def saved_names(env: dict[str, str]) -> set[str]:
    """The record names `memory list --json` shows (the files may be in the database)."""
    done = check_run([str(AIBUDDY), "memory", "list", "--json"], env)
    return {record["name"] for record in document(done).get("records", [])}


def table_keys(env: dict[str, str], table: str) -> list[str]:
    """Every row key of a table, read back page by page through `table filter --json`."""
    keys: list[str] = []
    while True:
        page_of = ["--limit", "1000", "--offset", str(len(keys))]
        argv = [str(AIBUDDY), "table", "filter", table, "--json", *page_of]
        tables = document(check_run(argv, env)).get("tables", [])
        if not tables:
            return keys
        found = tables[0]
        key = found["columns"][0]
        page = [str(row[key] if isinstance(row, dict) else row[0]) for row in found["rows"]]
        keys += page
        if not page or len(keys) >= found["total"]:
            return keys


def cluster_or_skip(fsync: bool) -> Any:
    """A running throw-away PostgreSQL cluster, or exit 0 with the reason it cannot run here."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import psycopg  # noqa: F401
        import pytest
        from postgres_server import Cluster, binaries
    except ImportError as error:
        print(f"SKIP: bench_store needs psycopg and pytest ({error}): pip install 'aibuddy-cli[postgres]'")
        sys.exit(0)
    if binaries() is None:
        print("SKIP: bench_store: no PostgreSQL server binary (apt-get install postgresql)")
        sys.exit(0)
    try:
        return Cluster(fsync=fsync)
    except pytest.skip.Exception as skipped:
        print(f"SKIP: bench_store: {skipped.msg}")
        sys.exit(0)


# --- 1. save and recall at N records -------------------------------------------------------


def bench_commands(
    envs: dict[str, dict[str, str]], runs: int
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Medians per command and side (BARE measured once a round), the cold first recall, and the
    name checks. A warm-up of each command on each side first; then `runs` rounds interleaving the
    sides, which go first in turn."""
    results: dict[str, dict[str, float]] = {side: {} for side in SIDES}
    cold_names: dict[str, list[str]] = {}
    for side in SIDES:
        results[side][COLD], done = timed(COMMANDS[RECALL_EN](0), envs[side])
        cold_names[side] = recalled(done)
    for side in SIDES:  # warm-up: the saves' name 0 is taken here
        for argv in COMMANDS.values():
            check_run(argv(0), envs[side])
    samples: dict[str, dict[str, list[float]]] = {side: {row: [] for row in COMMANDS} for side in SIDES}
    bare: list[float] = []
    for round_ in range(1, runs + 1):
        bare.append(run_once([sys.executable, "-c", "pass"], envs["folder"]))
        order = SIDES if round_ % 2 else SIDES[::-1]
        for row, argv in COMMANDS.items():
            for side in order:
                samples[side][row].append(run_once(argv(round_), envs[side]))
    for side in SIDES:
        results[side][BARE] = statistics.median(bare)
        for row, values in samples[side].items():
            results[side][row] = statistics.median(values)

    checks = []
    same = cold_names["folder"] == cold_names["pg"] and bool(cold_names["folder"])
    checks.append(
        f"same record names for \"{EN_QUERY}\" on both stores (first recall): {verdict(same)}"
        f" ({', '.join(cold_names['folder']) or 'nothing'}"
        + ("" if same else f" vs {', '.join(cold_names['pg']) or 'nothing'}")
        + ")"
    )
    after = {side: recalled(check_run(COMMANDS[RECALL_EN](0), envs[side])) for side in SIDES}
    same_after = after["folder"] == after["pg"] and bool(after["folder"])
    checks.append(
        f"same record names for \"{EN_QUERY}\" after the timed runs: {verdict(same_after)}"
        + ("" if same_after else f" ({', '.join(after['folder'])} vs {', '.join(after['pg'])})")
    )
    zh = {side: recalled(check_run(COMMANDS[RECALL_ZH](0), envs[side])) for side in SIDES}
    same_zh = zh["folder"] == zh["pg"]
    checks.append(
        f"same record names for \"{ZH_QUERY}\": {verdict(same_zh)} ({len(zh['folder'])} record(s))"
        + ("" if same_zh else f" ({', '.join(zh['folder'])} vs {', '.join(zh['pg'])})")
    )
    saves = {side: saved_names(envs[side]) for side in SIDES}
    wanted = {f"bench-save-{i}" for i in range(runs + 1)}
    kept = all(wanted <= saves[side] for side in SIDES)
    checks.append(
        f"every timed save is listed on both stores ({len(wanted)} each), "
        f"{len(saves['folder'])} and {len(saves['pg'])} records in all: {verdict(kept)}"
    )
    return results, checks


# --- 2. catch-up ----------------------------------------------------------------------------


def catch_up_record(i: int) -> MemoryRecord:
    return MemoryRecord(
        name=f"catchup-{i:05d}",
        type="project",
        description=f"Catch-up note {i}: the quokka marmalade handover checklist",
        body="",
    )


def bench_catch_up(
    folder_vault: Path, envs: dict[str, dict[str, str]], host_a: Path, url: str, count: int
) -> dict[str, dict[str, Any]]:
    """Per side: how long the count writes took (not a whole process), host B's next recall (it
    learns the count changes) and its second recall (nothing new), and whether the next one found
    a new record."""
    from aibuddy_cli.app.session import Session
    from aibuddy_cli.vault import Vault

    found: dict[str, dict[str, Any]] = {side: {} for side in SIDES}
    query = [str(AIBUDDY), "memory", "recall", CATCH_UP_QUERY, "--json"]
    started = time.perf_counter()
    folder = folder_vault / "memory" / USER
    for i in range(count):
        record = catch_up_record(i)
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
    found["folder"]["write"] = time.perf_counter() - started

    started = time.perf_counter()
    environ = {"AIBUDDY_STORE_URL": url, "AIBUDDY_WORKER": "0"}
    with Session(Vault.open(host_a), USER, environ=environ) as session:
        for i in range(count):
            record = catch_up_record(i)
            session.memory.save(record.name, type=record.type, description=record.description, body="")
    found["pg"]["write"] = time.perf_counter() - started

    for side in SIDES:
        found[side]["next"], done = timed(query, envs[side])
        names = recalled(done)
        found[side]["found"] = [name for name in names if name.startswith("catchup-")]
        found[side]["second"], _ = timed(query, envs[side])
    return found


# --- 4. appends to a growing log --------------------------------------------------------------

LOG_LINE = b'{"decision": "skipped", "reason": "' + b"x" * 300 + b'"}\n'
LOG_SIZES_MB = (1, 20)


def bench_appends(folder: Path, url: str, appends: int) -> dict[str, dict[int, float]]:
    """Per side and log size: the median of `appends` in-process appends of one line to a log that
    size (a decision log or a long task's messages), in ms, and whether the log reads back whole."""
    from aibuddy_cli.store.files import FileStore
    from aibuddy_cli.store.postgres import PgStore

    stores = {"folder": FileStore(folder, folder / ".locks"), "pg": PgStore(url)}
    found: dict[str, dict[int, float]] = {side: {} for side in SIDES}
    for side, store in stores.items():
        for size in LOG_SIZES_MB:
            key = f".aibuddy/logs/bench-{size}.jsonl"
            body = LOG_LINE * (size * 1_000_000 // len(LOG_LINE))
            store.write(key, body)
            times = []
            for _ in range(appends):
                started = time.perf_counter()
                store.append(key, LOG_LINE)
                times.append((time.perf_counter() - started) * 1000)
            found[side][size] = statistics.median(times)
            if store.read(key)[0] != body + LOG_LINE * appends:
                found[side][-1] = 1.0  # a log that does not read back whole: FAIL
    return found


# --- 3. HTTP load ---------------------------------------------------------------------------


def bench_load(env: dict[str, str], clients: int, calls: int) -> dict[str, Any]:
    """bench_mcp's load on one host, and what `memory list` / `table filter` read back."""
    server = HttpServer(env)
    started = time.perf_counter()
    try:
        times, errors = load(server.url, token(env, "load"), clients, calls)
    finally:
        wall = time.perf_counter() - started
        server.stop()
    saves = saved_names(env)
    wanted = {f"n-{i}-{c}" for i in range(clients) for c in range(calls) if c % 4 == 0}
    keys = table_keys(env, "load")
    added = clients * len([c for c in range(calls) if c % 4 == 2])
    ok = not errors and saves >= wanted and len(keys) == len(set(keys)) == added
    return {
        "times": times, "errors": errors, "wall": wall, "kept": len(saves & wanted), "wanted": len(wanted),
        "keys": len(keys), "twice": len(keys) - len(set(keys)), "added": added, "ok": ok,
    }  # fmt: skip


# --- report -----------------------------------------------------------------------------------


def report(
    args: argparse.Namespace,
    setup: dict[str, Any],
    commands: dict[str, dict[str, float]],
    checks: list[str],
    catch_up: dict[str, dict[str, Any]],
    loads: dict[str, dict[str, Any]],
    appends: dict[str, dict[int, float]],
) -> tuple[str, bool]:
    bare = commands["folder"][BARE]
    lines = [
        f"`python -c pass` in this run: {bare:.0f} ms. PostgreSQL {setup['version']} on a Unix socket of"
        f" this machine, fsync {'on' if args.fsync else 'off'}.\n",
        f"Copy of the {args.records:,}-record folder vault into a fresh database (`aibuddy store copy"
        f" --to URL`, one whole process): {setup['copy']:.1f} s ({setup['copied']:,} files,"
        f" {setup['bytes'] / 1e6:.1f} MB).\n",
        f"Whole processes on {args.records:,} records: median of {args.runs} interleaved runs after 1"
        " warm-up; ratio to `python -c pass` from the same rounds.\n",
        "| command | folder | PostgreSQL | PostgreSQL / folder |",
        "|---|---|---|---|",
    ]
    for row in (BARE, SAVE, RECALL_EN, RECALL_ZH, COLD):
        folder, pg = commands["folder"][row], commands["pg"][row]
        lines.append(f"| {row} | {cell(folder, bare)} | {cell(pg, bare)} | {pg / folder:.2f} |")
    lines += ["", "Checks:", ""] + [f"- {check}" for check in checks]

    n = args.catch_up
    lines += [
        "",
        f"Catch-up: {n:,} new records, then host B's next `memory recall \"{CATCH_UP_QUERY}\" --json`"
        " (whole process: its index catches up with the changes, from a scan of the folder or from"
        " what the database tells it):\n",
        "| | folder | PostgreSQL |",
        "|---|---|---|",
        f"| {n:,} new records (not whole processes) | {catch_up['folder']['write']:.1f} s: files written"
        f" into the folder | {catch_up['pg']['write']:.1f} s: saves on host A, in-process |",
    ]
    for key, label in (("next", "host B's next recall"), ("second", "host B's second recall (nothing new)")):
        folder, pg = catch_up["folder"][key], catch_up["pg"][key]
        lines.append(f"| {label} | {cell(folder, bare)} | {cell(pg, bare)} |")
    catch_ok = all(catch_up[side]["found"] for side in SIDES)
    lines += [
        "",
        "- the next recall finds a new record on both: "
        + verdict(catch_ok)
        + " ("
        + "; ".join(f"{SIDE_NAMES[side]}: {shown_names(catch_up[side]['found'])}" for side in SIDES)
        + ")",
    ]

    lines += [
        "",
        f"HTTP load: {args.clients} clients x {args.client_calls} calls (recall, save, table add, filter)"
        " on one `aibuddy mcp --http` server, a fresh host each, read back with `memory list` and"
        " `table filter`:\n",
        "| | folder | PostgreSQL |",
        "|---|---|---|",
    ]
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("calls", lambda r: f"{len(r['times'])} in {r['wall']:.1f} s"),
        ("median", lambda r: ms(statistics.median(r["times"]))),
        ("p99", lambda r: ms(percentile(r["times"], 0.99))),
        ("errors", lambda r: str(len(r["errors"])) + (f" (first: {r['errors'][0]})" if r["errors"] else "")),
        ("saves kept", lambda r: f"{r['kept']} of {r['wanted']}"),
        ("rows added", lambda r: f"{r['keys']} of {r['added']}, {r['twice']} key(s) given twice"),
    ]
    for label, show in rows:
        lines.append(f"| {label} | {show(loads['folder'])} | {show(loads['pg'])} |")
    lines += [""] + [
        f"- {SIDE_NAMES[side]}: no error, no write lost: {verdict(loads[side]['ok'])}" for side in SIDES
    ]
    whole = all(-1 not in appends[side] for side in SIDES)
    lines += [
        "",
        f"Appending one line to a log (in-process, median of {args.appends}):\n",
        "| log size | folder | PostgreSQL |",
        "|---|---|---|",
        *(
            f"| {size} MB | {appends['folder'][size]:.2f} ms | {appends['pg'][size]:.2f} ms |"
            for size in LOG_SIZES_MB
        ),
        "",
        f"- every log reads back whole, appended lines in order: {verdict(whole)}",
    ]
    ok = all("FAIL" not in check for check in checks) and catch_ok and all(r["ok"] for r in loads.values())
    return "\n".join(lines) + "\n", ok and whole


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="records in the vault (bench_memory's)")
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command and store (median)")
    parser.add_argument("--catch-up", type=int, default=1_000, help="saves on host A before B's recall")
    parser.add_argument("--clients", type=int, default=50, help="concurrent MCP HTTP clients")
    parser.add_argument("--client-calls", type=int, default=20, help="calls per HTTP client")
    parser.add_argument("--appends", type=int, default=50, help="appends timed per log size and store")
    parser.add_argument("--no-fsync", dest="fsync", action="store_false", help="server with fsync off")
    parser.add_argument("--quick", action="store_true", help="smoke check: 1,000 records, small")
    args = parser.parse_args()
    if args.quick:
        args.records, args.runs, args.catch_up, args.clients, args.client_calls = 1_000, 3, 100, 10, 8
        args.appends = 5
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    base["AIBUDDY_WORKER"] = "0"

    OUT.mkdir(parents=True, exist_ok=True)
    cluster = cluster_or_skip(args.fsync)
    scratch = Path(tempfile.mkdtemp(prefix="aibuddy-bench-store-"))
    try:
        source, mtimes = build_vault(args.records)
        url = cluster.new_database()
        folder_vault = scratch / "folder"
        # The scratch copy's first recall builds its index, as the database host's does.
        shutil.copytree(source, folder_vault, ignore=lambda d, _: [CACHE_DIR] if Path(d) == source else [])
        restore_mtimes(folder_vault, mtimes)
        folder_env = {**base, "AIBUDDY_VAULT": str(folder_vault), "AIBUDDY_USER": USER}
        seconds, done = timed([str(AIBUDDY), "store", "copy", "--to", url, "--json"], folder_env)
        copied = document(done)
        if done.returncode != 0 or not copied:
            sys.exit(f"store copy failed: {done.stderr.strip()[:500]}")
        setup = {
            "copy": seconds / 1000, "copied": copied["copied"], "bytes": copied["bytes"],
            "version": cluster.bin.parent.name,
        }  # fmt: skip
        host_b = scratch / "host-b"
        init_host(host_b, base)
        envs = {
            "folder": folder_env,
            "pg": {**base, "AIBUDDY_VAULT": str(host_b), "AIBUDDY_USER": USER, "AIBUDDY_STORE_URL": url},
        }
        print(f"1. save and recall on {args.records:,} records ...", file=sys.stderr)
        commands, checks = bench_commands(envs, args.runs)

        print(f"2. catch-up after {args.catch_up:,} saves ...", file=sys.stderr)
        host_a = scratch / "host-a"
        init_host(host_a, base)
        catch_up = bench_catch_up(folder_vault, envs, host_a, url, args.catch_up)

        print(f"3. {args.clients} HTTP clients x {args.client_calls} calls ...", file=sys.stderr)
        loads: dict[str, dict[str, Any]] = {}
        for side in SIDES:
            host = scratch / f"load-{side}"
            init_host(host, base)
            env = {**base, "AIBUDDY_VAULT": str(host), "AIBUDDY_USER": USER}
            if side == "pg":
                env["AIBUDDY_STORE_URL"] = cluster.new_database()
            loads[side] = bench_load(env, args.clients, args.client_calls)

        sizes = " and ".join(f"{n} MB" for n in LOG_SIZES_MB)
        print(f"4. {args.appends} appends to logs of {sizes} ...", file=sys.stderr)
        logs = scratch / "logs"
        logs.mkdir()
        appends = bench_appends(logs, cluster.new_database(), args.appends)
    finally:
        cluster.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    text, ok = report(args, setup, commands, checks, catch_up, loads, appends)
    print(text)
    (OUT / "store-results.md").write_text(text, encoding="utf-8")
    print(json.dumps({"ok": ok}), file=sys.stderr)


if __name__ == "__main__":
    main()
