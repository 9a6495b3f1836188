"""Memory records after git: recency that survives a clone, merge conflicts, hand-written headers
edited line by line, control characters, and a folder where a record file should be."""

from __future__ import annotations

import calendar
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import record_path
from helpers import write_record_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.extraction import Extractor, Message
from aibuddy_cli.memory.records import MemoryRecord, parse_record, render_record
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def small_window(vault: Vault) -> None:
    """A 5-line recall window with no lines reserved for lexical matches: recency alone decides."""
    config = vault.root / "aibuddy.toml"
    text = config.read_text()
    assert "window = 200" in text
    config.write_text(text.replace("window = 200", "window = 5\nlexical_share = 0"))


def epoch(stamp: str) -> int:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


# --- recency survives a clone ------------------------------------------------------------

# Twelve records updated on different days; the newest ones are neither the first nor the last
# by name, so neither a checkout's file order nor a tie broken by name can pass for recency.
DAYS = {"alpha": 3, "bravo": 11, "charlie": 7, "delta": 1, "echo": 12, "foxtrot": 5, "golf": 9}
DAYS |= {"hotel": 2, "india": 10, "juliet": 4, "kilo": 6, "lima": 8}


def stock_history(vault: Vault) -> None:
    """Records as a vault's history left them: header dates, and file mtimes that match them."""
    for name, day in DAYS.items():
        stamp = f"2026-03-{day:02d}T10:00:00Z"
        record = MemoryRecord(
            name=name,
            description=f"Note {name} about budgets",
            type="project",
            body=f"{name}\n",
            created=stamp,
            updated=stamp,
        )
        path = write(vault, name, render_record(record))
        os.utime(path, (epoch(stamp), epoch(stamp)))


def window(vault: Vault) -> list[tuple[str, str]]:
    lines = Session(Vault.open(vault.root), "demo", environ={}).memory.manifest().lines
    return [(line.name, line.modified) for line in lines]


@pytest.mark.process
@needs_git
def test_the_recall_window_and_its_dates_are_the_same_after_a_git_clone(vault: Vault, tmp_path: Path) -> None:
    small_window(vault)
    stock_history(vault)
    # An old record recalled today: lastRecalledAt keeps it in the window, in every clone.
    memory = Session(vault, "demo", environ={}).memory
    assert [r.name for r in memory.recall("delta").records] == ["delta"]
    recalled_on = parse_record("delta", record_path(vault, "delta").read_text()).last_recalled_at
    assert recalled_on is not None
    before = window(vault)
    assert [name for name, _ in before] == ["delta", "echo", "bravo", "india", "golf"]
    assert before[0][1] == recalled_on[:10] and before[1][1] == "2026-03-12"

    assert git(vault.root, "init", "-q").returncode == 0
    assert git(vault.root, "add", "-A").returncode == 0
    assert git(vault.root, "commit", "-q", "-m", "vault").returncode == 0
    clone = tmp_path / "clone"
    assert git(tmp_path, "clone", "-q", str(vault.root), str(clone)).returncode == 0
    assert not (clone / ".aibuddy").exists()  # the derived index does not travel
    cloned = Vault.open(clone)
    assert window(cloned) == before
    # However the checkout happened to order its writes: every mtime is the checkout time.
    now = time.time()
    for path in (clone / "memory" / "demo").iterdir():
        os.utime(path, (now, now))
    assert window(cloned) == before


def test_the_manifest_date_is_the_records_own_not_the_files(vault: Vault) -> None:
    stamp = "2021-06-30T08:00:00Z"
    record = MemoryRecord(
        name="tea", description="Drinks green tea", type="user", body="", created=stamp, updated=stamp
    )
    write(vault, "tea", render_record(record))  # mtime: now
    lines = Session(vault, "demo", environ={}).memory.manifest().lines
    assert [(line.name, line.modified) for line in lines] == [("tea", "2021-06-30")]
    assert lines[0].render() == "[user] tea.md (2021-06-30) Drinks green tea"


def test_a_record_without_dates_goes_by_its_files_mtime(vault: Vault) -> None:
    small_window(vault)
    stock_history(vault)
    undated = write(vault, "undated", "---\nname: undated\ndescription: No dates at all\ntype: user\n---\n")
    old = epoch("2026-03-06T12:00:00Z")  # between kilo (6th, 10:00) and foxtrot (5th)
    os.utime(undated, (old, old))
    names = [name for name, _ in window(vault)]
    assert names == ["echo", "bravo", "india", "golf", "lima"]
    os.utime(undated, None)  # touched now: the newest
    assert [name for name, _ in window(vault)][0] == "undated"


