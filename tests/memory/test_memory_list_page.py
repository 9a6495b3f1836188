"""`memory list` of a big vault: a person at a terminal sees the newest 50 records and how many
more there are (`--all`: every one); a pipe and `--json` get every record by name, as scripts
expect, unless `--limit N` asks for the newest N."""

from __future__ import annotations

import json

import pytest
from helpers import child_env, on_a_terminal, run_in_process

from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault

RECORDS = 60


def dated_records(vault: Vault) -> list[str]:
    """RECORDS records written a day apart; their names, newest first."""
    folder = vault.root / "memory" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for number in range(RECORDS):
        day = f"2026-{1 + number // 28:02d}-{1 + number % 28:02d}T10:00:00Z"
        record = MemoryRecord(
            name=f"n{(number * 37) % RECORDS:02d}-{number:02d}",  # names not in date order
            description=f"Note {number}",
            type="project",
            body="",
            created=day,
            updated=day,
        )
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
        names.append(record.name)
    return names[::-1]


@pytest.mark.process
def test_a_terminal_shows_the_newest_fifty_and_how_many_more(vault: Vault, aibuddy_exe: list[str]) -> None:
    newest = dated_records(vault)
    env = {**child_env(vault.root), "COLUMNS": "200"}
    code, _, shown = on_a_terminal([*aibuddy_exe, "memory", "list"], env)
    assert code == 0, shown
    assert f"the newest 50 of {RECORDS} memory record(s)" in shown
    assert f"… {RECORDS - 50} more record(s) not listed: --all lists every one" in shown
    assert newest[0] in shown and newest[49] in shown and newest[50] not in shown
    assert shown.index(newest[0]) < shown.index(newest[1]) < shown.index(newest[49])  # newest first
    code, _, shown = on_a_terminal([*aibuddy_exe, "memory", "list", "--all"], env)
    assert code == 0 and f"{RECORDS} memory record(s)" in shown and "more record(s)" not in shown
    assert all(name in shown for name in newest)


def test_a_pipe_and_json_get_every_record_by_name(vault: Vault) -> None:
    newest = dated_records(vault)
    env = child_env(vault.root)
    done = run_in_process("memory", "list", env=env)
    assert done.returncode == 0 and b"more record(s)" not in done.stderr
    assert [line.split("\t")[0] for line in done.stdout.decode().splitlines()] == sorted(newest)
    document = json.loads(run_in_process("memory", "list", "--json", env=env).stdout)
    assert [record["name"] for record in document["records"]] == sorted(newest)


def test_limit_lists_the_newest_n_and_says_how_many_more(vault: Vault) -> None:
    newest = dated_records(vault)
    env = child_env(vault.root)
    done = run_in_process("memory", "list", "--limit", "3", env=env)
    assert [line.split("\t")[0] for line in done.stdout.decode().splitlines()] == newest[:3]
    assert f"… {RECORDS - 3} more record(s) not listed" in done.stderr.decode()
    done = run_in_process("memory", "list", "--json", "-n", "3", env=env)
    document = json.loads(done.stdout)
    assert [record["name"] for record in document["records"]] == newest[:3]
    assert set(document) == {"user", "records", "problems"}  # the same JSON, only shorter
    assert run_in_process("memory", "list", "--limit", "0", env=env).returncode == 2
