"""Vaults in unusual places: read-only, on a full disk, refusing locks; busy versus not busy.

Real conditions where the machine allows them (a read-only bind mount, a small tmpfs: root
only, skipped with the reason otherwise), fault injection (OSError with EROFS/ENOSPC, a real
SQLite "disk is full", a real SQL error) everywhere.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import BODY, child_env, run_in_process
from typer.testing import CliRunner

from aibuddy_cli import errors
from aibuddy_cli.app.session import Session
from aibuddy_cli.cli.app import app
from aibuddy_cli.memory.index import MemoryIndex
from aibuddy_cli.store.cache_db import CacheDB
from aibuddy_cli.store.files import TEMP_PREFIX, FileStore
from aibuddy_cli.vault import CACHE_DIR, Vault

# --- helpers ------------------------------------------------------------------------------


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes: "nothing was written" is this staying equal."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def process_env(vault_root: Path, cache_home: Path) -> dict[str, str]:
    return child_env(vault_root, XDG_CACHE_HOME=str(cache_home))


def warnings_in(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith("warning:")]


def cached_indexes(cache_home: Path) -> list[str]:
    return sorted(p.name for p in (cache_home / "aibuddy").glob("*/index/*.sqlite"))


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, timeout=120)


def _unmount(target: Path) -> None:
    if _run("umount", str(target)).returncode != 0:
        _run("umount", "-l", str(target))


@contextmanager
def mounted(target: Path, *attempts: tuple[str, ...]) -> Iterator[Path]:
    """Run the mount commands in turn (each a mount argument list), skipping the test if this
    machine does not let us; always unmounted afterwards."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("needs root to mount a read-only view or a small tmpfs")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount command here")
    target.mkdir(parents=True, exist_ok=True)
    done = 0
    try:
        for arguments in attempts:
            result = _run("mount", *arguments)
            if result.returncode != 0:
                pytest.skip(f"mounting is not permitted here: {result.stderr.strip() or result.returncode}")
            done += 1
        yield target
    finally:
        if done:
            _unmount(target)


@contextmanager
def read_only_view(source: Path, target: Path) -> Iterator[Path]:
    """source, seen read-only at target (a bind mount remounted ro), as a snapshot or CI checkout."""
    with mounted(target, ("--bind", str(source), str(target)), ("-o", "remount,bind,ro", str(target))):
        probe = target / ".probe"
        try:
            probe.write_text("x")
        except OSError as exc:
            assert exc.errno == errno.EROFS
        else:
            probe.unlink()
            pytest.skip("the bind mount did not become read-only here")
        yield target


def fill(folder: Path) -> None:
    """Use up every byte of the file system folder is on."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1):
            try:
                while True:
                    os.write(fd, b"x" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def stock(vault: Vault) -> Vault:
    """Three records about the weekly report, a published document, a task using it."""
    memory = Session(vault, "demo", environ={}).memory
    memory.save("report-style", type="feedback", description="Weekly report has three sections", body="Done.")
    memory.save("report-day", type="project", description="The weekly report is due on Friday", body="Fri")
    memory.save("report-tone", type="feedback", description="Keep the weekly report short", body="Brief.")
    knowledge = Session(vault, "demo", environ={}).knowledge
    knowledge.publish(*[o.doc for o in knowledge.import_paths([str(BODY)], scope="system")])
    tasks = Session(vault, "demo").tasks
    task = tasks.new("Write the weekly report").id
    tasks.set_attached(task, {"system/body": True})
    runner = CliRunner()
    env = {"AIBUDDY_VAULT": str(vault.root), "AIBUDDY_USER": "demo"}
    result = runner.invoke(
        app, ["task", "add-message", task, "Write the weekly report", "--role", "user"], env=env
    )
    assert result.exit_code == 0, result.output
    del memory, knowledge, tasks
    gc.collect()  # this process's index connections closed: the vault's files are settled
    return vault


@pytest.fixture(scope="module")
def stocked_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stocked vault for the module (an import, a publish, three saves); each test copies it."""
    from aibuddy_cli.vault import init_vault

    return stock(init_vault(tmp_path_factory.mktemp("stocked") / "vault", "demo")).root


@pytest.fixture
def stocked(vault: Vault, stocked_template: Path) -> Vault:
    shutil.rmtree(vault.root)
    shutil.copytree(stocked_template, vault.root, symlinks=True)
    return Vault.open(vault.root)


