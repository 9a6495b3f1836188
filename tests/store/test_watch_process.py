"""The watch process: a one-shot command asks the vault's watch process what changed instead of a
stat per file, and stays exact whatever happens to it (real processes, real inotify; Linux)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import run_aibuddy, wait_for

from aibuddy_cli.app.session import Session
from aibuddy_cli.config import CONFIG_FILE as CONFIG
from aibuddy_cli.settings import Settings
from aibuddy_cli.store import watch_client, watchd
from aibuddy_cli.store.files import FileStore
from aibuddy_cli.store.folder_watch import FolderWatch
from aibuddy_cli.vault import Vault

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not FolderWatch().active, reason="inotify is Linux's"
)


@pytest.fixture
def watch_env(env: dict[str, str], runtime_dir: Path, vault: Vault) -> Iterator[dict[str, str]]:
    settings = {**env, "AIBUDDY_WATCH": "on", "XDG_RUNTIME_DIR": str(runtime_dir)}
    yield settings
    found = watch_client.status(settings, vault.root)
    watch_client.stop(settings, vault.root)
    if found.pid and wait_for(lambda: not _alive(found.pid), 30) is False:
        os.kill(found.pid, signal.SIGKILL)  # a test's own child, never left behind


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def listed(aibuddy_exe: list[str], env: dict[str, str]) -> dict[str, str]:
    """name -> description, as `memory list --json` says."""
    result = run_aibuddy(aibuddy_exe, "memory", "list", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return {record["name"]: record["description"] for record in json.loads(result.stdout)["records"]}


def save(aibuddy_exe: list[str], env: dict[str, str], name: str, description: str) -> None:
    result = run_aibuddy(aibuddy_exe, "memory", "save", name, "-t", "user", "-d", description, env=env)
    assert result.returncode == 0, result.stderr


def running(env: dict[str, str], vault: Vault) -> watch_client.WatchStatus:
    assert wait_for(lambda: watch_client.status(env, vault.root).running, 120)
    return watch_client.status(env, vault.root)


def tea_and_a_watch(aibuddy_exe: list[str], env: dict[str, str], vault: Vault) -> watch_client.WatchStatus:
    """A record saved, then a command whose walk starts the watch process; the process, once it runs."""
    save(aibuddy_exe, env, "tea", "drinks green tea")
    listed(aibuddy_exe, env)  # starts the watch process
    return running(env, vault)


def edit_in_place(path: Path, old: str, new: str) -> None:
    """What an editor writing in place (or `>>`) does: the folder's mtime does not change."""
    assert len(old) == len(new)
    folder_mtime = path.parent.stat().st_mtime_ns
    with open(path, "r+", encoding="utf-8") as handle:
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace(old, new))
    assert path.parent.stat().st_mtime_ns == folder_mtime


def hand_written(vault: Vault, name: str, description: str) -> None:
    """A record file made by hand (as a git pull or an editor would), beside the CLI."""
    text = (
        f"---\nname: {name}\ndescription: {description}\ntype: user\nprovenance: manual\n"
        "created: 2026-01-02T03:04:05Z\nupdated: 2026-01-02T03:04:05Z\nrecallCount: 0\n"
        "lastRecalledAt: null\n---\nby hand\n"
    )
    (vault.root / "memory" / "demo" / f"{name}.md").write_text(text, encoding="utf-8")


@pytest.mark.process
def test_a_command_sees_hand_edits_new_and_deleted_files_through_the_watch_process(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault
) -> None:
    save(aibuddy_exe, watch_env, "tea", "drinks green tea")
    save(aibuddy_exe, watch_env, "gone", "to be deleted")
    listed(aibuddy_exe, watch_env)  # no watch process yet: a walk, and one is started
    running(watch_env, vault)
    assert listed(aibuddy_exe, watch_env) == {"tea": "drinks green tea", "gone": "to be deleted"}
    asked_before = watch_client.status(watch_env, vault.root).questions or 0

    edit_in_place(vault.root / "memory" / "demo" / "tea.md", "green", "black")
    hand_written(vault, "new", "made by hand")
    (vault.root / "memory" / "demo" / "gone.md").unlink()

    assert listed(aibuddy_exe, watch_env) == {"tea": "drinks black tea", "new": "made by hand"}
    assert (watch_client.status(watch_env, vault.root).questions or 0) > asked_before  # it was asked


