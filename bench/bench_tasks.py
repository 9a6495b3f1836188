#!/usr/bin/env python3
"""Whole-process timing of aibuddy's task message log: add-message, its consolidation trigger, context.

Run with the project's virtualenv after `make install`:  .venv/bin/python bench/bench_tasks.py
Two vaults are rebuilt under bench/out/ (git-ignored) on every run (cheap): `tasks-vault-plain` with
the default `[consolidation] every = 50` and no model, holding t1 (10 messages) and t2 (1,000), and
`tasks-vault-trigger` with `every = 1` and a `consolidate` model pointing at an address nothing
listens on, holding t1 (10 messages), so that every add-message there starts a background pass that
fails fast and harmlessly. The tasks are made with `task new`, their messages through the Python API
(`TaskService.add_message`, which writes what the CLI writes).

Each timed command runs on the same state: the task's `task.json` and `messages.jsonl` are put back
as they were before every run (outside the timing), so the task always holds 10 (or 1,000) messages
and a timed add-message always adds number 11 (or 1,001). After each trigger run the script
waits, outside the timing, until that vault's `task consolidate` child has ended (pgrep on its
command line), so no background pass runs beside a later timed command.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import check_run, run_once

OUT = Path(__file__).resolve().parent / "out"
AIBUDDY = Path(sys.executable).parent / "aibuddy"
USER = "bench"
SEED = 42
SHORT, LONG = 10, 1000
CHILD_TIMEOUT = 120.0  # seconds to wait for a background pass to end
TRIGGER_ENV = {
    "AIBUDDY_MODEL_CONSOLIDATE": "openai/x",
    "OPENAI_API_BASE": "http://127.0.0.1:9/v1",  # nothing listens there: the pass fails fast
    "OPENAI_API_KEY": "sk-x",
}
NEW_MESSAGE = "Please also check the staging deploy logs for the retry timeout before Friday."

VOCAB = """api cache build deploy release branch merge review test staging production database
schema migration index query latency timeout retry queue worker cron backup restore logging metrics
alert dashboard oncall incident postmortem ticket sprint roadmap milestone customer invoice billing
report weekly summary format template markdown table chart python typescript rust docker helm
terraform nginx postgres redis kafka bucket region cluster node container image registry token
secret certificate proxy firewall budget audit privacy rollback canary feature flag experiment""".split()


def sentence(rng: random.Random, low: int, high: int) -> str:
    words = rng.choices(VOCAB, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def message_text(rng: random.Random) -> str:
    """A chat turn of 1-5 sentences (roughly 50-600 characters)."""
    return " ".join(sentence(rng, 4, 16) for _ in range(rng.randint(1, 5)))


def clean_env(vault: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Only PATH and the locale from the caller; no AIBUDDY_MODEL* and no provider settings."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
    home = OUT / "tasks-home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(AIBUDDY_VAULT=str(vault), AIBUDDY_USER=USER, HOME=str(home))
    return dict(env, **(extra or {}))


def ere_escape(text: str) -> str:
    return "".join("\\" + c if c in ".[]()*+?{}|^$\\" else c for c in text)


def children(vault: Path) -> list[str]:
    """PIDs of this vault's background `task consolidate` processes (never another vault's)."""
    pattern = ere_escape(f"--vault {vault} --user {USER} task consolidate")
    done = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
    return done.stdout.split()


def wait_children(vault: Path) -> float:
    """Wait until the vault's background passes have ended; the seconds waited."""
    start = time.perf_counter()
    while children(vault):
        if time.perf_counter() - start > CHILD_TIMEOUT:
            sys.exit(f"background consolidation in {vault} still running after {CHILD_TIMEOUT:.0f} s")
        time.sleep(0.05)
    return time.perf_counter() - start


def task_dir(vault: Path, task_id: str) -> Path:
    return vault / "tasks" / USER / task_id


