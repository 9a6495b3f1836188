"""FileStore.read_many, which a first index build reads every record with: the bytes and Entry
read() gives, and never a file through a symlink (left out, as read() refuses it)."""

from __future__ import annotations

import os

from aibuddy_cli.store.files import FileStore
from aibuddy_cli.vault import Vault


def test_read_many_reads_what_read_reads_and_nothing_through_a_symlink(vault: Vault) -> None:
    store = FileStore(vault.root, vault.root / ".aibuddy" / "locks")
    store.write("memory/demo/a.md", b"a")
    store.write("memory/demo/big.md", bytes(range(256)) * 1000)  # more than one read's worth
    store.write("memory/demo/empty.md", b"")
    store.write("elsewhere/secret.md", b"secret")
    os.symlink(vault.root / "elsewhere/secret.md", vault.root / "memory/demo/link.md")
    os.symlink(vault.root / "elsewhere", vault.root / "memory/linked")
    asked = [
        "memory/demo/a.md",
        "memory/demo/big.md",
        "memory/demo/empty.md",
        "memory/demo/link.md",
        "memory/linked/secret.md",
        "memory/nowhere/x.md",
    ]
    found = store.read_many(asked)
    assert found == {key: store.read(key) for key in asked[:3]}
    assert found["memory/demo/big.md"][0] == bytes(range(256)) * 1000
