"""The CLI contract through Typer's CliRunner: JSON documents, exit codes, stderr messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aibuddy_cli.vault import Vault


def save(cli, name: str = "tea", *extra: str, input: str | None = None):
    return cli(
        "memory", "save", name, "--type", "user", "--description", "Drinks green tea", *extra, input=input
    )


def test_save_show_update_list_delete_in_json(cli, vault: Vault) -> None:
    created = json.loads(save(cli, "tea", "--body", "No sugar.", "--json").stdout)
    assert created["path"] == "memory/demo/tea.md"
    assert list(created["record"]) == [
        "name",
        "description",
        "type",
        "provenance",
        "created",
        "updated",
        "recallCount",
        "lastRecalledAt",
        "body",
    ]
    assert created["record"]["provenance"] == "manual"
    shown = json.loads(cli("memory", "show", "tea", "--json").stdout)
    assert shown["body"] == "No sugar."
    updated = json.loads(cli("memory", "update", "tea", "--description", "Drinks white tea", "--json").stdout)
    assert updated["changed"] is True and updated["record"]["created"] == created["record"]["created"]
    listed = json.loads(cli("memory", "list", "--json").stdout)
    assert listed["user"] == "demo" and [r["name"] for r in listed["records"]] == ["tea"]
    assert "body" not in listed["records"][0]
    assert json.loads(cli("memory", "delete", "tea", "--json").stdout)["deleted"] is True
    assert json.loads(cli("memory", "list", "--json").stdout)["records"] == []


def test_there_is_no_way_to_choose_provenance(cli) -> None:
    result = save(cli, "tea", "--provenance", "auto")
    assert result.exit_code == 2


def test_plain_output_when_not_a_terminal(cli) -> None:
    save(cli, "tea", "--body", "No sugar.")
    assert cli("memory", "list").stdout.startswith("tea\tuser\tmanual\t")
    recall = cli("memory", "recall", "green tea")
    assert (
        recall.exit_code == 0
        and "## tea [user] Drinks green tea" in recall.stdout
        and "No sugar." in recall.stdout
    )
    manifest = cli("memory", "manifest").stdout
    assert manifest.startswith("[user] tea.md (")


@pytest.mark.parametrize(
    "args, code, error",
    [
        (("memory", "show", "nope"), 3, "not_found"),
        (("memory", "save", "Bad Name", "-t", "user", "-d", "x"), 6, "invalid_input"),
        (("memory", "save", "../x", "-t", "user", "-d", "x"), 6, "invalid_input"),
        (("memory", "save", "x" * 65, "-t", "user", "-d", "x"), 6, "invalid_input"),
        (("memory", "save", "ok", "-t", "opinion", "-d", "x"), 6, "invalid_input"),
        (("--user", "../bob", "memory", "list"), 6, "invalid_input"),
        (("--user", "a/b", "memory", "save", "x", "-t", "user", "-d", "x"), 6, "invalid_input"),
        (("memory", "update", "nope", "-d", "x"), 3, "not_found"),
        (("memory", "delete", "nope"), 3, "not_found"),
    ],
)
def test_errors_have_exit_codes_and_json_documents(
    cli, vault: Vault, args: tuple[str, ...], code: int, error: str
) -> None:
    result = cli(*args, "--json")
    assert result.exit_code == code
    assert json.loads(result.stdout)["error"]["code"] == error
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not list((vault.root / "memory").rglob("*.md"))
    assert not (vault.root.parent / "x.md").exists()


def test_saving_an_existing_name_is_a_conflict_that_points_to_update(cli) -> None:
    save(cli)
    result = save(cli)
    assert result.exit_code == 4 and "memory update tea" in result.stderr


def test_body_from_stdin_and_from_files(cli, tmp_path: Path) -> None:
    assert save(cli, "piped", "--body-file", "-", input="周报格式：三段式\n").exit_code == 0
    assert json.loads(cli("memory", "show", "piped", "--json").stdout)["body"] == "周报格式：三段式\n"
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    bad = save(cli, "latin", "--body-file", str(latin1))
    assert bad.exit_code == 6 and "not UTF-8" in bad.stderr
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (1024 * 1024 + 1))
    too_big = save(cli, "big", "--body-file", str(big))
    assert too_big.exit_code == 6 and "1 MB" in too_big.stderr
    assert cli("memory", "show", "latin").exit_code == 3 and cli("memory", "show", "big").exit_code == 3
    both = save(cli, "both", "--body", "x", "--body-file", str(big))
    assert both.exit_code == 2
    assert save(cli, "missing", "--body-file", str(tmp_path / "nope.md")).exit_code == 3


def test_update_never_reads_stdin_implicitly(cli) -> None:
    save(cli, "tea", "--body", "keep me")
    cli("memory", "update", "tea", "--description", "Drinks white tea", input="")
    assert json.loads(cli("memory", "show", "tea", "--json").stdout)["body"] == "keep me"
    cli("memory", "update", "tea", "--body-file", "-", input="replaced")
    assert json.loads(cli("memory", "show", "tea", "--json").stdout)["body"] == "replaced"


def test_malformed_record_is_reported_by_name_and_show_explains(cli, vault: Vault) -> None:
    save(cli)
    broken = vault.root / "memory" / "demo" / "broken.md"
    broken.write_text("---\nname: broken\ndescription: [unclosed\n---\n")
    listed = cli("memory", "list", "--json")
    assert listed.exit_code == 0
    assert [r["name"] for r in json.loads(listed.stdout)["records"]] == ["tea"]
    assert "memory/demo/broken.md" in listed.stderr
    shown = cli("memory", "show", "broken")
    assert shown.exit_code == 6 and "broken frontmatter YAML" in shown.stderr
    assert broken.read_text() == "---\nname: broken\ndescription: [unclosed\n---\n"


def test_clear_refuses_without_yes_when_stdin_is_not_a_terminal(cli) -> None:
    save(cli)
    refused = cli("memory", "clear", "--json")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert json.loads(cli("memory", "list", "--json").stdout)["records"]
    cleared = json.loads(cli("memory", "clear", "--yes", "--json").stdout)
    assert cleared == {"user": "demo", "removed": ["tea"], "not_removed": []}


def test_user_from_option_env_and_config(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("--user", "alice", "memory", "save", "a", "-t", "user", "-d", "alice's")
    monkeypatch.setenv("AIBUDDY_USER", "bob")
    cli("memory", "save", "b", "-t", "user", "-d", "bob's")
    assert [r["name"] for r in json.loads(cli("memory", "list", "--json").stdout)["records"]] == ["b"]
    assert [
        r["name"] for r in json.loads(cli("--user", "alice", "memory", "list", "--json").stdout)["records"]
    ] == ["a"]
    monkeypatch.delenv("AIBUDDY_USER")
    assert json.loads(cli("memory", "list", "--json").stdout)["user"] == "demo"


def test_no_vault_is_not_found(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIBUDDY_VAULT")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    result = cli("memory", "list", "--json")
    assert result.exit_code == 3 and "aibuddy init" in json.loads(result.stdout)["error"]["message"]


@pytest.mark.process
def test_init_creates_a_vault_the_tool_then_finds(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIBUDDY_VAULT")
    result = cli("--user", "zoe", "init", str(tmp_path / "fresh"), "--json")
    assert json.loads(result.stdout)["default_user"] == "zoe"
    monkeypatch.chdir(tmp_path / "fresh" / "memory")
    assert json.loads(cli("memory", "list", "--json").stdout)["user"] == "zoe"
    assert cli("init", str(tmp_path / "fresh")).exit_code == 4


def test_every_command_has_help(cli) -> None:
    for group in ((), ("memory",)):
        assert cli(*group, "--help").exit_code == 0
    for command in ("save", "update", "delete", "show", "list", "manifest", "recall", "clear"):
        result = cli("memory", command, "--help")
        assert result.exit_code == 0 and len(result.stdout) > 100


@pytest.mark.parametrize(
    "args, message",
    [
        (["memory", "list", "--bogus", "--json"], "No such option: --bogus"),
        (["memory", "recall", "--json"], "Missing argument"),
        (["memory", "recall", "x", "--limit", "zero", "--json"], "zero"),
    ],
)
def test_usage_errors_are_json_documents_too(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, capsys, args, message
) -> None:
    from aibuddy_cli.__main__ import main

    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    assert main(args) == 2
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["error"]["code"] == "usage" and message in document["error"]["message"]
    assert "Usage: aibuddy" in captured.err


def test_main_returns_the_exit_code_of_typed_errors(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from aibuddy_cli.__main__ import main

    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    assert main(["memory", "show", "nope", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "not_found"
    assert main(["--version"]) == 0


def test_os_errors_get_clean_exit_codes(cli, vault: Vault, tmp_path: Path) -> None:
    (vault.root / "memory" / "demo" / "x.md").mkdir(parents=True)
    shown = cli("memory", "show", "x", "--json")
    assert shown.exit_code == 6 and json.loads(shown.stdout)["error"]["code"] == "invalid_input"
    not_a_vault = tmp_path / "file"
    not_a_vault.write_text("")
    result = cli("--vault", str(not_a_vault), "memory", "list", "--json")
    assert result.exit_code == 3
    folder = cli("memory", "extract", "--transcript", str(tmp_path), "--json")
    assert folder.exit_code == 6