# --- merge conflicts ---------------------------------------------------------------------

HEADER_CONFLICT = (
    "---\nname: tea\n<<<<<<< HEAD\ndescription: Drinks green tea\n=======\n"
    "description: Drinks black tea\n>>>>>>> other-laptop\ntype: user\n---\nTea.\n"
)
BODY_CONFLICT = (
    "---\nname: tea\ndescription: Drinks tea\ntype: user\n---\nTea, every morning.\n"
    "<<<<<<< HEAD\nGreen, no sugar.\n||||||| base\nGreen.\n=======\nGreen, one sugar.\n>>>>>>> other-laptop\n"
)
ADD_ADD_CONFLICT = (  # both clones created the record: git puts the whole file in conflict
    "<<<<<<< HEAD\n---\nname: tea\ndescription: Drinks green tea\ntype: user\n---\nGreen.\n=======\n"
    "---\nname: tea\ndescription: Drinks black tea\ntype: user\n---\nBlack.\n>>>>>>> other-laptop\n"
)
CONFLICTS = {
    "header": (HEADER_CONFLICT, "3-7", "description: Drinks green tea\n", "description: Drinks black tea\n"),
    "body": (BODY_CONFLICT, "7-13", "Green, no sugar.\n", "Green, one sugar.\n"),
    "add/add": (ADD_ADD_CONFLICT, "1-15", None, None),
}


@pytest.mark.parametrize("case", CONFLICTS)
def test_a_record_with_conflict_markers_is_an_unresolved_merge_conflict(cli, vault: Vault, case: str) -> None:
    text, lines, ours, theirs = CONFLICTS[case]
    path = write(vault, "tea", text)
    message = f"unresolved merge conflict in memory/demo/tea.md (lines {lines})"

    listed = cli("memory", "list", "--json")
    assert listed.exit_code == 0
    assert json.loads(listed.stdout)["problems"] == [{"name": "tea", "message": message}]
    assert message in listed.stderr and "YAML" not in listed.stderr

    shown = cli("memory", "show", "tea")
    assert shown.exit_code == 6
    assert shown.stdout == text  # the raw text, markers and both versions
    assert shown.stderr.startswith(f"error: {message}: ")
    assert shown.stderr.count("\n") == 1

    shown = cli("memory", "show", "tea", "--json")
    assert shown.exit_code == 6
    error = json.loads(shown.stdout)["error"]
    assert error["code"] == "merge_conflict" and error["message"].startswith(message)
    assert error["path"] == "memory/demo/tea.md" and error["text"] == text
    (conflict,) = error["conflicts"]
    assert [conflict["ours"]["label"], conflict["theirs"]["label"]] == ["HEAD", "other-laptop"]
    if ours is not None:
        assert (conflict["ours"]["text"], conflict["theirs"]["text"]) == (ours, theirs)

    memory = Session(vault, "demo", environ={}).memory
    recalled = memory.recall("tea")
    assert recalled.records == [] and recalled.problems[0].message == message
    updated = cli("memory", "update", "tea", "--description", "Drinks tea")
    assert updated.exit_code == 6 and message in updated.stderr
    assert path.read_text() == text  # never rewritten


@pytest.mark.process
@needs_git
def test_a_conflict_git_itself_left_is_recognised(vault: Vault, cli) -> None:
    memory = Session(vault, "demo", environ={}).memory
    memory.save("tea", type="user", description="Drinks tea", body="Green.\n")
    root = vault.root
    for args in (
        ("init", "-q"),
        ("add", "-A"),
        ("commit", "-q", "-m", "base"),
        ("checkout", "-q", "-b", "laptop"),
    ):
        assert git(root, *args).returncode == 0
    memory.update("tea", body="Green, one sugar.\n")
    assert git(root, "commit", "-q", "-am", "laptop").returncode == 0
    assert git(root, "checkout", "-q", "main").returncode == 0
    memory.update("tea", body="Green, no sugar.\n")
    assert git(root, "commit", "-q", "-am", "desktop").returncode == 0
    assert git(root, "merge", "-q", "laptop").returncode != 0  # a real conflict in the body
    shown = cli("memory", "show", "tea", "--json")
    assert shown.exit_code == 6
    (conflict,) = json.loads(shown.stdout)["error"]["conflicts"]
    assert conflict["ours"] == {"label": "HEAD", "text": "Green, no sugar.\n"}
    assert conflict["theirs"] == {"label": "laptop", "text": "Green, one sugar.\n"}