def build_vault(name: str, sizes: list[int], every: int | None) -> Path:
    """A fresh vault with one task per size (t1, t2…), each holding that many messages."""
    from aibuddy_cli.app.session import Session
    from aibuddy_cli.vault import Vault

    vault = OUT / name
    wait_children(vault)  # a pass left by an earlier run of this script
    shutil.rmtree(vault, ignore_errors=True)
    env = clean_env(vault)
    check_run([str(AIBUDDY), "--user", USER, "init", str(vault)], env)
    if every is not None:
        toml = vault / "aibuddy.toml"
        text = toml.read_text(encoding="utf-8")
        if "\nevery = 50\n" not in text:
            sys.exit(f"{toml}: no `every = 50` line to change")
        toml.write_text(text.replace("\nevery = 50\n", f"\nevery = {every}\n"), encoding="utf-8")
    rng = random.Random(SEED)
    service = Session(Vault.open(vault), USER).tasks
    for i, size in enumerate(sizes, 1):
        check_run([str(AIBUDDY), "task", "new", f"Bench task {i}: ship the weekly release"], env)
        for n in range(size):
            service.add_message(f"t{i}", "user" if n % 2 == 0 else "assistant", message_text(rng))
    return vault


class Snapshot:
    """A task's files, put back before each timed add-message so every run sees the same task."""

    def __init__(self, folder: Path) -> None:
        self.files = {path: path.read_bytes() for path in folder.iterdir() if path.is_file()}
        self.folder = folder

    def restore(self) -> None:
        for path in self.folder.iterdir():
            if path.is_file() and path not in self.files:
                path.unlink()
        for path, data in self.files.items():
            path.write_bytes(data)


def add_argv(task_id: str) -> list[str]:
    return [str(AIBUDDY), "task", "add-message", task_id, NEW_MESSAGE, "--role", "user", "--json"]


def context_argv(task_id: str) -> list[str]:
    return [str(AIBUDDY), "task", "context", task_id, "--json"]


BASE = "`python -c pass`"
ADD_SHORT = f"`task add-message` ({SHORT} messages, no consolidate model)"
TRIGGER = f"`task add-message` at the trigger ({SHORT} messages, `every = 1`, consolidate model)"
ADD_LONG = f"`task add-message` ({LONG:,} messages, no consolidate model)"
CTX_SHORT = f"`task context --json` ({SHORT} messages)"
CTX_LONG = f"`task context --json` ({LONG:,} messages, compacted: digest)"


def check_add(done: subprocess.CompletedProcess[str], expected: int, label: str) -> str:
    try:
        n = json.loads(done.stdout)["n"]
    except (ValueError, KeyError, TypeError):
        n = None
    return f"{label}: message number {n}, expected {expected} — {'OK' if n == expected else 'WRONG'}"


def check_context(done: subprocess.CompletedProcess[str], size: int) -> str:
    try:
        data = json.loads(done.stdout)
        summary, shown = data.get("summary"), len(data["messages"])
        tokens = data.get("estimated_tokens")
    except (ValueError, KeyError, TypeError):
        return f"context of {size:,} messages: unreadable output — WRONG"
    if summary:
        covers = summary.get("covers")
        state = f"compacted ({summary.get('method')}, covers {covers}) + {shown} recent"
        ok = covers == [1, size - shown]
    else:
        state, ok = f"not compacted, {shown} messages", shown == size
    return f"context of {size:,} messages: {state}, ~{tokens} tokens — {'OK' if ok else 'WRONG'}"


