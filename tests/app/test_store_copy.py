"""`aibuddy store copy` at its edges: where a copy may go (never into its own vault, a team vault,
or an empty --to), what a refused copy leaves (nothing), what a mirror removes (folders too), the
copied settings (no database URL however TOML spells it) and URLs that libpq cannot read (each
case a bug a review found)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from helpers import run_in_process
from store_support import aibuddy, vault_files

from aibuddy_cli.vault import init_vault


def folder_vault(tmp_path: Path, name: str = "source") -> dict[str, str]:
    vault = init_vault(tmp_path / name, "alice")
    env = {"AIBUDDY_VAULT": str(vault.root), "AIBUDDY_USER": "alice", "AIBUDDY_WORKER": "0"}
    aibuddy(env, "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea")
    return env


# --- the target folder -------------------------------------------------------------------------


def test_a_copy_into_a_folder_inside_the_vaults_own_files_is_refused(tmp_path: Path) -> None:
    """--to a folder under the vault's own parts (tasks/, memory/…) is refused: it would write a
    second vault into the one being copied (a bogus task folder full of files)."""
    env = folder_vault(tmp_path)
    source = Path(env["AIBUDDY_VAULT"])
    before = vault_files(source)
    inside = source / "tasks" / "alice" / "backup"
    done = run_in_process("store", "copy", "--to", str(inside), "--json", env=env)
    assert done.returncode != 0, done.stdout
    assert vault_files(source) == before


def test_a_copy_into_a_folder_inside_the_vault_is_refused(tmp_path: Path) -> None:
    """--to a folder anywhere inside the vault's folder (`--to backup` run from the vault) is refused:
    a nested vault there would take over the commands run below it."""
    env = folder_vault(tmp_path)
    source = Path(env["AIBUDDY_VAULT"])
    done = run_in_process("store", "copy", "--to", "backup", "--json", env=env, cwd=source)
    assert done.returncode != 0, done.stdout
    assert not (source / "backup").exists()


def test_a_refused_copy_into_a_new_folder_leaves_nothing_behind(tmp_path: Path) -> None:
    """A source file that cannot be read (a symlink) refuses the copy before anything is written:
    the new folder is made a vault only once every file was read and compared."""
    env = folder_vault(tmp_path)
    source = Path(env["AIBUDDY_VAULT"])
    (source / "memory" / "alice" / "link.md").symlink_to(source / "memory" / "alice" / "tea.md")
    target = tmp_path / "backup"
    done = run_in_process("store", "copy", "--to", str(target), "--json", env=env)
    assert done.returncode != 0
    assert not target.exists(), sorted(p.name for p in target.iterdir())


def test_a_copy_into_a_team_vault_folder_is_refused(tmp_path: Path) -> None:
    """A team vault's folder is what the team's git remote receives: a copy into it would put this
    vault's memory in the shared tree, so it is refused."""
    env = folder_vault(tmp_path)
    team = init_vault(tmp_path / "team", "alice")
    config = team.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[teams.eng]\nmembers = ["alice", "bob"]\n')
    done = run_in_process("store", "copy", "--to", str(team.root), "--json", env=env)
    assert done.returncode != 0, done.stdout
    assert not (team.root / "memory" / "alice" / "tea.md").exists()


