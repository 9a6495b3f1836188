"""A first command over a vault without its index shows the build's progress to a person at a
terminal (stderr), and nothing of it in a pipe or in --json output."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from helpers import child_env, on_a_terminal

from aibuddy_cli import build_progress
from aibuddy_cli.cli.output import BuildProgress
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import CACHE_DIR, Vault

RECORDS = BuildProgress.BIG  # a build this big shows its progress from the start


def many_records(vault: Vault, count: int) -> None:
    folder = vault.root / "memory" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        record = MemoryRecord(
            name=f"note-{number:05d}",
            description=f"Deploy report number {number}",
            type="project",
            body=f"The budget meeting of week {number % 52} moved the deploy.\n",
        )
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")


@pytest.mark.process
def test_a_first_build_shows_progress_on_a_terminal_and_not_in_json(
    vault: Vault, aibuddy_exe: list[str]
) -> None:
    many_records(vault, RECORDS)
    code, out, terminal = on_a_terminal(
        [*aibuddy_exe, "memory", "list", "--json"], child_env(vault.root), stdout=False
    )
    assert code == 0, terminal
    assert "memory index: indexing" in terminal and f"of {RECORDS:,}" in terminal
    assert terminal.rstrip("\r\n").endswith("\x1b[K")  # the line is cleared when the build ends
    assert len(json.loads(out)["records"]) == RECORDS
    assert b"memory index" not in out


@pytest.mark.process
def test_a_first_build_in_a_pipe_shows_no_progress(vault: Vault, aibuddy_exe: list[str]) -> None:
    many_records(vault, RECORDS)
    done = subprocess.run(
        [*aibuddy_exe, "memory", "list"], env=child_env(vault.root), capture_output=True, timeout=120
    )
    assert done.returncode == 0
    assert b"memory index" not in done.stderr and b"\x1b[K" not in done.stderr
    assert b"memory index" not in done.stdout
    assert (vault.root / CACHE_DIR).is_dir()


def test_a_small_build_shows_progress_only_once_it_has_taken_a_second() -> None:
    def clock(*moments: float):  # noqa: ANN202
        return iter(moments).__next__

    terminal = io.StringIO()
    items = range(2 * build_progress.EVERY + 1)  # reported at 0, 100, 200 and at the end
    with build_progress.listening(BuildProgress(terminal, clock=clock(0.0, 0.5, 0.9, 0.95))):
        list(build_progress.steps("memory index: indexing", items))
    assert terminal.getvalue() == ""
    with build_progress.listening(BuildProgress(terminal, clock=clock(0.0, 0.5, 1.2, 1.3))):
        list(build_progress.steps("memory index: indexing", items))
    assert terminal.getvalue() == "\r\x1b[Kmemory index: indexing: 200 of 201\r\x1b[K"