def bench(runs: int) -> tuple[dict[str, list[float]], list[str]]:
    plain = build_vault("tasks-vault-plain", [SHORT, LONG], None)
    trigger = build_vault("tasks-vault-trigger", [SHORT], 1)
    plain_env, trigger_env = clean_env(plain), clean_env(trigger, TRIGGER_ENV)
    short, long_ = Snapshot(task_dir(plain, "t1")), Snapshot(task_dir(plain, "t2"))
    trig = Snapshot(task_dir(trigger, "t1"))
    log = trigger / ".aibuddy" / "logs" / "consolidation.jsonl"

    def log_lines() -> int:
        return len(log.read_text(encoding="utf-8").splitlines()) if log.is_file() else 0

    # label -> (argv, env, snapshot to restore first or None, vault whose children to wait for or None)
    commands = {
        BASE: ([sys.executable, "-c", "pass"], plain_env, None, None),
        ADD_SHORT: (add_argv("t1"), plain_env, short, None),
        ADD_LONG: (add_argv("t2"), plain_env, long_, None),
        TRIGGER: (add_argv("t1"), trigger_env, trig, trigger),
        CTX_SHORT: (context_argv("t1"), plain_env, short, None),
        CTX_LONG: (context_argv("t2"), plain_env, long_, None),
    }
    # Warm-up: one captured run each, whose output is checked.
    notes = []
    for label, (argv, env, snap, wait_for) in commands.items():
        if snap:
            snap.restore()
        done = check_run(argv, env)
        if label in (ADD_SHORT, ADD_LONG, TRIGGER):
            notes.append(check_add(done, (LONG if label == ADD_LONG else SHORT) + 1, label))
        elif label in (CTX_SHORT, CTX_LONG):
            notes.append(check_context(done, LONG if label == CTX_LONG else SHORT))
        if wait_for:
            wait_children(wait_for)
    lines_before = log_lines()
    samples: dict[str, list[float]] = {label: [] for label in commands}
    spawned, waits = 0, []
    for _ in range(runs):
        for label, (argv, env, snap, wait_for) in commands.items():
            if snap:
                snap.restore()
            samples[label].append(run_once(argv, env))
            if wait_for:
                spawned += bool(children(wait_for))
                waits.append(wait_children(wait_for))
    for snap in (short, long_, trig):
        snap.restore()
    passes = log_lines() - lines_before
    notes.append(
        f"trigger: a `task consolidate` child was running right after {spawned} of {runs} timed runs;"
        f" {passes} failed pass(es) logged in consolidation.jsonl (expected {runs});"
        f" the script then waited for it to end: median {statistics.median(waits):.1f} s,"
        f" max {max(waits):.1f} s, before the next timed command"
    )
    return samples, notes


PROFILE_CODE = """
import cProfile, sys
from aibuddy_cli.__main__ import main
profile = cProfile.Profile()
profile.enable()
main(sys.argv[2:])
profile.disable()
profile.dump_stats(sys.argv[1])
"""


def profile_context(vault: Path, task_id: str) -> tuple[Path, dict[tuple[str, int, str], tuple]]:
    """cProfile of `main(["task", "context", T, "--json"])` in one process (after one untimed run)."""
    stats_path = OUT / f"tasks-context-{task_id}.prof"
    argv = [sys.executable, "-c", PROFILE_CODE, str(stats_path), "task", "context", task_id, "--json"]
    check_run(argv, clean_env(vault))
    return stats_path, pstats.Stats(str(stats_path)).stats  # type: ignore[attr-defined]


def function_name(key: tuple[str, int, str]) -> str:
    path, line, func = key
    if path == "~":
        return f"`{func}`"
    path = "aibuddy_cli" + path.split("aibuddy_cli", 1)[1] if "aibuddy_cli" in path else Path(path).name
    return f"`{func}` ({path}:{line})"


def profile_growth(vault: Path, top: int) -> tuple[list[Path], list[str]]:
    """Where the long task's context spends the time the short one does not: aibuddy functions by
    the growth of their cumulative time, and the long run's functions by own time."""
    short_path, short = profile_context(vault, "t1")
    long_path, long_ = profile_context(vault, "t2")

    def total(entries: dict) -> float:
        return max(value[3] for value in entries.values())

    ours = [  # below the command layer: not the entry point, the CLI wrappers or module imports
        key
        for key in long_
        if "aibuddy_cli" in key[0]
        and not any(part in key[0] for part in ("__main__", "/cli/"))
        and not key[2].startswith("<module>")
    ]
    growth = sorted(ours, key=lambda key: -(long_[key][3] - short.get(key, (0, 0, 0, 0))[3]))
    lines = [
        f"`main` in total: {total(short) * 1000:.0f} ms ({SHORT} messages) vs {total(long_) * 1000:.0f} ms"
        f" ({LONG:,}) — profiled, so slower than unprofiled.",
        "",
        f"aibuddy functions whose cumulative time grows most ({SHORT} → {LONG:,} messages):",
        "",
    ]
    for key in growth[:top]:
        before, after = short.get(key, (0, 0, 0, 0)), long_[key]
        lines.append(
            f"- {function_name(key)}: {before[3] * 1000:.1f} → {after[3] * 1000:.1f} ms cum,"
            f" {before[1]:,} → {after[1]:,} calls"
        )
    lines += ["", f"functions by own time ({LONG:,} messages):", ""]
    by_own = sorted(long_, key=lambda key: -long_[key][2])
    lines += [
        f"- {function_name(key)}: {long_[key][2] * 1000:.1f} ms own, {long_[key][1]:,} calls"
        for key in by_own[:top]
    ]
    return [short_path, long_path], lines


