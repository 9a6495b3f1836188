"""A long-lived server learns what changed in the memory folder from inotify, not from a scan of
every file: whatever changed before a call (another process's save, a person's edit in place, a
deletion, the folder made anew) is in that call's answer, and the server's own telemetry writes
cost it no scan."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import environment

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.settings import Settings
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.store.folder_watch import FolderWatch, further_on
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def watch() -> Any:
    found = FolderWatch()
    yield found
    found.close()


def record_text(name: str, description: str, body: str = "") -> str:
    stamp = "2026-01-01T00:00:00Z"
    record = MemoryRecord(
        name=name, description=description, type="user", body=body, created=stamp, updated=stamp
    )
    return render_record(record)


def test_a_watch_names_what_changed_since_its_cursor(tmp_path: Path, watch: FolderWatch) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    first = watch.changes(folder, [])
    assert first.cursor is not None and first.names is None  # before the watch: unknown, scan
    (folder / "a.md").write_text("a")
    (folder / ".aibuddy-tmp-1-x").write_text("temp")  # hidden: never listed, never named
    (folder / "sub").mkdir()
    second = watch.changes(folder, [first.cursor])
    assert second.names == {"a.md"}
    os.replace(folder / "a.md", folder / "b.md")
    third = watch.changes(folder, ["other.0.0", second.cursor])  # another watch's cursor is ignored
    assert third.names == {"a.md", "b.md"}
    assert watch.changes(folder, [third.cursor]).names == frozenset()
    assert watch.changes(folder, ["other.0.0"]).names is None  # only another's: unknown
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / "c.md").write_text("c")
    assert watch.changes(folder, [third.cursor]).names is None  # the folder went: scan the new one
    assert watch.changes(tmp_path / "missing", []) == (None, None)


def test_a_store_without_a_watch_always_says_scan(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    assert FileStore(tmp_path, tmp_path / "locks").changes("memory", []) == (None, None)


def test_a_write_where_the_watch_answered_does_not_list_the_folder(
    tmp_path: Path, watch: FolderWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of 100,000 records costs 70 ms to list: a process the watch told what changed
    writes there without listing it for killed writers' temp files (the next walk sweeps them)."""
    (tmp_path / "memory").mkdir()
    store = FileStore(tmp_path, tmp_path / "locks", watch)
    first = store.changes("memory", [])
    assert store.changes("memory", [first.cursor]).names == frozenset()
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": listed.append(str(path)) or real(path))
    store.write("memory/a.md", b"a")
    assert str(tmp_path / "memory") not in listed
    monkeypatch.undo()
    stale = tmp_path / "memory" / ".aibuddy-tmp-999999999-x"
    stale.write_text("left by a killed writer")
    os.utime(stale, (1, 1))
    walker = FileStore(tmp_path, tmp_path / "locks")
    walker.scan("memory", ".md")
    walker.write("memory/b.md", b"b")
    assert not stale.exists()


class CountedScans:
    """FileStore.scan, counting the scans of one user's memory folder."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        scan = FileStore.scan

        def counted(store: FileStore, prefix: str, suffix: Any) -> Any:
            if prefix == "memory/demo":
                self.count += 1
            return scan(store, prefix, suffix)

        monkeypatch.setattr(FileStore, "scan", counted)


def test_every_change_reaches_the_next_recall_without_a_scan(
    vault: Vault, env: dict[str, str], watch: FolderWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aibuddy_cli.mcp.server import Server
    from aibuddy_cli.operations.registry import find

    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True)
    for i in range(30):
        (folder / f"filler-{i}.md").write_text(record_text(f"filler-{i}", f"Filler note {i}"))
    scans = CountedScans(monkeypatch)
    with environment(env):
        server = Server(str(vault.root), "demo", None, Settings.read(), vault.root, watch=watch)
        recall = server.tool(find("memory recall"))

        def names(query: str) -> list[str]:
            result = recall(query=query)
            assert not result.is_error, result.content
            return [record["name"] for record in json.loads(result.content[0].text)["records"]]

        assert names("filler note") and scans.count == 1  # the first look scans once
        before = scans.count
        for _ in range(3):  # its own telemetry writes: no scan
            names("filler note")
        # Another process saves a record.
        (folder / "espresso.md").write_text(record_text("espresso", "Drinks espresso every morning"))
        assert names("espresso morning") == ["espresso"]
        # A person edits one in place (same inode, no rename).
        with open(folder / "filler-3.md", "r+", encoding="utf-8") as handle:
            text = handle.read().replace("Filler note 3", "Loves sourdough bread")
            handle.seek(0)
            handle.write(text)
            handle.truncate()
        assert names("sourdough bread") == ["filler-3"]
        (folder / "espresso.md").unlink()
        assert names("espresso morning") == []
        assert scans.count == before  # none of that needed a scan of the folder
        # The folder deleted and made again: unknown to the watch, so scanned once.
        shutil.rmtree(folder)
        folder.mkdir()
        (folder / "tea.md").write_text(record_text("tea", "Green tea in the afternoon"))
        assert names("green tea") == ["tea"]
        assert names("filler note") == []
        assert scans.count == before + 1


@pytest.mark.process
def test_a_real_server_sees_a_save_from_another_process_at_its_next_call(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str]
) -> None:
    from mcp import Client, StdioServerParameters

    def recalled(result: Any) -> list[str]:
        assert not result.is_error, result.content
        return [record["name"] for record in json.loads(result.content[0].text)["records"]]

    async def main() -> None:
        command, *args = aibuddy_exe
        params = StdioServerParameters(command=command, args=[*args, "mcp"], env=env)
        async with Client(params) as client:
            assert recalled(await client.call_tool("memory_recall", {"query": "standup"})) == []
            saved = subprocess.run(
                [*aibuddy_exe, "memory", "save", "standup", "--type", "project",
                 "--description", "Daily standup at 9:30"],
                env=env, capture_output=True, check=False,
            )  # fmt: skip
            assert saved.returncode == 0, saved.stderr
            assert recalled(await client.call_tool("memory_recall", {"query": "standup"})) == ["standup"]

    asyncio.run(main())


def test_an_index_keeps_the_cursor_furthest_on_of_each_watch(vault: Vault) -> None:
    """Two threads of a server bring one index up to date: the one that finishes last with an
    older cursor does not set it back (the next look would show those files changed again)."""
    assert further_on("w.2.10", "w.2.9") and not further_on("w.2.9", "w.2.10")
    assert not further_on("w.3.1", "w.2.10")  # another epoch: the newer one is kept
    assert not further_on("v.2.10", "w.2.9")  # another watch
    index = Session(vault, "demo", environ={}).memory.index()
    with index.write():
        index._keep_cursor("w.2.10")
        index._keep_cursor("w.2.9")
    assert index.cursors() == ["w.2.10"]
    with index.write():
        index._keep_cursor("w.3.1")
    assert index.cursors() == ["w.3.1"]
