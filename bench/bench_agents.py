#!/usr/bin/env python3
"""Many agents at once: 50 HTTP clients x 20 calls (memory_recall, memory_save, table_add_rows,
table_filter) against `aibuddy mcp --http`, beside the floor: the same clients calling nothing.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_agents.py
Each client is its own MCP session (the SDK's streamable-HTTP client, one connection each): all
connect and list the tools (as an agent does on connecting), then start calling together. The
floor is a call of a tool the server does not have: a whole `tools/call` request (the SDK, the
transport, the bearer check, the clients themselves) that runs nothing, with no no-op tool shipped
for it (`ping` is gone from the protocol's 2026-07-28 revision); an uncached
`tools/list` is shown beside it. Both are timed in the same run, one server on one vault and then two
server processes on that vault with the clients split between them (the vault's locks are then
between processes). Afterwards the vault is checked: every save is a record, every row is in the
table, no row key twice. Target: the mix's p99 at most 1.5 x the floor's p99 + 150 ms.

The scratch vaults live under /dev/shm/aibuddy-bench-locks/ (made fresh each run).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_mcp import AIBUDDY, HttpServer, percentile, token, with_http

SCRATCH = Path("/dev/shm/aibuddy-bench-locks") if Path("/dev/shm").is_dir() else None
USER = "bench"
WORDS = ["deploy", "report", "budget", "meeting", "rollback", "release", "customer", "invoice"]


def ms(value: float) -> str:
    return f"{value * 1000:.0f} ms"


def load_average() -> str:
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def mixed_call(index: int, call: int) -> tuple[str, dict[str, Any]]:
    """The call-th call of client index (counted over every round): save, recall, add a row,
    filter, in turn."""
    word = WORDS[(index + call) % len(WORDS)]
    kind = call % 4
    if kind == 0:
        return "memory_save", {
            "name": f"n-{index}-{call}",
            "type": "project",
            "description": f"{word} note {index} {call} from agent {index}",
        }
    if kind == 1:
        return "memory_recall", {"query": f"{word} note"}
    if kind == 2:
        return "table_add_rows", {"table": "load", "rows": [{"client": index, "call": call, "word": word}]}
    return "table_filter", {"tables": ["load"], "filter": f"client == {index}"}


Timings = dict[str, list[float]]
# The floors: a tool that does nothing, without shipping one: a call of a tool the server does not
# have (the SDK answers "Unknown tool" without running anything), and the tool listing.
NO_TOOL = "no_such_tool"
LISTING = "tools/list"


async def run_clients(
    urls: list[str], secret: str, clients: int, calls: range, floor: str = ""
) -> tuple[Timings, list[str]]:
    """clients at once, each making calls (the mix, or only the floor's request), client i on
    urls[i % len(urls)]: latencies per call kind, errors."""

    ready = asyncio.Barrier(clients)

    async def one(index: int) -> tuple[Timings, list[str]]:
        async def body(client: Any) -> tuple[Timings, list[str]]:
            times: Timings = {}
            errors: list[str] = []
            # As an agent does when it connects: the tools listed once (the SDK's client checks
            # each result against its tool's output schema, and lists the tools first when it has
            # not), every client connected; then all start calling at once.
            await client.list_tools()
            await ready.wait()
            for call in calls:
                name, arguments = (floor, {}) if floor else mixed_call(index, call)
                started = time.perf_counter()
                try:
                    if floor == LISTING:
                        await client.list_tools(cache_mode="bypass")
                    elif floor == NO_TOOL:
                        result = await client.call_tool(NO_TOOL, {})
                        if not result.is_error:
                            errors.append(f"{NO_TOOL} answered as a tool")
                    else:
                        result = await client.call_tool(name, arguments)
                        if result.is_error:
                            errors.append(f"{name}: {result.content[0].text[:200]}")
                except Exception as error:  # noqa: BLE001 - counted and shown, the run goes on
                    errors.append(f"{name}: {error!r}"[:200])
                times.setdefault(name, []).append(time.perf_counter() - started)
            return times, errors

        return await with_http(urls[index % len(urls)], secret, body)

    results = await asyncio.gather(*(one(index) for index in range(clients)))
    merged: Timings = {}
    for times, _ in results:
        for name, values in times.items():
            merged.setdefault(name, []).extend(values)
    return merged, [error for _, errors in results for error in errors]


def fresh_vault(base: dict[str, str], name: str) -> tuple[Path, dict[str, str], str]:
    root = (SCRATCH or Path(os.environ.get("TMPDIR", "/tmp"))) / name
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(AIBUDDY), "--user", USER, "init", str(root)], check=True, capture_output=True)
    env = {**base, "AIBUDDY_VAULT": str(root), "AIBUDDY_USER": USER, "AIBUDDY_WORKER": "0"}
    subprocess.run(
        [str(AIBUDDY), "table", "create", "load", "--column", "client:int", "--column", "call:int",
         "--column", "word:str"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    return root, env, token(env, "agents")


def check_vault(root: Path, clients: int, calls: int) -> list[str]:
    """calls: how many each client made (every round's)."""
    """What the run lost or doubled, one line each (empty: nothing)."""
    problems = []
    wanted = {f"n-{i}-{c}" for i in range(clients) for c in range(calls) if c % 4 == 0}
    saved = {path.stem for path in (root / "memory" / USER).glob("n-*.md")}
    if wanted - saved:
        problems.append(f"{len(wanted - saved)} of {len(wanted)} saves missing")
    table = next(root.glob("tables/**/load.csv"))
    with table.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    added = {(str(i), str(c)) for i in range(clients) for c in range(calls) if c % 4 == 2}
    kept = {(row["client"], row["call"]) for row in rows}
    if added - kept:
        problems.append(f"{len(added - kept)} of {len(added)} rows missing")
    key = next(iter(rows[0])) if rows else None
    keys = [row[key] for row in rows] if key else []
    if len(keys) != len(set(keys)):
        problems.append(f"{len(keys) - len(set(keys))} row key(s) given twice ({key})")
    return problems


def variant(base: dict[str, str], servers: int, clients: int, calls: int, rounds: int) -> bool:
    root, env, secret = fresh_vault(base, f"agents-{servers}")
    running = [HttpServer(env) for _ in range(servers)]
    urls = [server.url for server in running]
    floors: Timings = {}
    mixes: Timings = {}
    errors: list[str] = []
    logs: list[str] = []
    try:
        warm = range(1, 2)  # a recall: each server's index and sessions made before timing
        asyncio.run(run_clients(urls, secret, len(urls), warm))
        for turn in range(rounds):  # floors and mix alternate, so a change of load hits all
            done = range(turn * calls, (turn + 1) * calls)
            for kind in (NO_TOOL, LISTING):
                floor, floor_errors = asyncio.run(run_clients(urls, secret, clients, done, kind))
                floors.setdefault(kind, []).extend(floor[kind])
                errors += floor_errors
            mix, mix_errors = asyncio.run(run_clients(urls, secret, clients, done))
            for name, values in mix.items():
                mixes.setdefault(name, []).extend(values)
            errors += mix_errors
    finally:
        logs = [server.stop() for server in running]
    problems = check_vault(root, clients, calls * rounds)
    every = [value for values in mixes.values() for value in values]
    floor_p99, mix_p99 = percentile(floors[NO_TOOL], 0.99), percentile(every, 0.99)
    bound = 1.5 * floor_p99 + 0.150
    print(f"\n{servers} server(s), {clients} clients x {calls} calls, {rounds} round(s)", end=" ")
    print(f"({load_average()}):\n")
    print("| calls | n | p50 | p95 | p99 |")
    print("|---|---|---|---|---|")
    rows = [(f"{NO_TOOL} (the floor)", floors[NO_TOOL]), (f"{LISTING} (for comparison)", floors[LISTING])]
    for name, values in [*rows, *sorted(mixes.items()), ("all of the mix", every)]:
        cells = [ms(percentile(values, share)) for share in (0.50, 0.95, 0.99)]
        print(f"| {name} | {len(values)} | " + " | ".join(cells) + " |")
    print(f"\n- mix p99 {ms(mix_p99)} against 1.5 x floor p99 + 150 ms = {ms(bound)}: "
          + ("PASS" if mix_p99 <= bound else "FAIL"))  # fmt: skip
    print(f"- errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print("- nothing lost, no key twice: " + ("; ".join(problems) if problems else "PASS"))
    noted = [line for log in logs for line in log.splitlines() if line.startswith(("error", "warning"))]
    if noted:
        print(f"- the servers logged {len(noted)} line(s), first: {noted[0][:200]}")
    shutil.rmtree(root, ignore_errors=True)
    return mix_p99 <= bound and not errors and not problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20, help="calls per client")
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2], help="server processes per run")
    parser.add_argument("--rounds", type=int, default=1, help="floor and mix alternated this many times")
    args = parser.parse_args()
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    print(f"Many agents at once ({load_average()}; {os.cpu_count()} cores)")
    passed = [variant(base, servers, args.clients, args.calls, args.rounds) for servers in args.servers]
    print(f"\nall targets met: {'PASS' if all(passed) else 'FAIL'} ({load_average()})")


if __name__ == "__main__":
    main()