def test_markers_in_a_code_block_and_a_heading_underline_are_not_a_conflict(memory: MemoryService) -> None:
    body = (
        "Resolving conflicts\n=======\n\n```text\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n```\n"
    )
    memory.save("git-howto", type="reference", description="How to resolve a merge conflict", body=body)
    assert memory.show("git-howto").body == body
    assert memory.list_records().problems == []


# --- a recall edits only the telemetry lines; update keeps what it does not change --------

HAND_WRITTEN = (
    "# my tea notes\n"
    "name: tea\n"
    "description: 'Drinks green tea: no sugar'   # quoted\n"
    'type: "user"\n'
    "tags: [drinks, morning]\n"
    "created: 2026-01-05\n"
)


@pytest.mark.parametrize("bom", ["", "\ufeff"])
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_recall_adds_missing_telemetry_lines_and_touches_nothing_else(
    memory: MemoryService, vault: Vault, bom: str, ending: str
) -> None:
    header = HAND_WRITTEN.replace("\n", ending)
    body = f"Green tea.{ending}  Indented line.{ending}"
    path = write(vault, "tea", f"{bom}---{ending}{header}---{ending}{body}")
    records = memory.recall("green tea").records
    assert [r.name for r in records] == ["tea"]
    stamp = records[0].last_recalled_at
    added = f"recallCount: 1{ending}lastRecalledAt: {stamp}{ending}"
    assert path.read_bytes().decode() == f"{bom}---{ending}{header}{added}---{ending}{body}"
    memory.recall("green tea")  # the second time the lines are there and change in place
    text = path.read_bytes().decode()
    assert text.startswith(f"{bom}---{ending}{header}recallCount: 2{ending}lastRecalledAt: ")


def test_a_recall_changes_only_the_values_of_existing_telemetry_lines(
    memory: MemoryService, vault: Vault
) -> None:
    text = (
        "---\nname: tea\nrecallCount: 4   # how often recall returned it\nlastRecalledAt: 2026-01-01\n"
        "description: Drinks green tea\ntype: user\n---\nTea.\n"
    )
    path = write(vault, "tea", text)
    stamp = memory.recall("green tea").records[0].last_recalled_at
    assert path.read_text() == text.replace("4   #", "5   #").replace("2026-01-01", stamp or "?")


def test_update_keeps_crlf_and_the_lines_of_keys_it_does_not_change(
    cli, vault: Vault, memory: MemoryService
) -> None:
    header = (
        "---\r\n# kept by hand\r\nname: tea\r\ntype: user  # who I am\r\n"
        "description: 'Drinks green tea'\r\ntags: [drinks, morning]\r\ncreated: 2026-01-05\r\n"
        "updated: 2026-01-05T10:00:00Z\r\nrecallCount: 3\r\nlastRecalledAt: null\r\n---\r\n"
    )
    path = write(vault, "tea", header + "Green tea.\r\n")
    result = cli("memory", "update", "tea", "--type", "feedback", "--body", "Black tea.\nStrong.\n", "--json")
    assert result.exit_code == 0, result.stderr
    updated = json.loads(result.stdout)["record"]["updated"]
    expected = header.replace("type: user  #", "type: feedback  #").replace(
        "updated: 2026-01-05T10:00:00Z", f"updated: {updated}"
    )
    assert path.read_bytes() == (expected + "Black tea.\r\nStrong.\r\n").encode()
    assert memory.show("tea").body == "Black tea.\r\nStrong.\r\n"
    # The same body again, as a script would send it: nothing changed, nothing written.
    again = cli("memory", "update", "tea", "--body", "Black tea.\nStrong.\n")
    assert again.exit_code == 0 and "unchanged" in again.stdout


def test_update_of_a_header_without_updated_adds_it_at_the_end(memory: MemoryService, vault: Vault) -> None:
    text = "---\nname: tea\ndescription: Drinks green tea # short\ntype: user\n---\nTea.\n"
    path = write(vault, "tea", text)
    record = memory.update("tea", description="Drinks black tea").record
    assert path.read_text() == (
        f"---\nname: tea\ndescription: Drinks black tea # short\ntype: user\nupdated: {record.updated}\n"
        "---\nTea.\n"
    )


# --- control characters ------------------------------------------------------------------

CONTROL_DESCRIPTIONS = {
    "ANSI escape": ("Drinks \x1b[31mred\x1b[0m tea", "\\x1b"),
    "BEL": ("Drinks tea\x07", "\\x07"),
    "TAB": ("Drinks\tgreen tea", "\\t"),
    "newline": ("Drinks green tea\nsecond line", "\\n"),
    "C1 CSI": ("Drinks \x9b2J tea", "\\x9b"),
    "NUL": ("Drinks\x00tea", "\\x00"),
}