def test_a_fresh_git_repository_can_be_the_backup_folder(tmp_path: Path) -> None:
    """The README's nightly backup commits the copy with git: a folder `git init` made (holding only
    .git) counts as empty."""
    env = folder_vault(tmp_path)
    backup = tmp_path / "backup"
    (backup / ".git").mkdir(parents=True)  # the layout of a `git init` (its contents do not matter here)
    (backup / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    done = run_in_process("store", "copy", "--to", str(backup), "--mirror", "--json", env=env)
    assert done.returncode == 0, done.stdout


# --- a mirror ----------------------------------------------------------------------------------


def test_a_mirror_leaves_no_empty_task_folder_behind(tmp_path: Path) -> None:
    """A mirror that deletes the files of a task the source lacks removes its folder too (a backup
    vault would list a task that is not there)."""
    env = folder_vault(tmp_path)
    backup = tmp_path / "backup"
    aibuddy(env, "store", "copy", "--to", str(backup))
    at_backup = {**env, "AIBUDDY_VAULT": str(backup)}
    aibuddy(at_backup, "task", "new", "only in the backup")
    assert aibuddy(env, "store", "copy", "--to", str(backup), "--mirror")["removed"] >= 1
    assert vault_files(backup) == vault_files(Path(env["AIBUDDY_VAULT"]))
    listed = run_in_process("task", "list", "--json", env=at_backup)
    assert listed.returncode == 0 and json.loads(listed.stdout)["tasks"] == []
    assert listed.stderr == b"", listed.stderr
    assert os.listdir(backup / "tasks" / "alice") == []


# --- settings ----------------------------------------------------------------------------------


def store_url(text: str) -> object:
    return tomllib.loads(text).get("store", {}).get("url")


def test_settings_for_copy_drops_a_dotted_store_url() -> None:
    from aibuddy_cli.app.store_copy import settings_for_copy

    config = 'default_user = "alice"\nstore.url = "postgresql://db/team"\n\n[recall]\nwindow = 100\n'
    assert store_url(config) == "postgresql://db/team"  # what the vault reads
    assert store_url(settings_for_copy(config)) is None


def test_settings_for_copy_drops_an_inline_store_table() -> None:
    from aibuddy_cli.app.store_copy import settings_for_copy

    config = 'default_user = "alice"\nstore = { url = "postgresql://db/team" }\n'
    assert store_url(settings_for_copy(config)) is None


def test_settings_for_copy_drops_a_quoted_store_header() -> None:
    from aibuddy_cli.app.store_copy import settings_for_copy

    config = 'default_user = "alice"\n\n["store"]\nurl = "postgresql://db/team"\n'
    assert store_url(settings_for_copy(config)) is None


@pytest.mark.process
def test_a_copied_folder_from_a_dotted_store_url_vault_is_a_folder_vault(
    tmp_path: Path, postgres_url: str
) -> None:
    """End to end: a vault whose aibuddy.toml says `store.url = …` copies into a folder whose settings
    name no database (its commands would go to the database, its next copy be refused)."""
    env = folder_vault(tmp_path)
    aibuddy(env, "store", "copy", "--to", postgres_url)
    config = Path(env["AIBUDDY_VAULT"]) / "aibuddy.toml"
    config.write_text(config.read_text().replace("[models]", f'store.url = "{postgres_url}"\n\n[models]', 1))
    assert aibuddy(env, "memory", "list")["records"]  # served from the database now
    backup = tmp_path / "backup"
    aibuddy(env, "store", "copy", "--to", str(backup))
    again = run_in_process("store", "copy", "--to", str(backup), "--mirror", "--json", env=env)
    assert again.returncode == 0, again.stdout


def test_a_file_in_the_way_of_a_source_folder_refuses_the_copy_before_writing(tmp_path: Path) -> None:
    """The target holds a file where the source has a folder (knowledge/personal/doc vs
    knowledge/personal/doc/a.md): the whole copy is refused (exit 4) with nothing written, and a
    mirror deletes the file before it writes."""
    env = folder_vault(tmp_path)
    source = Path(env["AIBUDDY_VAULT"])
    backup = tmp_path / "backup"
    aibuddy(env, "store", "copy", "--to", str(backup))
    (backup / "knowledge/personal/doc").write_bytes(b"a file")
    (source / "knowledge/personal/doc").mkdir()
    (source / "knowledge/personal/doc/a.md").write_bytes(b"a document")
    (source / "memory/alice/new.md").write_bytes(b"only in the source")
    done = run_in_process("store", "copy", "--to", str(backup), "--json", env=env)
    assert done.returncode == 4, (done.returncode, done.stdout)
    assert not (backup / "memory/alice/new.md").exists()


# --- the URL -------------------------------------------------------------------------------------


def test_a_password_with_a_bare_percent_is_not_shown(tmp_path: Path) -> None:
    """libpq refuses `%` not followed by two hex digits and quotes the password back: no message
    shows it, and the URL is invalid input, not a busy store."""
    env = folder_vault(tmp_path)
    to = "postgresql://alice:50%off@localhost/db"
    done = run_in_process("store", "copy", "--to", to, "--json", env=env)
    assert done.returncode == 6 and json.loads(done.stdout)["error"]["code"] != "busy"
    assert b"50%off" not in done.stdout + done.stderr, done.stderr


def test_a_malformed_url_is_invalid_input_not_a_crash(tmp_path: Path) -> None:
    """An unclosed IPv6 bracket is a URL libpq cannot read: one line, exit 6, no traceback."""
    env = folder_vault(tmp_path)
    done = run_in_process("store", "copy", "--to", "postgresql://alice@[::1/db", "--json", env=env)
    assert done.returncode == 6, done.stdout


def test_an_empty_to_is_refused_not_the_working_folder(tmp_path: Path) -> None:
    """`--to "$BACKUP"` with BACKUP unset is refused: an empty --to is not the working folder."""
    env = folder_vault(tmp_path)
    here = tmp_path / "elsewhere"
    here.mkdir()
    done = run_in_process("store", "copy", "--to", "", "--json", env=env, cwd=here)
    assert done.returncode != 0, done.stdout
    assert list(here.iterdir()) == []
