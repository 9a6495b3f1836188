"""The vault on PostgreSQL (`[store] url` / AIBUDDY_STORE_URL): several hosts (each its own folder
and derived indexes) see one memory with no pull between them; a server that cannot be reached is
"store unavailable" (exit 4), never with a password; a password never sits in aibuddy.toml."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_in_process

from aibuddy_cli.vault import init_vault


def host(tmp_path: Path, name: str, url: str) -> dict[str, str]:
    """A host: its own vault folder (configuration, indexes, locks) over the shared store."""
    vault = init_vault(tmp_path / name, "alice")
    return {
        "AIBUDDY_VAULT": str(vault.root),
        "AIBUDDY_USER": "alice",
        "AIBUDDY_STORE_URL": url,
        "AIBUDDY_WORKER": "0",
    }


def aibuddy(env: dict[str, str], *args: str) -> dict:
    done = run_in_process(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_save_on_one_host_is_found_by_the_next_recall_on_another(tmp_path: Path, postgres_url: str) -> None:
    a, b = host(tmp_path, "a", postgres_url), host(tmp_path, "b", postgres_url)
    assert aibuddy(b, "memory", "recall", "green tea")["records"] == []  # b's index knows the folder now
    aibuddy(a, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    assert [r["name"] for r in aibuddy(b, "memory", "recall", "green tea")["records"]] == ["tea"]
    aibuddy(b, "memory", "update", "tea", "--description", "Drinks green tea, no sugar")
    assert aibuddy(a, "memory", "show", "tea")["description"] == "Drinks green tea, no sugar"
    aibuddy(a, "memory", "delete", "tea")
    assert aibuddy(b, "memory", "list")["records"] == []
    assert not list((tmp_path / "a").rglob("tea.md"))  # the files live in the database, not the folder


def test_an_unreachable_server_is_store_unavailable_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://alice:s3cret@/aibuddy?host={tmp_path}/nowhere&connect_timeout=2"
    env = host(tmp_path, "a", url)
    done = run_in_process("memory", "list", "--json", env=env)
    assert done.returncode == 4
    error = json.loads(done.stdout)["error"]
    assert error["message"].startswith("store unavailable") and b"s3cret" not in done.stdout + done.stderr


def test_a_password_in_the_configuration_is_refused(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v", "alice")
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[store]\nurl = "postgresql://alice:s3cret@db/aibuddy"\n')
    done = run_in_process("--vault", str(vault.root), "memory", "list", env={"AIBUDDY_WORKER": "0"})
    assert done.returncode == 6 and b"PGPASSWORD" in done.stderr and b"s3cret" not in done.stderr