def cell(ms: float, base: float) -> str:
    return f"{ms:.0f} ms ({ms / base:.1f}×)"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def paired(samples: dict[str, list[float]], label: str, reference: str) -> float:
    """The median over rounds of label / reference timed in the same round (a second apart): a
    slow spell of the machine, which hits both, cancels out."""
    return statistics.median(a / b for a, b in zip(samples[label], samples[reference], strict=True))


TARGETS = [  # (label, reference, what the target says)
    (TRIGGER, ADD_SHORT, "add-message at the trigger within 10 % of add-message without a model"),
    (
        ADD_LONG,
        ADD_SHORT,
        f"add-message does not grow with the log ({LONG:,} vs {SHORT} messages, within 10 %)",
    ),
    (
        CTX_LONG,
        CTX_SHORT,
        f"`task context` does not grow with the log ({LONG:,} vs {SHORT} messages, within 10 %)",
    ),
]


def report(samples: dict[str, list[float]], runs: int, notes: list[str], profile: list[str]) -> str:
    medians = {label: statistics.median(values) for label, values in samples.items()}
    base = medians[BASE]
    lines = [
        f"Median of {runs} interleaved rounds after 1 warm-up; ratio to `python -c pass` measured in the same"
        " run. Each add-message and context runs on the task as built (its files restored before every run);"
        " each trigger run is followed by a wait for its background child to end before the next command.\n",
        "| command | median (× python -c pass) | min |",
        "|---|---|---|",
    ]
    lines += [
        f"| {label} | {cell(ms, base)} | {min(samples[label]):.0f} ms |" for label, ms in medians.items()
    ]
    lines += [
        "",
        "Targets (verdict on the paired ratio: the median over rounds of the two commands' ratio within"
        " one round; the ratio of the medians is shown beside it):",
        "",
    ]
    for label, reference, target in TARGETS:
        ratio = paired(samples, label, reference)
        lines.append(
            f"- {target}: {medians[label]:.0f} vs {medians[reference]:.0f} ms; paired ratio {ratio:.2f}"
            f" ({ratio - 1:+.1%}), ratio of medians {medians[label] / medians[reference]:.2f}"
            f" — {verdict(ratio <= 1.10)}"
        )
    lines += ["", "Checks:", ""] + [f"- {note}" for note in notes]
    lines += ["", 'Profile: in-process cProfile of `main(["task", "context", T, "--json"])`:', ""]
    lines += profile
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (median)")
    parser.add_argument("--quick", action="store_true", help="smoke check: 3 runs")
    parser.add_argument("--top", type=int, default=10, help="functions listed from the profile")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    if not AIBUDDY.exists():
        sys.exit(f"{AIBUDDY} not found: run `make install` first and use .venv/bin/python")
    if shutil.which("pgrep") is None:
        sys.exit("pgrep not found (procps): it is how the script waits for background passes")
    OUT.mkdir(parents=True, exist_ok=True)
    samples, notes = bench(runs)
    # Profiled whether or not the target passes: the growth it shows is there at any size.
    paths, profile = profile_growth(OUT / "tasks-vault-plain", args.top)
    written = " and ".join(str(path.relative_to(OUT.parent.parent)) for path in paths)
    notes.append(f"context profiled: {written}")
    text = report(samples, runs, notes, profile)
    print(text)
    (OUT / "tasks-results.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
