"""Citations are addresses: `kb read DOC#ANCHOR` reads what aibuddy prints, on both routes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import child_env, run_aibuddy
from typer.testing import CliRunner

from aibuddy_cli.app.session import Session
from aibuddy_cli.cli import fastpath
from aibuddy_cli.cli.app import app
from aibuddy_cli.knowledge.documents import split_citation
from aibuddy_cli.vault import Vault

GUIDE = """# Guide

Intro.

## `?` operator

The `?` operator returns early with the error.

## 更新字符串

使用 push_str 附加字符串。

## Install steps

Run make, then make test.
"""

NOTES = "# Notes\n\n## Daily log\n\nWrote tests.\n"


@pytest.fixture
def kb(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """A system document `guide` (with a `-operator` and a CJK anchor), a personal one `notes`,
    and a task t1 with both attached."""
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    (tmp_path / "notes.md").write_text(NOTES, encoding="utf-8")
    service = Session(vault, "demo", environ={}).knowledge
    service.import_paths([str(tmp_path / "guide.md")], scope="system")
    service.import_paths([str(tmp_path / "notes.md")], scope="personal")
    service.publish("guide", "notes")
    anchors = [section.anchor for section in service.outline("guide")[1].outline]
    assert anchors == ["guide", "-operator", "更新字符串", "install-steps"]
    tasks = Session(vault, "demo").tasks
    tasks.set_attached(tasks.new("cite").id, {"system/guide": True, "personal/demo/notes": True})
    assert tasks.get("t1").attached
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    return vault


@pytest.fixture
def env(kb: Vault) -> dict[str, str]:
    return child_env(kb.root)


# (arguments after `kb read`, the document and anchor they name)
CITED = [
    (["guide#install-steps", "--json"], "system/guide", "install-steps"),
    (["system/guide#更新字符串", "--json"], "system/guide", "更新字符串"),
    (["guide#-operator", "--json"], "system/guide", "-operator"),
    (["--json", "system/guide#-operator"], "system/guide", "-operator"),
    (["guide", "-operator", "--json"], "system/guide", "-operator"),
    (["--json", "guide", "-operator"], "system/guide", "-operator"),
    (["personal/demo/notes#daily-log", "--json"], "personal/demo/notes", "daily-log"),
    (["--task", "t1", "guide#-operator", "--max-chars", "20", "--json"], "system/guide", "-operator"),
    (["guide#-operator", "--status=ready", "--json"], "system/guide", "-operator"),
    (
        ["guide", "-operator", "--task", "t1", "--max-chars", "20", "--status", "ready"],
        "system/guide",
        "-operator",
    ),
    (["guide#-operator"], "system/guide", "-operator"),
    (["guide", "更新字符串"], "system/guide", "更新字符串"),
]


def _spelled_out(args: list[str], doc: str, anchor: str) -> list[str]:
    """The same call spelled as DOC and ANCHOR behind `--`, which worked before citations did."""
    takes_value = ("--task", "--max-chars", "--status", "--cursor")
    flags = [a for a in args if a.startswith("--") and a not in takes_value]
    pairs = [x for i, a in enumerate(args) if a in takes_value for x in (a, args[i + 1])]
    return ["kb", "read", *flags, *pairs, "--", doc, anchor]


def _typer(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def _fast(args: list[str]) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return fastpath.run(args, out, err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("args", "doc", "anchor"), CITED)
def test_the_typer_app_reads_a_citation(kb: Vault, cli: Any, args: list[str], doc: str, anchor: str) -> None:
    result = cli("kb", "read", *args)
    assert result.exit_code == 0, result.stderr
    if "--json" in args:
        page = json.loads(result.stdout)
        assert (page["doc"], page["anchor"]) == (doc, anchor)
    else:
        assert f"-- {doc}#{anchor} " in result.stdout
    assert _typer(_spelled_out(args, doc, anchor)) == (0, result.stdout, result.stderr)


@pytest.mark.parametrize(("args", "doc", "anchor"), CITED)
def test_the_fast_path_reads_a_citation_as_the_typer_app_does(
    kb: Vault, args: list[str], doc: str, anchor: str
) -> None:
    fast = _fast(["kb", "read", *args])
    assert fast[0] is not None, "the fast path should handle this call"
    assert fast == _typer(["kb", "read", *args]) == _typer(_spelled_out(args, doc, anchor))


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "doc", "anchor"),
    [
        (["guide#install-steps", "--json"], "system/guide", "install-steps"),
        (["guide#更新字符串", "--json"], "system/guide", "更新字符串"),
        (["guide#-operator", "--json"], "system/guide", "-operator"),
        (["guide", "-operator", "--json"], "system/guide", "-operator"),
        (["--json", "--task", "t1", "personal/demo/notes#daily-log"], "personal/demo/notes", "daily-log"),
    ],
)
def test_the_installed_script_reads_a_citation(
    aibuddy_exe: list[str], env: dict[str, str], args: list[str], doc: str, anchor: str
) -> None:
    result = run_aibuddy(aibuddy_exe, "kb", "read", *args, env=env)
    assert result.returncode == 0, result.stderr
    page = json.loads(result.stdout)
    assert (page["doc"], page["anchor"]) == (doc, anchor)
    assert result.stdout.decode() == _typer(["kb", "read", *args])[1]


def test_a_cursor_continues_a_cited_section(kb: Vault, cli: Any) -> None:
    first = json.loads(cli("kb", "read", "guide#-operator", "--max-chars", "20", "--json").stdout)
    assert first["next_cursor"]
    args = ["kb", "read", "--cursor", first["next_cursor"], "guide#-operator", "--json"]
    rest = json.loads(cli(*args).stdout)
    assert first["text"] + rest["text"] == GUIDE.split("## 更新字符串")[0].split("Intro.\n\n")[1]
    assert _fast(args) == _typer(args)


# (arguments after `kb read`, a piece of the usage message)
USAGE_ERRORS = [
    (["guide"], "DOC#ANCHOR"),
    (["guide#"], "DOC#ANCHOR"),
    (["#-operator"], "DOC#ANCHOR"),
    (["guide#-operator", "-operator"], "DOC#ANCHOR"),
    (["guide#-operator", "--bogus"], "No such option: --bogus"),
    (["guide", "-operator", "--bogus"], "No such option: --bogus"),
    (["--bogus", "guide#-operator"], "No such option: --bogus"),
]


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_usage_errors_of_the_typer_app(kb: Vault, cli: Any, args: list[str], message: str) -> None:
    result = cli("kb", "read", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in " ".join(result.stderr.split())


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_the_fast_path_leaves_usage_errors_to_typer(kb: Vault, args: list[str], message: str) -> None:
    assert fastpath.run(["kb", "read", *args, "--json"], io.StringIO(), io.StringIO()) is None


@pytest.mark.process
@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_usage_errors_of_the_installed_script_with_json(
    aibuddy_exe: list[str], env: dict[str, str], args: list[str], message: str
) -> None:
    result = run_aibuddy(aibuddy_exe, "kb", "read", *args, "--json", env=env)
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "usage" and message in error["message"]
    assert message in " ".join(result.stderr.decode().split())


@pytest.mark.process
def test_help_describes_both_forms(kb: Vault, cli: Any, aibuddy_exe: list[str], env: dict[str, str]) -> None:
    result = cli("kb", "read", "--help")
    assert result.exit_code == 0
    assert "DOC ANCHOR" in result.stdout and "DOC#ANCHOR" in result.stdout
    script = run_aibuddy(aibuddy_exe, "kb", "read", "guide#-operator", "--help", env=env)
    assert script.returncode == 0 and b"DOC#ANCHOR" in script.stdout


@pytest.mark.parametrize(
    ("citation", "parts"),
    [
        ("guide#install", ("guide", "install")),
        ("system/body#-operator", ("system/body", "-operator")),
        ("personal/alice/notes#更新字符串", ("personal/alice/notes", "更新字符串")),
        ("doc#a_b-c#d", ("doc", "a_b-c#d")),
        ("doc", None),
        ("doc#", None),
        ("#anchor", None),
        ("", None),
    ],
)
def test_split_citation(citation: str, parts: tuple[str, str] | None) -> None:
    assert split_citation(citation) == parts