@pytest.mark.process
def test_with_the_watch_process_a_command_reads_only_what_changed(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No walk of the folder once the index holds the watch process's cursor: the edit is seen
    from the watch process's answer alone."""
    tea_and_a_watch(aibuddy_exe, watch_env, vault)
    listed(aibuddy_exe, watch_env)  # the first look of the watch process: a walk, then its cursor
    edit_in_place(vault.root / "memory" / "demo" / "tea.md", "green", "black")
    walked: list[str] = []
    scan = FileStore.scan
    monkeypatch.setattr(
        FileStore, "scan", lambda self, prefix, suffix: walked.append(prefix) or scan(self, prefix, suffix)
    )
    with Session(Vault.open(vault.root, watch_env), "demo", environ=watch_env) as session:
        records = session.memory.list_records().records
    assert [item.record.description for item in records] == ["drinks black tea"]
    assert "memory/demo" not in walked


@pytest.mark.process
def test_a_killed_watch_process_means_a_walk_and_the_answer_stays_right(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault
) -> None:
    first = tea_and_a_watch(aibuddy_exe, watch_env, vault)
    listed(aibuddy_exe, watch_env)  # the index keeps this process's cursor
    assert first.pid
    os.kill(first.pid, signal.SIGKILL)
    assert wait_for(lambda: not _alive(first.pid), 60)

    edit_in_place(vault.root / "memory" / "demo" / "tea.md", "green", "black")
    assert listed(aibuddy_exe, watch_env) == {"tea": "drinks black tea"}  # walked, and a new one started
    second = running(watch_env, vault)
    assert second.pid != first.pid
    edit_in_place(vault.root / "memory" / "demo" / "tea.md", "black", "white")
    assert listed(aibuddy_exe, watch_env) == {"tea": "drinks white tea"}  # the old cursor never matches
    hand_written(vault, "new", "made by hand")
    assert listed(aibuddy_exe, watch_env) == {"tea": "drinks white tea", "new": "made by hand"}


@pytest.mark.process
@pytest.mark.parametrize("how", ["environment", "aibuddy.toml"])
def test_off_starts_no_watch_process(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault, runtime_dir: Path, how: str
) -> None:
    if how == "environment":
        env = {**watch_env, "AIBUDDY_WATCH": "off"}
    else:
        with open(vault.root / "aibuddy.toml", "a", encoding="utf-8") as config:
            config.write('\n[indexes]\nwatch = "off"\n')
        env = {**watch_env, "AIBUDDY_WATCH": ""}
    save(aibuddy_exe, env, "tea", "drinks green tea")
    assert listed(aibuddy_exe, env) == {"tea": "drinks green tea"}
    assert not list(runtime_dir.glob("aibuddy/watch-*"))  # nothing started, no socket asked for


def test_auto_starts_one_only_for_a_big_folder(vault: Vault, runtime_dir: Path) -> None:
    """In-process: a walk of fewer than MIN_FILES files starts nothing."""
    env = {"XDG_RUNTIME_DIR": str(runtime_dir)}
    remote = watch_client.RemoteWatch(vault.root, Settings.read(env))
    folder = vault.root / "memory" / "demo"
    assert remote.changes(folder, []) == (None, None)
    remote.scanned(folder, watch_client.MIN_FILES - 1)
    assert not list(runtime_dir.glob("aibuddy/watch-*.lock"))


@pytest.mark.process
def test_the_watch_process_answers_only_about_its_users_real_folders(vault: Vault, runtime_dir: Path) -> None:
    """A path that is not a plain absolute folder path (a link, `..`, a file) is "unknown"; the
    names it gives are those of the folder asked about."""
    import threading

    path = runtime_dir / "w.sock"
    server = threading.Thread(target=watchd._serve_on, args=(path, FolderWatch(), 60.0), daemon=True)
    server.start()
    assert wait_for(path.exists, 60)
    from aibuddy_cli.unix_peer import send

    folder = vault.root / "memory"
    (vault.root / "link").symlink_to(folder)
    not_folders = (str(vault.root / "link"), f"{folder}/../memory", "memory", str(vault.root / CONFIG))
    for asked in not_folders:
        assert send(path, {"op": "changes", "folder": asked, "since": []}, 10) == {
            "ok": True,
            "cursor": None,
            "names": None,
        }
    first = send(path, {"op": "changes", "folder": str(folder), "since": []}, 10)
    (folder / "x.md").write_text("x", encoding="utf-8")
    (vault.root / "elsewhere.md").write_text("y", encoding="utf-8")
    second = send(path, {"op": "changes", "folder": str(folder), "since": [first["cursor"]]}, 10)
    assert first["names"] is None and second["names"] == ["x.md"]
    send(path, {"op": "stop"}, 10)
    server.join(60)


@pytest.mark.process
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another uid")
def test_the_watch_process_answers_no_other_uid(vault: Vault, runtime_dir: Path) -> None:
    import threading

    path = runtime_dir / "w.sock"
    server = threading.Thread(target=watchd._serve_on, args=(path, FolderWatch(), 60.0), daemon=True)
    server.start()
    assert wait_for(path.exists, 60)
    for opened in (runtime_dir.parent, runtime_dir):  # only the uid check is left between them
        opened.chmod(0o755)
    path.chmod(0o666)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        code = 3
        try:
            os.setuid(65534)
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(30)
            client.connect(str(path))
            request = {"op": "changes", "folder": str(vault.root), "since": []}
            try:
                client.sendall(json.dumps(request).encode() + b"\n")
                code = 0 if client.recv(65536) == b"" else 1  # closed without an answer
            except (BrokenPipeError, ConnectionResetError):
                code = 0  # closed before the question was read
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    for opened in (runtime_dir.parent, runtime_dir):
        opened.chmod(0o700)
    from aibuddy_cli.unix_peer import send

    send(path, {"op": "stop"}, 10)
    server.join(60)
    assert os.WEXITSTATUS(status) == 0


@pytest.mark.process
def test_watch_status_and_stop_say_what_runs(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault
) -> None:
    started = tea_and_a_watch(aibuddy_exe, watch_env, vault)
    shown = json.loads(run_aibuddy(aibuddy_exe, "watch", "status", "--json", env=watch_env).stdout)
    assert shown["running"] and shown["pid"] == started.pid
    stopped = run_aibuddy(aibuddy_exe, "watch", "stop", env=watch_env)
    assert stopped.returncode == 0 and stopped.stdout.decode().strip() == "stopped"
    assert started.pid and wait_for(lambda: not _alive(started.pid), 60)
    assert run_aibuddy(aibuddy_exe, "watch", "status", env=watch_env).stdout.decode().strip() == "not running"


@pytest.mark.process
def test_the_knowledge_index_sees_documents_added_edited_and_removed_through_the_watch_process(
    aibuddy_exe: list[str], watch_env: dict[str, str], vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kb` commands ask the watch process too: once the index holds its cursors, a document
    written, edited or removed by hand is seen without a walk of the knowledge folders (and a
    folder that does not exist yet, knowledge/personal/demo/ready here, holds nothing)."""
    folder = vault.root / "knowledge" / "personal" / "demo" / "pending"
    folder.mkdir(parents=True)
    (folder / "tea.md").write_text("# Tea\n\nGreen tea steeps for two minutes.\n", encoding="utf-8")
    (folder / "gone.md").write_text("# Gone\n\nTo be removed.\n", encoding="utf-8")

    def titles() -> dict[str, str]:
        result = run_aibuddy(aibuddy_exe, "kb", "list", "--json", env=watch_env)
        assert result.returncode == 0, result.stderr
        return {doc["doc"]: doc["title"] for doc in json.loads(result.stdout)["documents"]}

    assert set(titles()) == {"personal/demo/tea", "personal/demo/gone"}  # a walk: one is started
    running(watch_env, vault)
    titles()  # the first look of the watch process: a walk, then the index keeps its cursors
    (folder / "tea.md").write_text("# Coffee\n\nBlack coffee, no sugar.\n", encoding="utf-8")
    (folder / "new.md").write_text("# New\n\nWritten by hand.\n", encoding="utf-8")
    (folder / "gone.md").unlink()
    walked: list[str] = []
    scan = FileStore.scan
    monkeypatch.setattr(
        FileStore, "scan", lambda self, prefix, suffix: walked.append(prefix) or scan(self, prefix, suffix)
    )
    with Session(Vault.open(vault.root, watch_env), "demo", environ=watch_env) as session:
        found = {doc.ref.doc_id: doc.title for doc in session.knowledge.documents("all")}
    assert found == {"tea": "Coffee", "new": "New"}
    assert not [prefix for prefix in walked if prefix.startswith("knowledge")]
    assert titles() == {"personal/demo/tea": "Coffee", "personal/demo/new": "New"}
    shutil.rmtree(folder)  # a folder the index saw, removed: a walk tells what went with it
    assert titles() == {}
    (folder.parent / "ready").mkdir()
    (folder.parent / "ready" / "back.md").write_text("# Back\n\nAgain.\n", encoding="utf-8")
    assert titles() == {"personal/demo/back": "Back"}
    shutil.rmtree(folder.parent)  # the user's whole folder
    assert titles() == {}