@pytest.fixture
def cache_home(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache"


@pytest.fixture(params=["checkout", "snapshot"])
def read_only_vault(request: pytest.FixtureRequest, stocked: Vault, tmp_path: Path) -> Iterator[Path]:
    """The stocked vault, read-only: like a CI checkout (no .aibuddy/, git ignores it) or a
    mounted snapshot (its .aibuddy/ with indexes and locks, frozen)."""
    if request.param == "checkout":
        shutil.rmtree(stocked.root / CACHE_DIR)
    else:
        Session(stocked, "demo", environ={}).memory.list_records()  # an index exists in the snapshot
        gc.collect()
    with read_only_view(stocked.root, tmp_path / "ro") as view:
        yield view


# --- a read-only vault ----------------------------------------------------------------------


@pytest.mark.process
def test_recall_in_a_read_only_vault_answers_and_warns_once(
    read_only_vault: Path, stocked: Vault, cache_home: Path
) -> None:
    before = files_of(stocked.root)
    env = process_env(read_only_vault, cache_home)
    result = run_in_process("memory", "recall", "weekly report", "--json", env=env)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert sorted(r["name"] for r in document["records"]) == ["report-day", "report-style", "report-tone"]
    assert all(r["recallCount"] == 0 for r in document["records"])
    (warning,) = warnings_in(result.stderr)  # one, not one per record
    assert "read-only file system" in warning and str(read_only_vault) in warning
    assert result.stderr.decode().count("\n") == 1
    assert files_of(stocked.root) == before
    assert cached_indexes(cache_home) == ["memory-demo.sqlite"]
    again = run_in_process("memory", "recall", "weekly report", "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["records"] == document["records"]


@pytest.mark.process
def test_kb_search_in_a_read_only_vault_answers(
    read_only_vault: Path, stocked: Vault, cache_home: Path
) -> None:
    before = files_of(stocked.root)
    env = process_env(read_only_vault, cache_home)
    result = run_in_process("kb", "search", "request body", "--task", "t1", "--json", env=env)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert hits and {hit["doc"] for hit in hits} == {"system/body"}
    assert result.stderr == b""
    assert files_of(stocked.root) == before
    assert cached_indexes(cache_home) == ["knowledge.sqlite"]


@pytest.mark.process
def test_task_context_in_a_read_only_vault_assembles(
    read_only_vault: Path, stocked: Vault, cache_home: Path
) -> None:
    before = files_of(stocked.root)
    env = process_env(read_only_vault, cache_home)
    result = run_in_process("task", "context", "t1", "weekly report", "--json", env=env)
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)
    assert context["goal"] == "Write the weekly report"
    assert len(context["memories"]["records"]) == 3
    assert [d["doc"] for d in context["documents"]] == ["system/body"]
    assert all(line.startswith("warning:") for line in result.stderr.decode().splitlines())
    assert sum("could not record the recall" in w for w in warnings_in(result.stderr)) == 1
    assert files_of(stocked.root) == before


READ_COMMANDS = [
    ["memory", "list"],
    ["memory", "show", "report-day"],
    ["memory", "manifest", "--query", "weekly"],
    ["kb", "list"],
    ["kb", "search", "request body"],
    ["kb", "read", "body", "results"],
    ["kb", "map", "--task", "t1"],
    ["kb", "outline", "body"],
    ["task", "show", "t1"],
    ["task", "list"],
    ["kb", "ask", "How do I declare a request body?", "--task", "t1"],
]


@pytest.mark.process
def test_every_read_command_works_in_a_read_only_vault(
    read_only_vault: Path, stocked: Vault, cache_home: Path
) -> None:
    before = files_of(stocked.root)
    env = {"AIBUDDY_VAULT": str(read_only_vault), "AIBUDDY_USER": "demo", "XDG_CACHE_HOME": str(cache_home)}
    failed = {}
    for args in READ_COMMANDS:
        result = CliRunner().invoke(app, [*args, "--json"], env=env)
        if result.exit_code != 0 or "error" in result.stderr or not json.loads(result.stdout):
            failed[" ".join(args)] = (result.exit_code, result.stderr)
    assert failed == {}
    assert files_of(stocked.root) == before


@pytest.mark.process
@pytest.mark.parametrize(
    "args",
    [
        ["memory", "save", "new-one", "--type", "user", "--description", "d", "--body", "b"],
        ["memory", "update", "report-day", "--description", "Due on Thursday now"],
        ["task", "new", "Another goal"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_write_to_a_read_only_vault_is_refused_naming_the_path(
    args: list[str], read_only_vault: Path, stocked: Vault, cache_home: Path
) -> None:
    before = files_of(stocked.root)
    result = run_in_process(*args, "--json", env=process_env(read_only_vault, cache_home))
    assert result.returncode == 5, result.stderr  # not allowed here; never "busy, try again" (4)
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "read_only"
    assert "read-only file system" in error["message"] and str(read_only_vault) in error["message"]
    assert "busy" not in error["message"]
    assert result.stderr.decode().splitlines() == [f"error: {error['message']}"]
    assert files_of(stocked.root) == before


@pytest.mark.process
def test_with_no_writable_cache_folder_either_the_index_is_kept_in_memory(
    stocked: Vault, tmp_path: Path
) -> None:
    """A read-only vault and a read-only home: reads still answer (the locks cannot be made
    either, so nothing may be written)."""
    home = tmp_path / "frozen-home"
    (home / "cache").mkdir(parents=True)
    before = files_of(stocked.root)
    with (
        read_only_view(stocked.root, tmp_path / "ro") as view,
        read_only_view(home, tmp_path / "rohome") as ro,
    ):
        env = process_env(view, ro / "cache")
        recall = run_in_process("memory", "recall", "weekly report", "--json", env=env)
        search = run_in_process("kb", "search", "request body", "--json", env=env)
    assert recall.returncode == 0, recall.stderr
    assert len(json.loads(recall.stdout)["records"]) == 3
    assert len(warnings_in(recall.stderr)) == 1
    assert search.returncode == 0 and json.loads(search.stdout)["hits"], search.stderr
    assert files_of(stocked.root) == before and files_of(home) == {}


# --- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def full_vault(tmp_path: Path) -> Iterator[Path]:
    """A stocked vault on a 2 MB tmpfs, then filled to the last byte."""
    from aibuddy_cli.vault import init_vault

    with mounted(
        tmp_path / "small", ("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(tmp_path / "small"))
    ) as disk:
        stock(init_vault(disk / "vault", "demo"))
        fill(disk)
        yield disk / "vault"


@pytest.mark.process
def test_a_save_on_a_full_disk_says_so_and_names_the_path(full_vault: Path, cache_home: Path) -> None:
    before = files_of(full_vault)
    args = ["memory", "save", "new-one", "--type", "user", "--description", "d", "--body", "b", "--json"]
    result = run_in_process(*args, env=process_env(full_vault, cache_home))
    error = json.loads(result.stdout)["error"]
    assert (result.returncode, error["code"]) == (1, "disk_full")
    assert "disk is full" in error["message"]
    assert str(full_vault / "memory" / "demo" / "new-one.md") in error["message"]
    assert "busy" not in error["message"]
    assert files_of(full_vault) == before


@pytest.mark.process
def test_a_recall_on_a_full_disk_answers_with_one_warning(full_vault: Path, cache_home: Path) -> None:
    before = files_of(full_vault)
    env = process_env(full_vault, cache_home)
    result = run_in_process("memory", "recall", "weekly report", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["records"]) == 3
    (warning,) = warnings_in(result.stderr)
    assert "disk is full" in warning and str(full_vault) in warning
    after = files_of(full_vault)
    assert {k: v for k, v in after.items() if CACHE_DIR not in k} == {
        k: v for k, v in before.items() if CACHE_DIR not in k
    }


# --- fault injection: always runs -------------------------------------------------------------

REFUSALS = {
    errno.EROFS: "Read-only file system",
    errno.ENOSPC: "No space left on device",
    errno.EDQUOT: "Disk quota exceeded",
    errno.EACCES: "Permission denied",
}


@pytest.mark.parametrize(
    ("code", "typed", "exit_code", "says"),
    [
        (errno.EROFS, "read_only", 5, "read-only file system"),
        (errno.ENOSPC, "disk_full", 1, "the disk is full"),
        (errno.EDQUOT, "disk_full", 1, "the disk is full"),
        (errno.EACCES, "not_allowed", 5, "Permission denied"),
    ],
    ids=["EROFS", "ENOSPC", "EDQUOT", "EACCES"],
)
def test_os_errors_that_refuse_a_write_get_their_typed_error(
    code: int, typed: str, exit_code: int, says: str
) -> None:
    mapped = errors.as_aibuddy_error(OSError(code, REFUSALS[code], "/v/memory/demo/x.md"))
    assert (mapped.code, int(mapped.exit_code)) == (typed, exit_code)
    assert says in mapped.message and "/v/memory/demo/x.md" in mapped.message


def refuse_temp_files(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The file system refuses to create the temp file of every atomic write."""
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.path.basename(os.fspath(path)).startswith(TEMP_PREFIX):
            raise OSError(code, REFUSALS[code], os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)


@pytest.mark.parametrize(
    ("code", "typed", "exit_code"),
    [(errno.EROFS, "read_only", 5), (errno.ENOSPC, "disk_full", 1)],
    ids=["EROFS", "ENOSPC"],
)
def test_a_refused_save_names_the_record_not_its_temp_file(
    cli, vault: Vault, monkeypatch: pytest.MonkeyPatch, code: int, typed: str, exit_code: int
) -> None:
    refuse_temp_files(monkeypatch, code)
    result = cli("memory", "save", "tea", "--type", "user", "--description", "tea", "--body", "x", "--json")
    error = json.loads(result.stdout)["error"]
    assert (result.exit_code, error["code"]) == (exit_code, typed)
    assert str(vault.root / "memory" / "demo" / "tea.md") in error["message"]
    assert TEMP_PREFIX not in error["message"]


def test_a_write_that_fails_at_fsync_names_the_record(
    cli, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Network file systems report a full disk when the data is flushed."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, REFUSALS[errno.ENOSPC])

    monkeypatch.setattr(os, "fsync", full)
    result = cli("memory", "save", "tea", "--type", "user", "--description", "tea", "--body", "x", "--json")
    error = json.loads(result.stdout)["error"]
    assert (result.exit_code, error["code"]) == (1, "disk_full")
    assert str(vault.root / "memory" / "demo" / "tea.md") in error["message"]
    assert not (vault.root / "memory" / "demo").exists()  # the folder the write made went with it


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC, errno.EACCES], ids=errno.errorcode.get)
def test_recall_skips_telemetry_with_one_warning_when_writes_are_refused(
    stocked: Vault, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    memory = Session(stocked, "demo", environ={}).memory
    memory.list_records()  # the index is current: only the telemetry writes remain
    before = files_of(stocked.root / "memory")
    refuse_temp_files(monkeypatch, code)
    result = memory.recall("weekly report")
    assert len(result.records) == 3
    assert all(record.recall_count == 0 for record in result.records)
    (warning,) = result.warnings
    assert REFUSALS[code].lower() in warning.lower() or "disk is full" in warning
    assert files_of(stocked.root / "memory") == before


def test_reads_index_in_the_user_cache_folder_when_aibuddy_dir_cannot_be_written(
    cli, stocked: Vault, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault this user may read but not write (someone else's folder on a shared drive)."""
    shutil.rmtree(stocked.root / CACHE_DIR)
    real_access = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:
        inside = isinstance(path, str | Path) and Path(path).resolve().is_relative_to(stocked.root)
        return False if inside and mode & os.W_OK else real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    assert cli("memory", "list", "--json").exit_code == 0
    assert cli("kb", "search", "request body", "--json").exit_code == 0
    assert cached_indexes(cache_home) == ["knowledge.sqlite", "memory-demo.sqlite"]
    (folder,) = (cache_home / "aibuddy").iterdir()
    assert folder.name.startswith(stocked.root.name + "-")
    assert "knowledge.lock" in [p.name for p in (folder / "locks").iterdir()]
    assert oct((cache_home / "aibuddy").stat().st_mode & 0o777) == oct(0o700)
    assert not (stocked.root / CACHE_DIR / "index").exists()
    assert not (stocked.root / CACHE_DIR / "locks").exists()


def test_an_index_that_runs_out_of_space_is_rebuilt_in_memory(
    cli, stocked: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SQLite "database or disk is full" (the page limit of a nearly full disk) is not
    "busy": the command answers from an index built in memory."""
    real_open = CacheDB._open

    def nearly_full(self: CacheDB) -> sqlite3.Connection:
        db = real_open(self)
        if not getattr(self, "in_memory", False):
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    shutil.rmtree(stocked.root / CACHE_DIR)
    monkeypatch.setattr(CacheDB, "_open", nearly_full)
    recall = cli("memory", "recall", "weekly report", "--json")
    assert recall.exit_code == 0, recall.stderr
    assert len(json.loads(recall.stdout)["records"]) == 3
    search = cli("kb", "search", "request body", "--json")
    assert search.exit_code == 0 and json.loads(search.stdout)["hits"], search.stderr


def test_an_sqlite_error_that_is_not_contention_or_damage_is_not_busy(
    cli, stocked: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_rank(self: MemoryIndex, query: str, limit: int, today: object = None, model: object = None) -> tuple:  # noqa: E501
        self.db.execute("SELEKT name FROM records")  # a real SQLite error (a bug, say)
        return MemoryIndex.ranked  # never reached

    monkeypatch.setattr(MemoryIndex, "ranked", broken_rank)
    result = cli("memory", "recall", "weekly report", "--json")
    error = json.loads(result.stdout)["error"]
    assert result.exit_code == 1
    assert "busy" not in error["message"] and "try again" not in error["message"]
    assert str(stocked.memory_index_path("demo")) in error["message"]


def test_an_index_another_process_holds_is_busy(cli, stocked: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Genuine contention stays "busy, try again" (exit 4)."""
    Session(stocked, "demo", environ={}).memory.list_records()
    (stocked.root / "memory" / "demo" / "report-day.md").touch()  # the next read must update the index
    monkeypatch.setattr(MemoryIndex, "busy_timeout", 0.05)
    holder = sqlite3.connect(stocked.memory_index_path("demo"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = cli("memory", "recall", "weekly report", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 4
    assert "busy" in json.loads(result.stdout)["error"]["message"]


def refuse_lock_files(monkeypatch: pytest.MonkeyPatch, code: int = errno.EROFS) -> None:
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path).endswith(".lock"):
            raise OSError(code, REFUSALS[code], os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)


def test_a_lock_file_that_cannot_be_made_lets_reads_go_on_and_refuses_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "v"
    root.mkdir()
    store = FileStore(root, root / ".aibuddy" / "locks")
    store.write("notes/a.md", b"kept")
    refuse_lock_files(monkeypatch)
    with store.lock("notes"):
        assert store.read("notes/a.md")[0] == b"kept"
        for write in (
            lambda: store.write("notes/a.md", b"changed"),
            lambda: store.write("notes/b.md", b"new", create=True),
            lambda: store.delete("notes/a.md"),
            lambda: store.append("notes/log", b"line"),
        ):
            with pytest.raises(OSError) as raised:
                write()
            assert raised.value.errno == errno.EROFS and raised.value.filename.endswith("notes.lock")
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["a.md"]
    assert (root / "notes" / "a.md").read_bytes() == b"kept"
    store.write("notes/c.md", b"outside any lock block")  # only writes under the lock are refused


def test_recall_answers_when_its_lock_cannot_be_made(stocked: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = Session(stocked, "demo", environ={}).memory
    memory.list_records()
    before = files_of(stocked.root / "memory")
    refuse_lock_files(monkeypatch)
    result = memory.recall("weekly report")
    assert len(result.records) == 3
    (warning,) = result.warnings
    assert "read-only file system" in warning
    assert files_of(stocked.root / "memory") == before


def test_a_task_that_cannot_be_written_leaves_no_folder_behind(
    cli, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed `task new` (full disk) leaves no empty tasks/<user>/t1/: no later `task list`
    warns of a task 't1', and the next task is t1, not t2."""
    with monkeypatch.context() as refused:
        refuse_temp_files(refused, errno.ENOSPC)
        result = cli("task", "new", "Plan the offsite", "--json")
        assert (result.exit_code, json.loads(result.stdout)["error"]["code"]) == (1, "disk_full")
    assert not (vault.root / "tasks" / "demo").exists()
    listed = cli("task", "list", "--json")
    assert (listed.exit_code, listed.stderr) == (0, "")
    assert json.loads(listed.stdout) == {"tasks": []}
    assert json.loads(cli("task", "new", "Plan the offsite", "--json").stdout)["id"] == "t1"
