"""Warm model calls: a shell loop of `memory recall` with a model (through the model worker, and
without it), and `memory_recall` calls to the MCP server, against the tests' local fake server.

Targets (issue 12): recall calls 2-6 in a shell loop, median under 1 s; MCP calls 2-10 under
0.3 s each. The first call (litellm's import) is reported apart. Issue 17: `task end` with an
extraction model that takes 10 s to answer returns well before it (under 3 s). Writes
bench/out/models-results.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import report

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fake_openai import FakeOpenAI  # noqa: E402

AIBUDDY = Path(sys.executable).parent / "aibuddy"
OUT = HERE / "out" / "models-results.md"
SLOW_EXTRACT = 10.0  # seconds the extract model takes in the task end measurement


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or json.loads(result.stdout)["method"] != "model":
        raise SystemExit(f"unexpected answer: {result.stdout[:200]!r} {result.stderr[:300]!r}")
    return elapsed


def shell_loop(env: dict[str, str], calls: int = 6) -> list[float]:
    command = [str(AIBUDDY), "memory", "recall", "green tea", "--json"]
    times = [timed(command, env)]
    if env.get("AIBUDDY_WORKER") != "0":
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the first call started the worker: let it come up
            status = subprocess.run(
                [str(AIBUDDY), "worker", "status", "--json"], env=env, capture_output=True
            )
            if json.loads(status.stdout)["running"]:
                break
            time.sleep(0.1)
    times += [timed(command, env) for _ in range(calls - 1)]
    return times


def task_end(env: dict[str, str], server: FakeOpenAI, delay: float) -> float:
    """Seconds `task end` takes when a cue fires and the extract model answers after delay."""
    extract = {**env, "AIBUDDY_MODEL_EXTRACT": "openai/extract-test"}
    for command in (
        ["task", "new", "Chat"],
        ["task", "add-message", "t1", "From now on, I prefer green tea.", "--role", "user"],
        ["task", "add-message", "t1", "Noted.", "--role", "assistant"],
    ):
        subprocess.run([str(AIBUDDY), *command], env=extract, check=True, capture_output=True)
    server.enqueue(content='{"candidates": []}', delay=delay)
    started = time.perf_counter()
    result = subprocess.run([str(AIBUDDY), "task", "end", "t1", "--json"], env=extract, capture_output=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or json.loads(result.stdout)["task"]["status"] != "closed":
        raise SystemExit(f"unexpected task end: {result.stdout[:200]!r} {result.stderr[:300]!r}")
    return elapsed


def mcp_calls(env: dict[str, str], calls: int = 10) -> list[float]:
    from mcp import Client, StdioServerParameters

    async def main() -> list[float]:
        params = StdioServerParameters(command=str(AIBUDDY), args=["mcp"], env=env)
        times = []
        async with Client(params) as client:
            for _ in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("memory_recall", {"query": "green tea"})
                times.append(time.perf_counter() - started)
                if result.is_error or json.loads(result.content[0].text)["method"] != "model":
                    raise SystemExit(f"unexpected MCP answer: {result.content}")
        return times

    return asyncio.run(main())


def main() -> None:
    server = FakeOpenAI().start()
    server.default.content = '{"selected": ["tea"]}'
    scratch = Path(tempfile.mkdtemp(prefix="aibuddy-bench-models-"))
    runtime = scratch / "run"
    runtime.mkdir(mode=0o700)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    subprocess.run(
        [str(AIBUDDY), "--user", "bench", "init", str(scratch / "vault")], check=True, capture_output=True
    )
    env = {
        **base,
        "AIBUDDY_VAULT": str(scratch / "vault"),
        "AIBUDDY_USER": "bench",
        "AIBUDDY_MODEL_RECALL": "openai/recall-test",
        "AIBUDDY_TIMEOUT": "30",
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_API_BASE": server.url,
        "XDG_RUNTIME_DIR": str(runtime),
        "AIBUDDY_WORKER_IDLE": "60",
    }
    save = [
        "memory",
        "save",
        "tea",
        "--type",
        "user",
        "--description",
        "Drinks green tea",
        "--body",
        "No sugar.",
    ]
    subprocess.run([str(AIBUDDY), *save], env=env, check=True, capture_output=True)
    try:
        cold = shell_loop({**env, "AIBUDDY_WORKER": "0"}, 3)
        warm = shell_loop(env)
        subprocess.run([str(AIBUDDY), "worker", "stop"], env=env, capture_output=True)
        served = mcp_calls({**env, "AIBUDDY_WORKER": "0"})
        ended = task_end({**env, "AIBUDDY_WORKER": "0"}, server, SLOW_EXTRACT)
    finally:
        subprocess.run([str(AIBUDDY), "worker", "stop"], env=env, capture_output=True)
        server.stop()

    def ms(value: float) -> str:
        return f"{value * 1000:.0f} ms"

    warm_median = statistics.median(warm[1:])
    mcp_worst = max(served[1:])
    lines = [
        "Against the tests' local fake OpenAI-compatible server (it answers at once), `memory recall` with a",
        "model for the recall role.",
        "",
        "| what | first call | later calls |",
        "|---|---|---|",
        f"| shell loop, no worker (`AIBUDDY_WORKER=0`) | {ms(cold[0])} | "
        f"median {ms(statistics.median(cold[1:]))} |",
        f"| shell loop, with the worker | {ms(warm[0])} | median {ms(warm_median)} (calls 2-6) |",
        f"| MCP server, `memory_recall` | {ms(served[0])} | median {ms(statistics.median(served[1:]))}, "
        f"max {ms(mcp_worst)} (calls 2-10) |",
        "",
        "Targets:",
        "",
        f"- shell loop calls 2-6, median under 1 s: {ms(warm_median)} — "
        + ("PASS" if warm_median < 1 else "FAIL"),
        f"- MCP calls 2-10, each under 0.3 s: worst {ms(mcp_worst)} — "
        + ("PASS" if mcp_worst < 0.3 else "FAIL"),
        f"- `task end` with an extract model that answers after {SLOW_EXTRACT:g} s, under 3 s (the task is "
        f"closed at once, extraction runs in the background): {ms(ended)} — "
        + ("PASS" if ended < 3 else "FAIL"),
    ]
    report(lines, OUT)


if __name__ == "__main__":
    main()
