#!/usr/bin/env python3
"""A warm MCP server's latency, on stdio and on HTTP: `memory_recall` over 10,000 records, and
50 concurrent HTTP clients x 20 calls mixing recall, save, table add and filter.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_mcp.py
The 10,000-record vault is bench_memory's (generated once under bench/out/); the load runs in a
scratch vault. Every figure is a median or a 99th percentile of calls as the SDK's client sees
them (request to answer), with `python -c pass` from the same run beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_memory import EN_QUERY, USER, ZH_QUERY, build_vault
from benchlib import run_once

AIBUDDY = Path(sys.executable).parent / "aibuddy"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


class HttpServer:
    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [str(AIBUDDY), "mcp", "--http", "127.0.0.1:0"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if "serving MCP at " not in line:
            sys.exit(f"the HTTP server did not start: {line}")
        self.url = line.split("serving MCP at ", 1)[1].split(" ", 1)[0]

    def stop(self) -> str:
        """Stop it; what it wrote to stderr after starting (errors, warnings)."""
        self.process.terminate()
        _, err = self.process.communicate(timeout=60)
        return err


def token(env: dict[str, str], name: str) -> str:
    done = subprocess.run(
        [str(AIBUDDY), "token", "create", "--name", name], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


async def with_http(url: str, secret: str, body: Callable[[Any], Awaitable[Any]]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return await body(client)


async def with_stdio(env: dict[str, str], body: Callable[[Any], Awaitable[Any]]) -> Any:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=str(AIBUDDY), args=["mcp"], env=env)) as client:
        return await body(client)


def recall_timings(calls: int) -> Callable[[Any], Awaitable[dict[str, list[float]]]]:
    async def body(client: Any) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for query in (EN_QUERY, ZH_QUERY):
            await client.call_tool("memory_recall", {"query": query})  # the first call builds the index
            times = found.setdefault(query, [])
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("memory_recall", {"query": query})
                times.append(time.perf_counter() - started)
                if result.is_error:
                    sys.exit(f"recall failed: {result.content}")
        return found

    return body


def load(url: str, secret: str, clients: int, calls: int) -> tuple[list[float], list[str]]:
    """clients x calls, each client its own connection; the latencies and the errors."""

    async def one(index: int) -> tuple[list[float], list[str]]:
        async def body(client: Any) -> tuple[list[float], list[str]]:
            times, errors = [], []
            for call in range(calls):
                kind = call % 4
                if kind == 0:
                    name, arguments = "memory_save", {"name": f"n-{index}-{call}", "type": "project",
                                                      "description": f"note {index} {call}"}  # fmt: skip
                elif kind == 1:
                    name, arguments = "memory_recall", {"query": f"note {index}"}
                elif kind == 2:
                    name, arguments = (
                        "table_add_rows",
                        {"table": "load", "rows": [{"client": index, "call": call}]},
                    )
                else:
                    name, arguments = "table_filter", {"tables": ["load"], "filter": f"client == {index}"}
                started = time.perf_counter()
                result = await client.call_tool(name, arguments)
                times.append(time.perf_counter() - started)
                if result.is_error:
                    errors.append(f"{name}: {result.content[0].text[:200]}")
            return times, errors

        return await with_http(url, secret, body)

    async def main() -> list[tuple[list[float], list[str]]]:
        async def create(client: Any) -> Any:
            return await client.call_tool(
                "table_create", {"name": "load", "columns": {"client": "int", "call": "int"}}
            )

        await with_http(url, secret, create)
        return await asyncio.gather(*(one(index) for index in range(clients)))

    results = asyncio.run(main())
    return [t for times, _ in results for t in times], [e for _, errors in results for e in errors]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=50, help="timed recalls per query and transport")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--client-calls", type=int, default=20)
    args = parser.parse_args()
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    bare = statistics.median(run_once([sys.executable, "-c", "pass"], base) for _ in range(7))

    vault, _ = build_vault(args.records)
    env = {**base, "AIBUDDY_VAULT": str(vault), "AIBUDDY_USER": USER, "AIBUDDY_WORKER": "0"}
    stdio = asyncio.run(with_stdio(env, recall_timings(args.calls)))
    server = HttpServer(env)
    try:
        http = asyncio.run(
            with_http(server.url, token(env, f"bench-{os.getpid()}"), recall_timings(args.calls))
        )
    finally:
        server.stop()

    scratch = Path(tempfile.mkdtemp(prefix="aibuddy-bench-mcp-"))
    try:
        subprocess.run(
            [str(AIBUDDY), "--user", "bench", "init", str(scratch)], check=True, capture_output=True
        )
        load_env = {**base, "AIBUDDY_VAULT": str(scratch), "AIBUDDY_USER": "bench", "AIBUDDY_WORKER": "0"}
        server = HttpServer(load_env)
        started = time.perf_counter()
        try:
            times, errors = load(server.url, token(load_env, "load"), args.clients, args.client_calls)
        finally:
            wall = time.perf_counter() - started
            server.stop()
        saves = {p.stem for p in (scratch / "memory/bench").glob("n-*.md")}
        wanted = {f"n-{i}-{c}" for i in range(args.clients) for c in range(args.client_calls) if c % 4 == 0}
        rows = (scratch / "tables/personal/bench/load.csv").read_text().splitlines()[1:]
        keys = [row.split(",")[0] for row in rows]
        added = args.clients * len([c for c in range(args.client_calls) if c % 4 == 2])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"`python -c pass` in this run: {bare:.0f} ms\n")
    print(f"Warm `memory_recall` over {args.records:,} records ({args.calls} calls each, after one):\n")
    print("| query | stdio median | stdio p99 | HTTP median | HTTP p99 |")
    print("|---|---|---|---|---|")
    for query in (EN_QUERY, ZH_QUERY):
        a, b = stdio[query], http[query]
        cells = [
            ms(statistics.median(a)),
            ms(percentile(a, 0.99)),
            ms(statistics.median(b)),
            ms(percentile(b, 0.99)),
        ]
        print(f"| {query} | " + " | ".join(cells) + " |")
    worst = max(statistics.median(values) for values in [*stdio.values(), *http.values()])
    print(
        f"\n- median under 10 ms on both transports: worst median {ms(worst)} — "
        + ("PASS" if worst < 0.010 else "FAIL")
    )
    print(
        f"\nHTTP load: {args.clients} clients x {args.client_calls} calls"
        " (recall, save, table add, filter):\n"
    )
    print(
        f"- calls: {len(times)} in {wall:.1f} s; median {ms(statistics.median(times))},"
        f" p99 {ms(percentile(times, 0.99))}"
    )
    print(f"- errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(f"- saves kept: {len(saves & wanted)} of {len(wanted)}; rows added: {len(keys)} of {added}, "
          f"{len(keys) - len(set(keys))} key(s) given twice")  # fmt: skip
    ok = not errors and saves >= wanted and len(keys) == len(set(keys)) == added
    print(f"- no error, no write lost: {'PASS' if ok else 'FAIL'}")
    print(json.dumps({"ok": ok}), file=sys.stderr)


if __name__ == "__main__":
    main()
