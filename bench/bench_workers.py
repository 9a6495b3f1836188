"""Memory and start cost of the model worker and the MCP server (issue 35), against the tests'
local fake OpenAI-compatible server.

For each code tree (this one, and with `--baseline DIR` another checkout, e.g. main, in the same
run): how long a model worker takes from spawn to its first answer, its resident memory (RSS and
peak, from /proc) after a few calls, the idle limit it chose, and the resident memory of a warm
MCP server (`aibuddy mcp` over stdio) after `memory_recall` calls, lexical and with a recall model.
Beside them, the bare interpreter (`python -c pass`) and `import litellm` alone. Writes
bench/out/workers-results.md.

    python bench/bench_workers.py [--baseline /work/main] [--starts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fake_openai import FakeOpenAI  # noqa: E402

OUT = HERE / "out" / "workers-results.md"
CALLS = 5  # model calls a worker answers before its memory is read
MCP_CALLS = 10


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) memory of a live process in MB, from /proc/<pid>/status."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def python_rss(code: str, env: dict[str, str]) -> float:
    """Peak resident memory (MB) of an interpreter that runs code and then reports it."""
    probe = code + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


def complete_request(digest: str, url: str) -> dict:
    return {
        "op": "complete",
        "env": digest,
        "settings": {
            "role": "recall",
            "model": "openai/recall-test",
            "api_base": url,
            "timeout": 30.0,
            "problem": None,
            "import_timeout": 120.0,
        },
        "messages": [{"role": "user", "content": "which record?"}],
        "options": {},
    }


def one_worker(env: dict[str, str], url: str) -> dict:
    """Spawn a worker, time spawn -> first answer, make CALLS calls, read its memory, stop it."""
    from aibuddy_cli import unix_peer
    from aibuddy_cli.models import worker_client

    digest = worker_client.fingerprint(env)
    path = worker_client.socket_path(env, digest)
    request = complete_request(digest, url)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "aibuddy_cli", "worker", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=env["PYTHONPATH"],  # `-m` puts the working directory first on sys.path: the tree's code
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                reply = unix_peer.send(path, request, 60)
                break
            except unix_peer.NoPeer:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the worker did not start") from None
                time.sleep(0.02)
        first = time.perf_counter() - started
        if not reply.get("ok"):
            raise SystemExit(f"unexpected worker answer: {reply}")
        for _ in range(CALLS - 1):
            unix_peer.send(path, request, 60)
        rss, peak = rss_mb(process.pid)
        status = unix_peer.send(path, {"op": "status"}, 5)
        unix_peer.send(path, {"op": "stop"}, 5)
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return {"start": first, "rss": rss, "peak": peak, "idle": status.get("idle_limit")}


def mcp_rss(env: dict[str, str], query: str) -> tuple[float, float, float]:
    """(median ms of calls 2..N, RSS MB, peak MB) of a warm `aibuddy mcp` after MCP_CALLS recalls."""
    from mcp import Client, StdioServerParameters

    async def main() -> tuple[float, float, float]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "aibuddy_cli", "mcp"], env=env, cwd=env["PYTHONPATH"]
        )
        before = set(children())
        times = []
        async with Client(params) as client:
            for _ in range(MCP_CALLS):
                started = time.perf_counter()
                result = await client.call_tool("memory_recall", {"query": query})
                times.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"unexpected MCP answer: {result.content}")
            (pid,) = set(children()) - before
            rss, peak = rss_mb(pid)
        return statistics.median(times[1:]) * 1000, rss, peak

    return asyncio.run(main())


def children() -> list[int]:
    """Pids of this process's live children (from /proc)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.append(int(entry.name))
    return found


