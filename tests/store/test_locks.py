"""Many writers at once: threads of one process and separate processes all land, each row with a
key of its own; a writer waits for a lock another process holds (the kernel wakes it, nothing
polls) and goes on when it is let go, or says "busy" at its deadline; a server's recall answers
while a save holds the user's lock."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import CODE, wait_for, write_record_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.mcp.server import Server
from aibuddy_cli.memory import service as memory_service
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.operations.registry import Operation
from aibuddy_cli.settings import Settings
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.store.locks import WriteBehind
from aibuddy_cli.vault import Vault

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # held until the test closes stdin
"""

ADDER = """
import sys
from pathlib import Path
from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault
session = Session(Vault.open(Path(sys.argv[1])), "demo", environ={})
for n in range(int(sys.argv[3])):
    session.tables.changes.add_rows("load", [{"who": sys.argv[2], "n": n}])
"""


def hold(lock_file: Path) -> subprocess.Popen[bytes]:
    """Another process holding the lock at lock_file until its stdin is closed."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
    return holder


def let_go(holder: subprocess.Popen[bytes]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=120)


def rows(vault: Vault) -> list[dict[str, str]]:
    (table,) = vault.root.glob("tables/**/load.csv")
    with table.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def table(vault: Vault) -> Vault:
    Session(vault, "demo", environ={}).tables.changes.create("load")
    return vault


def test_rows_added_from_many_threads_all_land_with_keys_of_their_own(table: Vault) -> None:
    def add(who: int) -> None:
        session = Session(table, "demo", environ={})  # a session per thread, as the server keeps them
        for n in range(5):
            session.tables.changes.add_rows("load", [{"who": who, "n": n}])
        session.memory.save(f"note-{who}", type="project", description=f"note {who}", body="x")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(add, range(8)))
    added = rows(table)
    assert sorted((int(row["who"]), int(row["n"])) for row in added) == [
        (w, n) for w in range(8) for n in range(5)
    ]
    keys = [row["row_id"] for row in added]
    assert len(set(keys)) == len(keys) == 40
    assert sorted(p.stem for p in (table.root / "memory" / "demo").glob("note-*.md")) == [
        f"note-{w}" for w in range(8)
    ]


@pytest.mark.process
def test_rows_added_from_two_processes_all_land_with_keys_of_their_own(table: Vault) -> None:
    env = {**os.environ, "PYTHONPATH": str(CODE)}
    adders = [
        subprocess.Popen(
            [sys.executable, "-c", ADDER, str(table.root), who, "15"], env=env, stderr=subprocess.PIPE
        )
        for who in ("a", "b")
    ]
    for adder in adders:
        _, err = adder.communicate(timeout=300)
        assert adder.returncode == 0, err.decode()
    added = rows(table)
    assert sorted((row["who"], int(row["n"])) for row in added) == [(w, n) for w in "ab" for n in range(15)]
    keys = [row["row_id"] for row in added]
    assert len(set(keys)) == len(keys) == 30


def waiting_on(lock_file: Path) -> bool:
    """Whether some process waits in the kernel for the flock on lock_file (/proc/locks lists a
    blocked request with "->")."""
    inode = f":{os.stat(lock_file).st_ino} "
    return any("->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines())


@pytest.mark.process
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs /proc/locks (Linux) to see a waiter")
def test_a_writer_waits_for_a_lock_another_process_holds_and_goes_on_when_it_is_let_go(vault: Vault) -> None:
    store = FileStore(vault.root, vault.locks_dir())
    holder = hold(vault.locks_dir() / "tables.lock")
    got = threading.Event()

    def write() -> None:
        with store.lock("tables", timeout=300):
            got.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        # It waits in the kernel for the lock, not in a loop of tries and sleeps.
        assert wait_for(lambda: waiting_on(vault.locks_dir() / "tables.lock"))
        assert not got.is_set()
    finally:
        let_go(holder)
    assert got.wait(120)
    writer.join(120)


def tea_and_a_server(vault: Vault) -> tuple[MemoryService, Server, Operation]:
    """demo's memory holding one record, a server on the vault, and its memory_recall tool."""
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    server = Server(str(vault.root), "demo", None, Settings.read({}), vault.root)
    (recall,) = [op for op in server.operations() if op.tools["mcp"] == "memory_recall"]
    return memory, server, recall


@pytest.mark.process
def test_a_servers_recall_answers_while_a_save_holds_the_lock_and_counts_once_it_is_let_go(
    vault: Vault,
) -> None:
    memory, server, recall = tea_and_a_server(vault)
    holder = hold(vault.locks_dir() / "memory-demo.lock")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            answer = pool.submit(server.run_tool, recall, {"query": "green tea"}).result(timeout=300)
        document = json.loads(answer.content[0].text)
        assert [(r["name"], r["recallCount"]) for r in document["records"]] == [("tea", 1)]
        assert document["warnings"] == []  # not "busy; recall telemetry not updated"
        assert memory.show("tea").recall_count == 0  # written once the lock is let go
    finally:
        let_go(holder)
    assert server.write_behind.drain(120)
    assert memory.show("tea").recall_count == 1


