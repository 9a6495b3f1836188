from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aibuddy_cli.errors import Busy, Conflict, InvalidInput, NotFound, UsageError
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.settings import Settings
from aibuddy_cli.store.files import TEMP_PREFIX, FileStore
from aibuddy_cli.vault import (
    Vault,
    init_vault,
    locate_vault,
    resolve_user,
    user_cache_dir,
    validate_record_name,
    validate_user_name,
)


def test_init_creates_the_layout_and_refuses_to_overwrite(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    for folder in (
        "memory",
        "knowledge/system/pending",
        "knowledge/system/ready",
        "knowledge/personal",
        "tasks",
    ):
        assert (vault.root / folder).is_dir()
    assert ".aibuddy" in (vault.root / ".gitignore").read_text().split()
    assert vault.config.default_user == "alice" and vault.config.admins == ("alice",)
    with pytest.raises(Conflict):
        init_vault(tmp_path / "v", "alice")


def test_vault_is_found_by_walking_up_and_overridden_by_env(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    deep = vault.root / "memory" / "x" / "y"
    deep.mkdir(parents=True)
    assert locate_vault(None, Settings.read({}), deep).root == vault.root
    other = init_vault(tmp_path / "other", "bob")
    assert locate_vault(None, Settings.read({"AIBUDDY_VAULT": str(other.root)}), deep).root == other.root
    elsewhere = Settings.read({"AIBUDDY_VAULT": str(other.root)})
    assert locate_vault(str(vault.root), elsewhere, deep).root == vault.root
    with pytest.raises(NotFound):
        locate_vault(None, Settings.read({}), tmp_path)


def test_the_per_user_cache_folder_comes_from_the_environment_given(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}
    located = locate_vault(str(vault.root), Settings.read(environ), tmp_path)
    assert located.environ is environ and "XDG_CACHE_HOME" not in repr(located)
    folder = user_cache_dir(vault.root, environ)
    assert folder is not None and folder.parent == tmp_path / "cache" / "aibuddy"
    home = user_cache_dir(vault.root, {"HOME": str(tmp_path / "home")})
    assert home is not None and home.parent == tmp_path / "home" / ".cache" / "aibuddy"


def test_user_comes_from_option_then_env_then_config(tmp_path: Path) -> None:
    config = init_vault(tmp_path / "v", "alice").config
    assert resolve_user("carol", Settings.read({"AIBUDDY_USER": "bob"}), config) == "carol"
    assert resolve_user(None, Settings.read({"AIBUDDY_USER": "bob"}), config) == "bob"
    assert resolve_user(None, Settings.read({}), config) == "alice"
    with pytest.raises(UsageError):
        resolve_user(None, Settings.read({}), Vault.open(tmp_path / "v").config.__class__())


@pytest.mark.parametrize("name", ["a/b", "..", "../x", "Upper", "has space", "x" * 65, "", "-lead", "é"])
def test_bad_record_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        validate_record_name(name)


@pytest.mark.parametrize("user", ["../bob", "a/b", "", ".hidden", "a b", "x" * 65, "Alice"])
def test_bad_user_names_are_refused(user: str) -> None:
    with pytest.raises(InvalidInput):
        validate_user_name(user)


def test_a_broken_config_is_reported(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    (vault.root / "aibuddy.toml").write_text("default_user = [\n")
    with pytest.raises(InvalidInput, match="aibuddy.toml"):
        Vault.open(vault.root)


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    root = tmp_path / "root"
    root.mkdir()
    return FileStore(root, root / ".aibuddy" / "locks")


@pytest.mark.parametrize("key", ["/etc/passwd", "../outside", "a/../../b", "a//b", "a\\b", "./a"])
def test_keys_cannot_leave_the_store(store: FileStore, key: str) -> None:
    with pytest.raises(InvalidInput):
        store.write(key, b"x")


def test_symlinks_inside_the_vault_are_refused(store: FileStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    os.symlink(outside, store.root / "memory")
    with pytest.raises(InvalidInput, match="symlink"):
        store.read("memory/secret.md")
    with pytest.raises(InvalidInput, match="symlink"):
        store.write("memory/new.md", b"x")
    assert not (outside / "new.md").exists()
    (store.root / "m").mkdir()
    os.symlink(outside / "secret.md", store.root / "m" / "link.md")
    with pytest.raises(InvalidInput):
        store.read("m/link.md")


def test_writes_are_atomic_and_leave_no_temporary_files(store: FileStore) -> None:
    store.write("a/b.md", b"one")
    store.write("a/b.md", b"two")
    assert (store.root / "a" / "b.md").read_bytes() == b"two"
    assert not [p for p in (store.root / "a").iterdir() if p.name.startswith(TEMP_PREFIX)]
    with pytest.raises(Conflict):
        store.write("a/b.md", b"three", create=True)
    assert (store.root / "a" / "b.md").read_bytes() == b"two"


def test_a_failed_write_keeps_the_old_content(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.write("a/b.md", b"old")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        store.write("a/b.md", b"new")
    assert (store.root / "a" / "b.md").read_bytes() == b"old"
    assert [p.name for p in (store.root / "a").iterdir()] == ["b.md"]


@pytest.mark.process
def test_the_lock_times_out_with_a_conflict(store: FileStore) -> None:
    store.locks_dir.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys\n"
                f"fd = os.open({str(store.locks_dir / 'busy.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\n"
                "sys.stdin.read()\n"  # held until killed, or until the test's end closes stdin
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        with pytest.raises(Busy, match="busy") as raised:
            with store.lock("busy", timeout=0.2):
                pass
        assert (raised.value.code, int(raised.value.exit_code)) == ("busy", 4)  # not a "conflict"
    finally:
        holder.kill()
        holder.wait()


def test_config_edits_take_effect_despite_the_parse_cache(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    assert Vault.open(vault.root).config.recall.max_bodies == 5
    assert (vault.cache_dir / "config.json").exists()
    config = vault.root / "aibuddy.toml"
    config.write_text(
        config.read_text().replace("max_bodies = 5", "max_bodies = 3").replace('"alice"', '"bob"')
    )
    reopened = Vault.open(vault.root).config
    assert (reopened.recall.max_bodies, reopened.default_user) == (3, "bob")
    (vault.cache_dir / "config.json").write_text("{not json")
    assert Vault.open(vault.root).config.recall.max_bodies == 3


def test_init_ignores_the_cache_and_interrupted_writes(vault: Vault) -> None:
    lines = (vault.root / ".gitignore").read_text().split()
    assert ".aibuddy" in lines and ".aibuddy-tmp-*" in lines


def test_a_folder_swapped_for_a_symlink_is_refused_even_in_a_long_running_process(
    memory: MemoryService, vault: Vault, tmp_path: Path
) -> None:
    memory.save("first", type="user", description="first", body="")
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = vault.root / "memory" / "demo"
    folder.rename(tmp_path / "moved")
    os.symlink(outside, folder)
    with pytest.raises(InvalidInput, match="symlink"):
        memory.save("second", type="user", description="second", body="")
    assert list(outside.iterdir()) == []
