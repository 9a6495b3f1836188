"""What the CLI says: misplaced options explained, help text shown as written, and vault content
that never drives the terminal (control characters escaped in plain, Rich and JSON output)."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from helpers import run_in_process

import aibuddy_cli
from aibuddy_cli.__main__ import main
from aibuddy_cli.app.session import Session
from aibuddy_cli.cli.app import app
from aibuddy_cli.vault import Vault

HOSTILE = "Evil \x1b[31mred\x07 bell \x7f del \x9b csi"
# What must never reach a terminal raw: C0 controls other than newline and tab, DEL, C1.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def in_vault(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    monkeypatch.setenv("AIBUDDY_VAULT", str(vault.root))
    return vault


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- options in the wrong place -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "memory", "list"], "--json goes after the command: aibuddy memory list --json"),
        (["memory", "--json", "list"], "--json goes after the command: aibuddy memory list --json"),
        (
            ["--json", "memory", "recall", "green tea"],
            "--json goes after the command: aibuddy memory recall 'green tea' --json",
        ),
        (["--json", "memory"], "--json goes after the command, e.g. aibuddy memory list --json"),
        (["memory", "--vault", "V", "list"], "--vault goes before the group: aibuddy --vault V memory list"),
        (["memory", "list", "--vault", "V"], "--vault goes before the group: aibuddy --vault V memory list"),
        (["memory", "list", "--vault=V"], "--vault goes before the group: aibuddy --vault=V memory list"),
        (
            ["memory", "recall", "tea", "--user", "bob", "--json"],
            "--user goes before the group: aibuddy --user bob memory recall tea --json",
        ),
        (
            ["kb", "search", "x", "--user", "bob"],
            "--user goes before the group: aibuddy --user bob kb search x",
        ),
    ],
)
def test_a_misplaced_option_is_a_usage_error_that_says_where_it_goes(
    in_vault: Vault, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run_main(capsys, *args)
    assert code == 2
    assert f"Error: {message}\n" in err and "Possible options" not in err
    if "--json" in args:
        assert json.loads(out) == {"error": {"code": "usage", "message": message}}


def test_options_in_their_place_still_work(in_vault: Vault, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(
        capsys, "--vault", str(in_vault.root), "--user", "demo", "memory", "list", "--json"
    )
    assert code == 0 and json.loads(out)["user"] == "demo"


def test_an_unknown_option_is_still_reported_as_unknown(
    in_vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(capsys, "memory", "list", "--jsn")
    assert code == 2 and "No such option: --jsn" in err and "--json" in err


# --- help text is shown as written ------------------------------------------------------------


def test_kb_read_help_shows_the_config_key(cli) -> None:
    text = " ".join(cli("kb", "read", "--help").stdout.replace("│", " ").split())
    assert "(default [knowledge] page_chars)" in text


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    for name in command.list_commands(None) if hasattr(command, "commands") else ():
        found += _commands(command.get_command(None, name), (*path, name))
    return found


def test_no_help_text_loses_a_bracketed_word(cli) -> None:
    """`[knowledge]`, `[models]`, `[extraction]`… in any help text show as written (Rich would
    otherwise read them as markup and drop them)."""
    for path, command in _commands(typer.main.get_command(app)):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        words = {word for text in texts for word in re.findall(r"\[[a-z_.]+\]", text)}
        if not words:
            continue
        shown = cli(*path, "--help").stdout
        for word in words:
            assert word in shown, f"aibuddy {' '.join(path)} --help drops {word}"


def test_a_groups_command_list_shows_each_summary_as_one_line() -> None:
    """A command's first paragraph spans docstring lines; the group's list must not break it
    where the source did (`table --help` showed "…, if nothing" / "changed them since.")."""
    for path, command in _commands(typer.main.get_command(app)):
        short = (command.short_help or command.help or "").strip().split("\n\n")[0]  # what Rich shows
        assert "\n" not in short, f"aibuddy {' '.join(path)}: {short!r}"


# --- control characters from the vault are shown escaped ----------------------------------------


def write_record(vault: Vault, name: str, description: str, body: str) -> None:
    folder = vault.root / "memory" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    quoted = json.dumps(description)  # a YAML double-quoted string: \u escapes as in JSON
    (folder / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: {quoted}\ntype: user\nprovenance: manual\n"
        "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\nrecallCount: 0\n"
        f"lastRecalledAt: null\n---\n{body}",
        newline="",
    )


@pytest.fixture
def hostile(in_vault: Vault) -> Vault:
    write_record(
        in_vault, "evil", HOSTILE + "\nsecond\tline", "body \x1b[2J cleared\r\nnext\rover\n\ttabbed\n"
    )
    write_record(in_vault, "tea", "Drinks green tea", "No sugar.\n")
    return in_vault


def test_plain_listing_escapes_control_characters_and_keeps_one_line_per_record(hostile: Vault, cli) -> None:
    out = cli("memory", "list").stdout
    assert not RAW_CONTROL.search(out)
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.count("\t") == 5 for line in lines)
    assert "Evil \\x1b[31mred\\x07 bell \\x7f del \\x9b csi\\nsecond\\tline" in out


def test_plain_show_escapes_the_body_but_keeps_its_lines(hostile: Vault, cli) -> None:
    out = cli("memory", "show", "evil").stdout_bytes.decode()
    assert not RAW_CONTROL.search(out.replace("\r\n", "\n"))
    assert "body \\x1b[2J cleared\r\nnext\\rover\n\ttabbed\n" in out  # CRLF and tab are layout


def test_recall_and_manifest_escape_control_characters(
    hostile: Vault, cli, capsys: pytest.CaptureFixture[str]
) -> None:
    code, recalled, _ = run_main(capsys, "memory", "recall", "evil red bell")  # the fast path
    assert code == 0 and "## evil [user] Evil \\x1b[31mred" in recalled
    manifest = cli("memory", "manifest").stdout
    for out in (recalled.replace("\r\n", "\n"), cli("memory", "recall", "evil red bell").stdout, manifest):
        assert not RAW_CONTROL.search(out.replace("\r\n", "\n"))
    assert len(manifest.splitlines()) == 2


def test_json_escapes_del_and_c1_too_and_keeps_the_text(hostile: Vault, cli) -> None:
    out = cli("memory", "list", "--json").stdout
    assert not RAW_CONTROL.search(out)
    assert "\\u001b" in out and "\\u007f" in out and "\\u009b" in out
    assert json.loads(out)["records"][0]["description"] == HOSTILE + "\nsecond\tline"


def test_warnings_escape_a_hostile_file_name(in_vault: Vault, cli) -> None:
    folder = in_vault.root / "memory" / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bad\x1b[2Jname.md").write_text("not a record\n")
    result = cli("memory", "list")
    assert result.exit_code == 0
    assert "bad\\x1b[2Jname.md" in result.stderr and not RAW_CONTROL.search(result.stderr)


def test_document_titles_and_task_goals_are_escaped(
    in_vault: Vault, cli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "evil.md"
    source.write_text("# Evil \x1b[31mtitle\x07\n\nbody \x1b]0;pwned\x07 text\n\n## Sub \x9b part\n\nmore\n")
    assert cli("kb", "import", str(source)).exit_code == 0
    assert cli("kb", "publish", "evil").exit_code == 0
    outputs = [
        cli("kb", "list").stdout,
        cli("kb", "show", "evil").stdout,
        cli("kb", "outline", "evil").stdout,
        cli("kb", "search", "pwned").stdout,
        cli("kb", "read", "evil", "evil-31mtitle").stdout,
        run_main(capsys, "kb", "read", "evil#evil-31mtitle")[1],  # the fast path
    ]
    task = json.loads(cli("task", "new", "goal \x1b[31m red", "--json").stdout)["id"]
    outputs += [cli("task", "list").stdout, cli("task", "show", task).stdout]
    for out in outputs:
        assert out and not RAW_CONTROL.search(out), out
    assert "Evil \\x1b[31mtitle\\x07" in outputs[0] and "goal \\x1b[31m red" in outputs[-1]


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """The terminal Rich prints to, without colours: any escape sequence on it came from the vault."""
    from rich.console import Console

    from aibuddy_cli.cli import rich_output

    out = io.StringIO()
    monkeypatch.setattr(rich_output, "console", Console(file=out, color_system=None, width=300))
    return out


def test_terminal_memory_output_shows_markup_and_control_characters_as_written(
    hostile: Vault, screen: io.StringIO
) -> None:
    from aibuddy_cli.cli import rich_output

    write_record(hostile, "markup", "[bold red]shout[/] [link=https://example.com]x[/link]", "ok\n")
    memory = Session(hostile, "demo", environ={}).memory
    rich_output.show_list(memory.list_records())
    rich_output.show_manifest(memory.manifest(None))
    rich_output.show_record(memory.show("evil"))
    rich_output.show_record(memory.show("markup"))
    out = screen.getvalue()
    assert not RAW_CONTROL.search(out)
    assert "\\x1b[31mred" in out and "\\x1b[2J cleared" in out
    assert "[bold red]shout[/]" in out and "[link=https://example.com]x[/link]" in out and "[user]" in out


def test_terminal_document_list_shows_titles_as_written(
    in_vault: Vault, screen: io.StringIO, tmp_path: Path
) -> None:
    from aibuddy_cli.cli import rich_output

    source = tmp_path / "evil.md"
    source.write_text("# Evil \x1b[31mtitle [bold]x[/bold]\n\nbody\n")
    knowledge = Session(in_vault, "demo").knowledge
    knowledge.import_paths([str(source)], scope="personal", recursive=False)
    rich_output.show_docs(knowledge.documents("all"))
    out = screen.getvalue()
    assert not RAW_CONTROL.search(out)
    assert "\\x1b[31mtitle [bold]x[/bold]" in out


def test_help_lists_every_environment_variable_the_package_reads() -> None:
    from aibuddy_cli.cli.app import ENVIRONMENT
    from aibuddy_cli.config import ROLES

    package = Path(aibuddy_cli.__file__).parent
    sources = (path.read_text(encoding="utf-8") for path in package.rglob("*.py"))
    read = {name for source in sources for name in re.findall(r"AIBUDDY_[A-Z_]+", source)}
    roles = {f"AIBUDDY_MODEL_{role.upper()}" for role in ROLES}
    for name in sorted(read - roles):
        assert name in ENVIRONMENT, name  # a prefix (AIBUDDY_MODEL_) as the start of its pattern
    assert all(role.upper() in ENVIRONMENT for role in ROLES)
    shown = run_in_process("-h")
    assert shown.returncode == 0 and b"AIBUDDY_WORKER_IDLE" in shown.stdout and b"--help" in shown.stdout


def test_shell_completion_completes_groups_and_commands() -> None:
    """`--show-completion SHELL` prints the script; the shell asks through _AIBUDDY_COMPLETE and
    gets the commands of the group it is in (groups are built when named, completion too)."""
    # Typer's own switch for tests: the shell named, not detected from this process's parents.
    named = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = run_in_process("--show-completion", "bash", env=named)
    assert script.returncode == 0 and b"_aibuddy_completion" in script.stdout

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        asked = {**os.environ, "_AIBUDDY_COMPLETE": "complete_bash", "COMP_WORDS": line}
        asked["COMP_CWORD"] = str(len(words) - 1)
        result = run_in_process(env=asked)
        assert result.returncode == 0, result.stderr
        return result.stdout.decode().split()

    assert complete("aibuddy mem") == ["memory"]
    assert complete("aibuddy memory re") == ["recall", "revert", "reject", "review"]
    assert "add-rows" not in complete("aibuddy table ") and "update-rows" in complete("aibuddy table ")
