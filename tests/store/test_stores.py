"""The Store protocol is the whole contract between the services and the vault's files: its
behaviour, and the services' behaviour, are the same on the filesystem store and on a second,
in-memory implementation."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from memory_store import MemoryStore

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import Busy, Conflict, InvalidInput, NotFound
from aibuddy_cli.store.files import FileStore, Store
from aibuddy_cli.tasks.service import TaskService
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.process  # every test here starts a process or a server


@pytest.fixture(params=["file", "memory", "postgres"])
def store(request: pytest.FixtureRequest, vault: Vault) -> Store:
    if request.param == "file":
        return FileStore(vault.root, vault.locks_dir())
    if request.param == "postgres":
        from aibuddy_cli.store.postgres import PgStore

        return PgStore(request.getfixturevalue("postgres_url"))
    return MemoryStore()


# --- the protocol ------------------------------------------------------------------------


def test_write_read_stat_and_create(store: Store) -> None:
    entry = store.write("memory/demo/tea.md", b"one")
    data, read_entry = store.read("memory/demo/tea.md")
    assert data == b"one" and read_entry.size == 3 and store.stat("memory/demo/tea.md") == entry
    again = store.write("memory/demo/tea.md", b"two!")
    assert again.signature != entry.signature  # an edit is noticed by the indexes
    with pytest.raises(Conflict):
        store.write("memory/demo/tea.md", b"x", create=True)
    with pytest.raises(NotFound):
        store.read("memory/demo/none.md")
    with pytest.raises(InvalidInput):
        store.read("memory/demo")  # a folder
    for bad in ("../escape.md", "/etc/passwd", "memory//x.md", "memory/./x.md"):
        with pytest.raises(InvalidInput):
            store.write(bad, b"x")


def test_scan_and_folders_see_one_level_without_hidden_names(store: Store) -> None:
    for key in ("tasks/demo/t1/task.json", "tasks/demo/t2/task.json", "tasks/demo/.hidden/task.json"):
        store.write(key, b"{}")
    store.write("memory/demo/a.md", b"a")
    store.write("memory/demo/b.txt", b"b")
    store.write("memory/demo/.c.md", b"c")
    store.write("memory/demo/sub/d.md", b"d")
    assert [e.name for e in store.scan("memory/demo", ".md")] == ["a.md"]
    assert sorted(e.name for e in store.scan("memory/demo", (".md", ".txt"))) == ["a.md", "b.txt"]
    assert store.scan("memory/nobody", ".md") == []
    assert store.folders("tasks/demo") == ["t1", "t2"] and store.folders("tasks/nobody") == []


def test_walk_lists_every_file_under_a_folder_at_any_depth(store: Store) -> None:
    """What `store copy` reads: hidden names included (a folder's .gitkeep), nothing outside."""
    for key in ("tasks/.gitkeep", "tasks/demo/t1/task.json", "tasks/demo/t1/messages.jsonl", "tables/x.csv"):
        store.write(key, b"{}")
    assert store.walk("tasks") == [  # type: ignore[attr-defined]
        "tasks/.gitkeep",
        "tasks/demo/t1/messages.jsonl",
        "tasks/demo/t1/task.json",
    ]
    assert store.walk("memory") == []  # type: ignore[attr-defined]


def test_move_replace_delete_and_append(store: Store) -> None:
    store.write("k/a.md", b"a")
    store.write("k/b.md", b"b")
    with pytest.raises(Conflict):
        store.move("k/a.md", "k/b.md")
    store.replace("k/a.md", "k/b.md")
    assert store.read("k/b.md")[0] == b"a" and not store.exists("k/a.md")
    store.move("k/b.md", "k/c.md")
    with pytest.raises(NotFound):
        store.move("k/b.md", "k/d.md")
    store.delete("k/c.md")
    with pytest.raises(NotFound):
        store.delete("k/c.md")
    store.append(".aibuddy/logs/x.jsonl", b"1\n")
    store.append(".aibuddy/logs/x.jsonl", b"2\n")
    assert store.read(".aibuddy/logs/x.jsonl")[0] == b"1\n2\n"


@pytest.mark.parametrize(
    "operation",
    [
        pytest.param(lambda store: store.write("memory/demo", b"x"), id="write"),
        pytest.param(lambda store: store.write("memory/demo", b"x", create=True), id="write-create"),
        pytest.param(lambda store: store.append("memory/demo", b"x\n"), id="append"),
        pytest.param(lambda store: store.move("memory/other.md", "memory/demo"), id="move"),
        pytest.param(lambda store: store.replace("memory/other.md", "memory/demo"), id="replace"),
        pytest.param(lambda store: store.write("memory/demo/tea.md/x.md", b"x"), id="write-under-a-file"),
        pytest.param(lambda store: store.append("memory/demo/tea.md/x.md", b"x"), id="append-under-a-file"),
    ],
)
def test_no_file_is_made_where_a_folder_is_or_under_a_file(store: Store, operation: Any) -> None:
    """As a file system refuses it: otherwise one key would be a file and a folder at once."""
    store.write("memory/demo/tea.md", b"tea")
    store.write("memory/other.md", b"other")
    with pytest.raises((OSError, InvalidInput, Conflict)):
        operation(store)
    assert store.folders("memory") == ["demo"] and store.read("memory/demo/tea.md")[0] == b"tea"
    assert store.read("memory/other.md")[0] == b"other"
    with pytest.raises(InvalidInput):
        store.read("memory/demo")  # still a folder


def test_a_file_moved_or_replaced_onto_itself(store: Store) -> None:
    store.write("k/a.md", b"a")
    store.replace("k/a.md", "k/a.md")
    assert store.read("k/a.md")[0] == b"a"
    with pytest.raises(Conflict):
        store.move("k/a.md", "k/a.md")
    assert store.read("k/a.md")[0] == b"a"
    with pytest.raises(NotFound):
        store.replace("k/none.md", "k/none.md")


def test_read_many_answers_what_read_would_and_leaves_out_the_rest(store: Store) -> None:
    store.write("memory/demo/a.md", b"a")
    store.write("memory/demo/b.md", b"bb")
    store.write("memory/demo/folder.md/inside.md", b"x")  # a folder named like a record
    asked = ["memory/demo/a.md", "memory/demo/b.md", "memory/demo/gone.md", "memory/demo/folder.md"]
    found = store.read_many(asked)
    assert found == {key: store.read(key) for key in ("memory/demo/a.md", "memory/demo/b.md")}
    assert store.read_many([]) == {}
    with pytest.raises(InvalidInput):
        store.read_many(["../escape.md"])


def test_appends_make_lines_that_writes_moves_and_deletes_carry_or_clear(store: Store) -> None:
    log = "tasks/demo/t1/messages.jsonl"
    store.write(log, b"a")  # a file that does not end a line: the append starts a line of its own
    store.append(log, b"b\n")
    store.append(log, b"c\n")
    data, entry = store.read(log)
    assert data == b"a\nb\nc\n" and entry.size == len(data) and store.stat(log).size == len(data)
    assert [e.size for e in store.scan("tasks/demo/t1", ".jsonl")] == [len(data)]
    store.move(log, "tasks/demo/t1/moved.jsonl")
    assert store.read("tasks/demo/t1/moved.jsonl")[0] == b"a\nb\nc\n"
    store.write(log, b"fresh\n")
    store.replace("tasks/demo/t1/moved.jsonl", log)  # over a file: its lines go with it
    assert store.read(log)[0] == b"a\nb\nc\n"
    store.write(log, b"whole\n")  # a write replaces everything appended before it
    store.append(log, b"d\n")
    assert store.read(log)[0] == b"whole\nd\n"
    store.delete(log)
    store.append(log, b"e\n")  # appending to no file makes one
    assert store.read(log)[0] == b"e\n"


def test_a_held_lock_is_busy_for_others(store: Store) -> None:
    """Another thread of the same process waits until its deadline, then is told busy (exit 4)."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock("memory-demo"):
            held.set()
            release.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(60)
        with pytest.raises(Busy, match="busy") as raised:
            with store.lock("memory-demo", timeout=0.1):
                pass
        assert (raised.value.code, int(raised.value.exit_code)) == ("busy", 4)
    finally:
        release.set()
        thread.join()
    with store.lock("memory-demo", timeout=1):
        pass


# --- the services on either store ----------------------------------------------------------


def test_memory_records_and_recall(store: Store, vault: Vault) -> None:
    memory = Session(vault, "demo", store=store, environ={}).memory
    memory.save("tea", type="user", description="Drinks green tea", body="No sugar.")
    memory.save("deploy", type="project", description="Deploys go through staging", body="Always.")
    memory.update("tea", body="One sugar.")
    assert memory.show("tea").body == "One sugar." and memory.show("tea").provenance == "manual"
    result = memory.recall("green tea")
    assert [r.name for r in result.records] == ["tea"] and result.records[0].recall_count == 1
    assert b"recallCount: 1" in store.read("memory/demo/tea.md")[0]
    store.write("memory/demo/coffee.md", store.read("memory/demo/tea.md")[0].replace(b"tea", b"coffee"))
    assert sorted(item.record.name for item in memory.list_records().records) == ["coffee", "deploy", "tea"]
    memory.delete("deploy")
    with pytest.raises(NotFound):
        memory.show("deploy")
    assert Session(vault, "alice", store=store, environ={}).memory.recall("green tea").records == []


def test_documents_tasks_and_messages(store: Store, vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "guide.md"
    source.write_text("# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback`.\n")
    knowledge = Session(vault, "demo", store=store, environ={}).knowledge
    (doc,) = [o.doc for o in knowledge.import_paths([str(source)], scope="system")]
    assert store.exists("knowledge/system/pending/guide.md")
    knowledge.publish(doc)
    assert store.read("knowledge/system/ready/guide.md")[0] == source.read_bytes()
    tasks = TaskService(vault, "demo", store=store, warnings=[])
    task = tasks.new("Roll back")
    tasks.set_attached(task.id, {doc: True})
    tasks.add_message(task.id, "user", "How do I roll back?")
    assert [m.attached for m in tasks.messages(task.id)] == [[doc]]
    hits = knowledge.search("rollback", task=task.id)
    assert [(h.hit.ref.qualified, h.hit.anchor) for h in hits] == [(doc, "rollback")]
    page = knowledge.read(doc, "rollback", task=task.id)
    assert "deployctl rollback" in page.text
    entries, unavailable = knowledge.map(task.id)
    assert [e.ref.qualified for e in entries] == [doc] and unavailable == []
    # An edit behind the tool's back sends the document back to pending, on any store.
    key = "knowledge/system/ready/guide.md"
    store.write(key, store.read(key)[0] + b"\nMore.\n")
    assert Session(vault, "demo", store=store, environ={}).knowledge.search("rollback", task=task.id) == []