def vault_with_records(scratch: Path, env: dict[str, str], count: int = 200) -> Path:
    """A small vault (count records of everyday words): the server's memory is not the vault's."""
    vault = scratch / "vault"
    subprocess.run([sys.executable, "-m", "aibuddy_cli", "--user", "bench", "init", str(vault)],
                   env=env, check=True, capture_output=True, cwd=env["PYTHONPATH"])  # fmt: skip
    code = (
        "import sys\nfrom aibuddy_cli.app.session import Session\nfrom aibuddy_cli.vault import Vault\n"
        "from pathlib import Path\n"
        "memory = Session(Vault.open(Path(sys.argv[1])), 'bench', environ={}).memory\n"
        "words = 'deploy report budget meeting green tea review plan release notes'.split()\n"
        "for i in range(int(sys.argv[2])):\n"
        "    w = ' '.join(words[(i + k) % len(words)] for k in range(3))\n"
        "    memory.save(f'note-{i}', type='project', description=f'{w} {i}', body=f'{w} body {i}.')\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(vault), str(count)], env=env, check=True, cwd=env["PYTHONPATH"]
    )
    return vault


def measure(tree: Path, server: FakeOpenAI, starts: int, scratch: Path) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    runtime = scratch / "run"
    runtime.mkdir(mode=0o700)
    env = {
        **base,
        "PYTHONPATH": str(tree),
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_API_BASE": server.url,
        "XDG_RUNTIME_DIR": str(runtime),
        "AIBUDDY_WORKER": "1",
    }
    workers = [one_worker(env, server.url) for _ in range(starts)]
    vault = vault_with_records(scratch, env)
    served = {**env, "AIBUDDY_VAULT": str(vault), "AIBUDDY_USER": "bench", "AIBUDDY_WORKER": "0"}
    lexical = mcp_rss(served, "budget meeting")
    server.default.content = '{"selected": ["note-1"]}'
    modelled = mcp_rss({**served, "AIBUDDY_MODEL_RECALL": "openai/recall-test"}, "budget meeting")
    return {
        "start": statistics.median(w["start"] for w in workers),
        "starts": [w["start"] for w in workers],
        "rss": statistics.median(w["rss"] for w in workers),
        "peak": statistics.median(w["peak"] for w in workers),
        "idle": workers[-1]["idle"],
        "mcp_lexical": lexical,
        "mcp_model": modelled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout measured in the same run (e.g. main)")
    parser.add_argument("--starts", type=int, default=3, help="workers started per tree (median)")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.baseline:
        trees = {f"baseline ({args.baseline})": args.baseline.resolve(), **trees}
    server = FakeOpenAI().start()
    server.default.content = '{"selected": []}'
    scratch = Path(tempfile.mkdtemp(prefix="ab-w-"))  # short: a socket path has 108 bytes at most
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIBUDDY_")}
    results = {}
    try:
        bare = python_rss("pass", env)
        quiet = {**env, "LITELLM_MODE": "PRODUCTION", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        litellm_alone = python_rss("import litellm", quiet)  # as models/calls.py imports it
        for name, tree in trees.items():
            folder = scratch / str(len(results))
            folder.mkdir()
            results[name] = measure(tree, server, args.starts, folder)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"Load average {load}. Bare interpreter (`python -c pass`): {bare:.0f} MB peak RSS; "
        f"`import litellm` alone: {litellm_alone:.0f} MB.",
        "",
        "| tree | worker start (spawn → first answer) | worker RSS / peak after "
        f"{CALLS} calls | idle limit | MCP server RSS / peak, lexical recall (p50) | "
        "MCP server RSS / peak, recall model (p50) |",
        "|---|---|---|---|---|---|",
    ]
    for name, found in results.items():
        idle = "600 s (fixed)" if found["idle"] is None else f"{found['idle']:.1f} s"
        starts = ", ".join(f"{s:.2f}" for s in found["starts"])
        lex, mod = found["mcp_lexical"], found["mcp_model"]
        lines.append(
            f"| {name} | {found['start']:.2f} s ({starts}) | {found['rss']:.0f} / {found['peak']:.0f} MB "
            f"| {idle} | {lex[1]:.0f} / {lex[2]:.0f} MB ({lex[0]:.1f} ms) "
            f"| {mod[1]:.0f} / {mod[2]:.0f} MB ({mod[0]:.1f} ms) |"
        )
    report(lines, OUT)


if __name__ == "__main__":
    main()