@pytest.mark.process
def test_recalls_answered_while_a_save_holds_the_lock_are_all_counted_and_the_index_told(
    vault: Vault,
) -> None:
    """Two recalls answered while the lock is held: both counted in one write once it is let go,
    and the index learns that write from the write-behind thread itself (it failed silently on
    the answering thread's SQLite handle: every later question read the file again as a hand edit)."""
    memory, server, recall = tea_and_a_server(vault)
    holder = hold(vault.locks_dir() / "memory-demo.lock")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            for _ in range(2):
                pool.submit(server.run_tool, recall, {"query": "green tea"}).result(timeout=300)
    finally:
        let_go(holder)
    assert server.write_behind.drain(120)
    file = os.stat(vault.root / "memory" / "demo" / "tea.md")
    index = sqlite3.connect(vault.memory_index_path("demo"))
    try:
        row = index.execute("SELECT mtime_ns, ctime_ns, size FROM records WHERE name = 'tea'").fetchone()
    finally:
        index.close()
    assert row == (file.st_mtime_ns, file.st_ctime_ns, file.st_size)
    assert memory.show("tea").recall_count == 2


@pytest.mark.process
def test_a_recall_while_counts_are_on_their_way_goes_with_them(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts wait a moment for more (under many agents, one write of a file for many recalls): a
    recall answered while some are due adds its own to them rather than writing the file again,
    and a stopping server's drain writes them all without waiting out that moment."""
    monkeypatch.setattr(memory_service, "_RECALLS_LINGER", 3600.0)
    memory, server, recall = tea_and_a_server(vault)
    holder = hold(vault.locks_dir() / "memory-demo.lock")
    try:  # the first recall finds the lock held: its count is due
        server.run_tool(recall, {"query": "green tea"})
    finally:
        let_go(holder)
    answer = server.run_tool(recall, {"query": "green tea"})  # the lock is free now
    assert [r["name"] for r in json.loads(answer.content[0].text)["records"]] == ["tea"]
    assert memory.show("tea").recall_count == 0  # not written on its own
    assert server.write_behind.drain(120)
    assert memory.show("tea").recall_count == 2


def test_drain_runs_a_lingering_job_at_once() -> None:
    ran = threading.Event()
    writes = WriteBehind(lambda error: None)
    writes.submit(ran.set, linger=3600.0)
    assert writes.drain(120)
    assert ran.is_set()


def test_a_refresh_that_read_a_file_before_this_process_wrote_it_keeps_the_writers_row(vault: Vault) -> None:
    """Threads of a server: one refreshes the index from what it read, another writes the record
    and tells the index meanwhile. The refresh, finishing last, must not put back what it read."""
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    index = memory.index()
    ticket = index.ticket()  # the refresh begins: it reads the file as it is now
    key = "memory/demo/tea.md"
    stale_entry = memory.store.stat(key)
    stale = (stale_entry, memory.show("tea"), None)
    memory.update("tea", description="Drinks black tea now")  # written and told meanwhile
    index.refresh_changed([stale_entry], ["tea"], lambda entry: stale, "cursor.1.1", ticket)
    file = memory.store.stat(key)
    row = index.db.execute("SELECT mtime_ns, ctime_ns, size, description FROM records WHERE name = 'tea'")
    assert row.fetchone() == (file.mtime_ns, file.ctime_ns, file.size, "Drinks black tea now")


def test_a_hand_edit_made_while_this_process_writes_the_record_is_looked_at_again(vault: Vault) -> None:
    """A refresh on another thread leaves a record this process is writing to the writer; should
    an editor have changed the file meanwhile, the writer sees it at the end and the next refresh
    compares every file (the cursors go), instead of the edit staying out of the index."""
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    index = memory.index()
    with index.writing(["tea"], memory._stat):
        ticket = index.ticket()
        edited = "---\nname: tea\ndescription: Drinks black tea now\ntype: user\n---\ntea\n"
        write_record_file(vault, "tea", edited)
        index.refresh_changed([memory._stat("tea")], ["tea"], lambda entry: None, "w.1.5", ticket)
    assert index.cursors() == []


def test_a_refresh_older_than_the_writes_a_process_remembers_reads_again_and_keeps_no_cursor(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process remembers its latest writes only (WRITTEN_KEPT): a refresh that began before the
    ones it forgot cannot tell which rows are later than what it read, so it brings them in line
    from what it read and does not keep its cursor (the next refresh looks at them again)."""
    from aibuddy_cli.memory import index as memory_index

    monkeypatch.setattr(memory_index, "WRITTEN_KEPT", 1)
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="tea")
    index = memory.index()
    ticket = index.ticket()
    hand = "---\nname: tea\ndescription: Drinks black tea now\ntype: user\n---\ntea\n"
    write_record_file(vault, "tea", hand)  # what the refresh reads
    read = (memory._stat("tea"), memory.show("tea"), None)
    for name in ("coffee", "cocoa"):  # written since: the first is forgotten
        memory.save(name, type="user", description=f"Drinks {name}", body=name)
    index.refresh_changed([read[0]], ["tea"], lambda entry: read, "w.1.7", ticket)
    row = index.db.execute("SELECT description FROM records WHERE name = 'tea'").fetchone()
    assert row == ("Drinks black tea now",) and index.cursors() == []
