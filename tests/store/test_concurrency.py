"""The tool as real processes running at once: saves and recalls from twenty processes lose nothing
and leave no temporary files; temp files of a write killed mid-way are cleaned up by the next
write to their folder, never those of a writer still at work."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import CODE, run_aibuddy

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.store.files import TEMP_PREFIX
from aibuddy_cli.vault import Vault


@pytest.mark.process
def test_a_real_process_saves_and_recalls(aibuddy_exe: list[str], env: dict[str, str]) -> None:
    saved = run_aibuddy(
        aibuddy_exe,
        "memory",
        "save",
        "zh-report",
        "-t",
        "feedback",
        "-d",
        "周报要简洁",
        "--body-file",
        "-",
        env=env,
        input="周报格式：三段式\n".encode(),
    )
    assert saved.returncode == 0, saved.stderr
    recalled = run_aibuddy(aibuddy_exe, "memory", "recall", "周报格式", "--json", env=env)
    assert recalled.returncode == 0, recalled.stderr
    document = json.loads(recalled.stdout)
    assert document["method"] == "words+meaning"  # a Chinese question: its characters (ngrams.py)
    assert document["records"][0]["body"] == "周报格式：三段式\n"
    missing = run_aibuddy(aibuddy_exe, "memory", "show", "nope", "--json", env=env)
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "not_found"


@pytest.mark.process
def test_twenty_concurrent_saves_leave_twenty_intact_records(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    def save(i: int) -> subprocess.CompletedProcess[bytes]:
        return run_aibuddy(
            aibuddy_exe,
            "memory",
            "save",
            f"note-{i:02d}",
            "-t",
            "project",
            "-d",
            f"Concurrent note {i}",
            "--body",
            f"body {i}\n",
            env=env,
        )

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(save, range(20)))
    assert [r.returncode for r in results] == [0] * 20, [r.stderr for r in results]
    folder = vault.root / "memory" / "demo"
    assert sorted(p.name for p in folder.iterdir()) == [f"note-{i:02d}.md" for i in range(20)]
    memory = Session(vault, "demo", environ={}).memory
    for i in range(20):
        assert memory.show(f"note-{i:02d}").body == f"body {i}\n"
    assert not [p for p in vault.root.rglob(f"{TEMP_PREFIX}*")]


@pytest.mark.process
def test_twenty_concurrent_recalls_lose_no_update(
    aibuddy_exe: list[str], env: dict[str, str], vault: Vault
) -> None:
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")

    def recall(_: int) -> subprocess.CompletedProcess[bytes]:
        return run_aibuddy(aibuddy_exe, "memory", "recall", "green tea", "--json", env=env)

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(recall, range(20)))
    assert [r.returncode for r in results] == [0] * 20, [r.stderr for r in results]
    assert memory.show("tea").recall_count == 20
    assert not [p for p in vault.root.rglob(f"{TEMP_PREFIX}*")]


# --- temp files of killed writes --------------------------------------------------------------

HANGING_WRITER = """
import os, sys
from pathlib import Path
from aibuddy_cli.store import files
os.fsync = lambda fd: sys.stdin.read()  # stop mid-write until killed (or the test's end closes stdin)
files.atomic_write(Path(sys.argv[1]), b"half written")
"""


def hanging_writer(target: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A real aibuddy write stopped in the middle; returns the process and its temp file."""
    env = {**os.environ, "PYTHONPATH": str(CODE)}
    command = [sys.executable, "-c", HANGING_WRITER, str(target)]
    writer = subprocess.Popen(command, env=env, stdin=subprocess.PIPE)
    deadline = time.monotonic() + 120  # generous: an event, not a timing
    while time.monotonic() < deadline:
        temps = list(target.parent.glob(f"{TEMP_PREFIX}{writer.pid}-*"))
        if temps:
            return writer, temps[0]
        assert writer.poll() is None, "the writer ended early"
        time.sleep(0.01)
    writer.kill()
    raise AssertionError("the writer never created its temp file")


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def reports(vault: Vault) -> Vault:
    """Three records about the weekly report, in memory/demo."""
    memory = Session(vault, "demo", environ={}).memory
    memory.save("report-style", type="feedback", description="Weekly report has three sections", body="Done.")
    memory.save("report-day", type="project", description="The weekly report is due on Friday", body="Fri")
    memory.save("report-tone", type="feedback", description="Keep the weekly report short", body="Brief.")
    del memory
    gc.collect()  # this process's index connections closed: the vault's files are settled
    return vault


@pytest.mark.process
@pytest.mark.parametrize(
    "next_write",
    [
        lambda memory: memory.save("another", type="user", description="another", body="x"),
        lambda memory: memory.recall("weekly report"),  # telemetry writes into the same folder
    ],
    ids=["save", "recall"],
)
def test_the_next_write_to_a_folder_removes_temp_files_of_killed_writes(
    reports: Vault, next_write: Callable[[MemoryService], Any]
) -> None:
    folder = reports.root / "memory" / "demo"
    killed, killed_temp = hanging_writer(folder / "report-day.md")
    live, live_temp = hanging_writer(folder / "report-tone.md")
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        age(killed_temp, 10)  # a moment later
        age(live_temp, 10)  # a slow writer, still at work
        forgotten = folder / f"{TEMP_PREFIX}{os.getpid()}-0123456789ab"
        forgotten.write_bytes(b"left two minutes ago by a process whose pid is now reused")
        age(forgotten, 120)
        next_write(Session(reports, "demo", environ={}).memory)
        assert not killed_temp.exists() and not forgotten.exists()
        assert live_temp.exists()  # a concurrent writer's temp file is never taken away
    finally:
        live.kill()
        live.wait()
        live_temp.unlink(missing_ok=True)
    assert not list(folder.glob(f"{TEMP_PREFIX}*"))


@pytest.mark.process
def test_a_real_save_cleans_up_after_a_killed_one(
    aibuddy_exe: list[str], reports: Vault, env: dict[str, str]
) -> None:
    folder = reports.root / "memory" / "demo"
    killed, temp = hanging_writer(folder / "report-day.md")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    age(temp, 10)
    args = ["memory", "save", "another", "--type", "user", "--description", "another", "--body", "x"]
    result = run_aibuddy(aibuddy_exe, *args, env=env)
    assert result.returncode == 0, result.stderr
    assert not temp.exists()
    assert (folder / "report-day.md").read_text().endswith("Fri")


def test_threads_opening_a_new_index_at_once_all_get_it(tmp_path: Path) -> None:
    """A warm MCP server's worker threads open the index of a fresh host together: none is told
    "busy" (switching the new file to WAL waits for no one; it used to fail a call now and then)."""
    import threading

    from aibuddy_cli.memory.index import MemoryIndex

    failures: list[str] = []
    for round_ in range(20):
        path = tmp_path / f"index-{round_}.sqlite"
        start = threading.Barrier(12)

        def open_and_write(path: Path = path, start: threading.Barrier = start) -> None:
            try:
                start.wait(timeout=60)
                index = MemoryIndex(path)
                with index.write():
                    index.cursors()
                index.close()
            except Exception as error:  # noqa: BLE001 - every failure is the finding
                failures.append(repr(error))

        threads = [threading.Thread(target=open_and_write) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert failures == []
    index = MemoryIndex(tmp_path / "index-0.sqlite")  # a later open makes it WAL if no one could
    assert index.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    index.close()
