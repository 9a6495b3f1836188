#!/usr/bin/env python3
"""How long Claude Code waits on `aibuddy hook claude-code`: whole processes, as the host runs
them, beside `python -c pass` in the same run.

- Stop: two new transcript lines each time (a user turn and the reply), imported into the
  session's task (the transcript grows to 2 x runs lines; the hook reads only what is new).
- SessionStart: a lexical recall over bench_memory's 10,000-record vault and the context printed.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_hooks.py
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
import uuid
from pathlib import Path

from bench_memory import USER, build_vault
from benchlib import run_once

AIBUDDY = Path(sys.executable).parent / "aibuddy"


def timed(argv: list[str], env: dict[str, str], stdin: bytes) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, input=stdin, capture_output=True, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or done.stderr:
        sys.exit(f"the hook failed: {done.stderr.decode()[:300]}")
    return elapsed, done.stdout


def entry(session: str, kind: str, text: str, parent: str | None) -> tuple[str, str]:
    entry_id = str(uuid.uuid4())
    content = text if kind == "user" else [{"type": "text", "text": text}]
    line = {
        "parentUuid": parent, "isSidechain": False, "type": kind, "sessionId": session, "uuid": entry_id,
        "cwd": "/home/bench/src/billing-service", "timestamp": "2026-11-30T09:00:00.000Z",
        "message": {"role": kind, "content": content},
    }  # fmt: skip
    return json.dumps(line), entry_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIBUDDY_", "OPENAI_"))}
    bare = statistics.median(run_once([sys.executable, "-c", "pass"], base) for _ in range(args.runs))

    scratch = Path(tempfile.mkdtemp(prefix="aibuddy-bench-hooks-"))
    try:
        subprocess.run(
            [str(AIBUDDY), "--user", "bench", "init", str(scratch / "vault")], check=True, capture_output=True
        )
        command = [str(AIBUDDY), "--vault", str(scratch / "vault"), "--user", "bench", "hook", "claude-code"]
        transcript, session, parent = scratch / "session.jsonl", str(uuid.uuid4()), None
        stops = []
        for run in range(args.runs):
            user, parent = entry(session, "user", f"Step {run}: look at billing/retry.py", parent)
            reply, parent = entry(session, "assistant", f"Done with step {run}.", parent)
            with transcript.open("a") as handle:
                handle.write(user + "\n" + reply + "\n")
            event = {"hook_event_name": "Stop", "session_id": session, "transcript_path": str(transcript),
                     "cwd": "/home/bench/src/billing-service"}  # fmt: skip
            stops.append(timed(command, base, json.dumps(event).encode())[0])
        messages = (scratch / "vault/tasks/bench/t1/messages.jsonl").read_text().count("\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    vault, _ = build_vault(10_000)
    command = [str(AIBUDDY), "--vault", str(vault), "--user", USER, "hook", "claude-code"]
    event = {
        "hook_event_name": "SessionStart",
        "session_id": "bench",
        "source": "startup",
        "transcript_path": "/nonexistent.jsonl",
        "cwd": "/home/bench/src/kubernetes-rollback-runbook",
    }
    starts, said = [], b""
    for _ in range(args.runs):
        elapsed, said = timed(command, base, json.dumps(event).encode())
        starts.append(elapsed)

    def row(name: str, values: list[float]) -> str:
        median = statistics.median(values)
        return f"| {name} | {median:.0f} ms ({median / bare:.1f}×) | {max(values):.0f} ms |"

    print(f"`python -c pass` in this run: {bare:.0f} ms; {args.runs} runs each\n")
    print("| event | median | worst |")
    print("|---|---|---|")
    print(row("Stop (2 new transcript lines imported)", stops))
    print(row("SessionStart (recall over 10,000 records)", starts))
    context = json.loads(said)["hookSpecificOutput"]["additionalContext"] if said.strip() else ""
    worst = max(statistics.median(stops), statistics.median(starts))
    print(
        f"\n- the task holds {messages} messages (2 a Stop); SessionStart injected {len(context)} characters"
    )
    verdict = "PASS" if worst < 300 else "FAIL"
    print(f"- under the stated budget of 300 ms a hook: worst median {worst:.0f} ms — {verdict}")


if __name__ == "__main__":
    main()