def has_raw_control(text: str) -> bool:
    return any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in text)


@pytest.mark.parametrize("case", CONTROL_DESCRIPTIONS)
def test_descriptions_with_control_characters_are_refused_from_the_cli(cli, vault: Vault, case: str) -> None:
    description, escaped = CONTROL_DESCRIPTIONS[case]
    saved = cli("memory", "save", "tea", "--type", "user", "--description", description)
    assert saved.exit_code == 6
    assert "control character" in saved.stderr and escaped in saved.stderr
    assert saved.stderr.count("\n") == 1 and not has_raw_control(saved.stderr)
    assert not record_path(vault, "tea").exists()

    assert cli("memory", "save", "tea", "--type", "user", "--description", "Drinks tea").exit_code == 0
    before = record_path(vault, "tea").read_bytes()
    updated = cli("memory", "update", "tea", "--description", description, "--json")
    assert updated.exit_code == 6
    assert json.loads(updated.stdout)["error"]["code"] == "invalid_input"
    assert record_path(vault, "tea").read_bytes() == before


@pytest.mark.parametrize("name", ["tea\x1b[31m", "tea\n", "te\ta", "tea\x07", "tea\x85"])
def test_record_names_with_control_characters_are_refused_and_shown_escaped(
    cli, vault: Vault, name: str
) -> None:
    result = cli("memory", "save", name, "--type", "user", "--description", "Drinks tea")
    assert result.exit_code == 6
    assert "invalid record name" in result.stderr
    assert result.stderr.count("\n") == 1 and not has_raw_control(result.stderr)
    assert not list((vault.root / "memory").rglob("*.md"))


@pytest.fixture
def modelled(vault: Vault, model_env: dict[str, str]) -> MemoryService:
    return Session(vault, "demo", environ=model_env).memory


@pytest.mark.process
def test_extraction_drops_a_candidate_with_control_characters(
    modelled: MemoryService, fake_openai: FakeOpenAI
) -> None:
    bad = {
        "type": "feedback",
        "name": "report-format",
        "description": "Use three sections\x1b]0;pwned\x07 in every weekly report",
        "body": "Done, next, risks.",
        "salience": 0.9,
        "durable": True,
        "recoverable": False,
    }
    fake_openai.reply_json({"candidates": [bad, {**bad, "name": "report\x1b[2J", "description": "Plain"}]})
    turns = ["Write the weekly report.", "Here it is.", "From now on always use three sections.", "Noted."]
    messages = [Message("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(turns)]
    result = Extractor(modelled).run(messages)
    assert result.written == [] and modelled.list_records().records == []
    dropped = [d for d in result.decisions if d.step == "candidate"]
    assert [d.outcome for d in dropped] == ["dropped", "dropped"]
    assert "control character" in dropped[0].detail and not has_raw_control(dropped[0].detail)


@pytest.mark.process
def test_a_recall_selection_with_control_characters_is_dropped(
    modelled: MemoryService, fake_openai: FakeOpenAI
) -> None:
    modelled.save("tea", type="user", description="Drinks green tea", body="tea")
    modelled.save("coffee", type="user", description="Drinks coffee", body="coffee")
    fake_openai.reply_json({"selected": ["\ttea.md\n", "tea.md\x1b[2J", "coffee.md"]})
    result = modelled.recall("what do I drink?")
    assert result.method == "model"
    assert [r.name for r in result.records] == ["coffee"]
    assert result.dropped == ["\ttea.md\n", "tea.md\x1b[2J"]


# --- a folder where a record file should be ----------------------------------------------


def test_a_folder_where_a_record_should_be_is_named_in_list_and_show(cli, vault: Vault) -> None:
    assert cli("memory", "save", "tea", "--type", "user", "--description", "Drinks tea").exit_code == 0
    (vault.root / "memory" / "demo" / "x.md").mkdir()
    message = "memory/demo/x.md is a folder, not a record file"

    listed = cli("memory", "list")
    assert listed.exit_code == 0
    assert listed.stdout.startswith("tea\t") and message in listed.stderr
    listed = cli("memory", "list", "--json")
    assert json.loads(listed.stdout)["problems"] == [{"name": "x", "message": message}]

    shown = cli("memory", "show", "x")
    assert shown.exit_code == 6 and shown.stderr == f"error: {message}\n"
    shown = cli("memory", "show", "x", "--json")
    assert json.loads(shown.stdout)["error"] == {"code": "invalid_input", "message": message}
    assert "Traceback" not in shown.stderr
