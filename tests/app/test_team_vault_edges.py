"""The team vault's promise (nothing personal reaches the shared remote) and the secrets' (nothing
automatic stores a secret, the pre-commit hook reads all that is staged) at their edges: each
case a leak a review found."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.redaction.scan import scan_staged
from aibuddy_cli.settings import Settings
from aibuddy_cli.vault import Vault, init_vault

GIT_USER = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "core.hooksPath=/dev/null"]
TEAM = '\n[teams.eng]\nmembers = ["alice", "bob"]\n'
KEY = "sk-proj-" + "A1b2C3d4" * 5


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    return subprocess.run(["git", "-C", str(repo), *GIT_USER, *args], capture_output=True, text=True,
                          check=check, env=env)


def _team_repo(tmp_path: Path) -> tuple[Path, Vault]:
    """A team vault that is a folder of the team's repository (not its top)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shared = init_vault(repo / "vault", "alice")
    config = shared.root / "aibuddy.toml"
    config.write_text('vault_id = "team-1"\n' + config.read_text() + TEAM)
    return repo, Vault.open(shared.root)


@pytest.mark.process
def test_a_personal_vault_inside_the_team_repository_but_beside_the_vault_is_refused(tmp_path: Path) -> None:
    """A personal vault beside the vault, in the same repository, would be staged by `git add -A`
    for the team's remote: refused, as one inside the vault's folder is."""
    repo, shared = _team_repo(tmp_path)
    personal = {"AIBUDDY_PERSONAL_VAULT": str(repo / "alice-personal")}
    with pytest.raises(InvalidInput, match="reaches the team's remote"):
        with Session(shared, "alice", environ=personal) as session:
            session.memory.save("tea", type="user", description="Alice drinks green tea", body="")
    assert not (repo / "alice-personal" / "memory").exists()


@pytest.mark.process
def test_a_personal_vault_the_repository_ignores_is_accepted(tmp_path: Path) -> None:
    """A repository that ignores the folder (a dotfiles repository at ~ ignoring ~/.local) pushes
    none of it: that personal vault is fine."""
    repo, shared = _team_repo(tmp_path)
    (repo / ".gitignore").write_text("/private/\n")
    personal = {"AIBUDDY_PERSONAL_VAULT": str(repo / "private" / "alice")}
    with Session(shared, "alice", environ=personal) as session:
        session.memory.save("tea", type="user", description="Alice drinks green tea", body="")
    git(repo, "add", "-A")
    assert "tea.md" not in git(repo, "diff", "--cached", "--name-only").stdout


def _repo_vault(tmp_path: Path) -> Path:
    root = init_vault(tmp_path / "v", "demo").root
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "vault")
    return root


@pytest.mark.process
def test_the_staged_scan_reads_a_file_that_was_a_symlink_before(tmp_path: Path) -> None:
    """A vault file committed as a symlink, then replaced by a regular file holding a key: a type
    change (T) is read by the pre-commit scan like any other change."""
    root = _repo_vault(tmp_path)
    doc = root / "knowledge" / "system" / "ready" / "runbook.md"
    (root / "notes.md").write_text("# Runbook\n")
    doc.symlink_to("../../../notes.md")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a runbook, linked")
    doc.unlink()
    doc.write_text(f"# Runbook\n\nOPENAI_API_KEY={KEY}\n")
    git(root, "add", "-A")
    assert git(root, "diff", "--cached", "--name-status").stdout.startswith("T")
    result = scan_staged(root)
    assert [f.path for f in result.findings] == ["knowledge/system/ready/runbook.md"]


@pytest.mark.process
def test_the_staged_scan_reads_a_file_whose_name_holds_a_newline(tmp_path: Path) -> None:
    """A file whose name holds a newline is read by its blob id (cat-file cannot name it): a key in
    it does not pass the pre-commit hook."""
    root = _repo_vault(tmp_path)
    doc = root / "knowledge" / "system" / "ready" / "run\nbook.md"
    doc.write_text(f"OPENAI_API_KEY={KEY}\n")
    git(root, "add", "-A")
    result = scan_staged(root)
    assert len(result.findings) == 1 or result.scanned == 1, result


def test_an_imported_record_text_keeps_no_credential(tmp_path: Path, vault: Vault, cli) -> None:
    """`aibuddy import jsonl` is what another program wrote: a key in a line's whole-file `text` is
    redacted on the way in, and the decision says so."""
    text = (
        "---\nname: deploy\ndescription: How we deploy\ntype: reference\nprovenance: auto\n---\n"
        f"Deploy with OPENAI_API_KEY={KEY}\n"
    )
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"name": "deploy", "text": text}) + "\n")
    result = cli("import", "jsonl", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    stored = (vault.root / "memory" / "demo" / "deploy.md").read_text()
    assert KEY not in stored or "looks like" in result.stderr, (stored, result.stderr)


@pytest.mark.process
def test_doctor_move_of_a_file_with_staged_changes_leaves_no_copy_on_both_sides(tmp_path: Path) -> None:
    """A personal file git tracks whose staged bytes differ from both HEAD and the work tree (an
    edit added, then edited again) cannot be taken out of the index without -f: its unit is kept
    back with the reason, before anything is copied, never left on both sides."""
    from aibuddy_cli.app.team import doctor
    from aibuddy_cli.errors import AibuddyError

    root = init_vault(tmp_path / "shared", "alice").root
    (root / "memory" / "alice").mkdir(parents=True)
    record = root / "memory" / "alice" / "tea.md"
    record.write_text("---\nname: tea\ntype: user\ndescription: tea\n---\nv1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "before teams")
    (root / "aibuddy.toml").write_text('vault_id = "team-1"\n' + (root / "aibuddy.toml").read_text() + TEAM)
    record.write_text(record.read_text().replace("v1", "v2 staged"))
    git(root, "add", "memory/alice/tea.md")
    record.write_text(record.read_text().replace("v2 staged", "v3 in the work tree"))
    personal = tmp_path / "personal"
    environ = {"AIBUDDY_PERSONAL_VAULT": str(personal)}
    try:
        doctor(Vault.open(root), "alice", Settings.read(environ), move=True, dry_run=False)
    except AibuddyError as failed:
        assert "git rm --cached failed" in str(failed)
    both = record.exists() and (personal / "memory" / "alice" / "tea.md").exists()
    in_index = "memory/alice/tea.md" in git(root, "ls-files").stdout.split()
    assert not (both and in_index), "copied to the personal vault, yet still in the shared tree and index"
