"""Records that age well, part 1: an `expires` header takes a record out of the recall window and
recall from that date on (the date is exclusive, UTC); nothing is deleted by it."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from helpers import child_env, record_path, run_in_process
from helpers import write_record_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput, MalformedRecord
from aibuddy_cli.memory import expiry
from aibuddy_cli.memory.extraction import Extractor
from aibuddy_cli.memory.records import MemoryRecord, parse_record, render_record
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

PLAIN = "---\nname: trip\ndescription: Trip to Rome in March\ntype: project\n"


def at(monkeypatch: pytest.MonkeyPatch, stamp: str) -> None:
    """Judge expiry as if it were this moment (UTC)."""
    moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    monkeypatch.setattr(expiry, "now", lambda: moment)


# --- the header ------------------------------------------------------------------------------


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "frontmatter"])
@pytest.mark.parametrize(
    "line, value",
    [
        ("expires: 2027-03-01", "2027-03-01"),
        ("expires: '2027-03-01'", "2027-03-01"),
        ("expires: 2027-03-01T12:30:00Z", "2027-03-01T12:30:00Z"),
        ("expires: never", None),
        ("expires: null", None),
        ("expires:", None),
    ],
)
def test_the_expires_header_is_read_the_same_by_both_readers(
    line: str, value: str | None, fast: bool
) -> None:
    record = parse_record("trip", f"{PLAIN}{line}\n---\nRome.\n", fast=fast)
    assert record.expires == value
    assert record.extra == ()


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "frontmatter"])
@pytest.mark.parametrize("value", ["soon", "2027-02-30", "tomorrow", "[2027-03-01]", "3"])
def test_an_expires_that_is_no_date_makes_the_record_malformed(value: str, fast: bool) -> None:
    with pytest.raises(MalformedRecord) as raised:
        parse_record("trip", f"{PLAIN}expires: {value}\n---\n", fast=fast)
    assert "expires" in raised.value.message or "out of range" in raised.value.message


def test_a_record_without_expiry_renders_as_it_always_did_and_one_with_it_round_trips() -> None:
    stamp = "2026-11-29T18:00:00Z"
    record = MemoryRecord("trip", "Trip to Rome", "project", "Rome.\n", created=stamp, updated=stamp)
    assert "expires" not in render_record(record)
    dated = record._replace(expires="2027-03-01", extra=(("tags", ["a"]),))
    text = render_record(dated)
    assert "lastRecalledAt: null\nexpires: 2027-03-01\ntags:\n- a\n---\n" in text  # plain, not quoted
    assert parse_record("trip", text) == dated == parse_record("trip", text, fast=False)
    assert render_record(parse_record("trip", text)) == text
    timed = record._replace(expires="2027-03-01T12:30:00Z")
    assert "expires: 2027-03-01T12:30:00Z\n" in render_record(timed)
    assert parse_record("trip", render_record(timed)) == timed


def test_expiry_is_exclusive_and_in_utc() -> None:
    assert not expiry.is_expired("2027-03-01", dt.datetime(2027, 2, 28, 23, 59, 59, tzinfo=dt.UTC))
    assert expiry.is_expired("2027-03-01", dt.datetime(2027, 3, 1, 0, 0, 0, tzinfo=dt.UTC))
    assert not expiry.is_expired(None)
    assert expiry.is_expired("2027-03-01T12:00:00Z", dt.datetime(2027, 3, 1, 12, tzinfo=dt.UTC))


@pytest.mark.parametrize(
    "given, kept",
    [
        ("2027-03-01", "2027-03-01"),
        (" 2027-03-01 ", "2027-03-01"),
        ("30d", "2026-01-31"),
        ("2w", "2026-01-15"),
        ("2027-03-01T13:30:00+01:00", "2027-03-01T12:30:00Z"),
        ("never", None),
        ("NEVER", None),
    ],
)
def test_what_a_person_gives_as_expires(given: str, kept: str | None) -> None:
    assert expiry.parse_expires(given, dt.date(2026, 1, 1)) == kept


@pytest.mark.parametrize("given", ["tomorrow", "0d", "-3d", "2027-13-01", "30", "", "3m", "9999999d"])
def test_a_bad_expires_is_refused(given: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        expiry.parse_expires(given, dt.date(2026, 1, 1))
    assert raised.value.message.startswith("invalid --expires value")


# --- out of the window and of recall, never deleted ------------------------------------------


def stock(memory: MemoryService) -> None:
    memory.save(
        "trip", type="project", description="Trip to Rome in March", body="Rome.\n", expires="2027-03-01"
    )
    memory.save("tea", type="user", description="Drinks green tea", body="Sencha.\n")


def test_an_expired_record_leaves_the_window_and_recall_from_its_date_on(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    stock(memory)
    at(monkeypatch, "2027-02-28T23:59:59Z")
    assert [line.name for line in memory.manifest("rome trip").lines] == ["tea", "trip"]
    assert [r.name for r in memory.recall("trip to rome").records] == ["trip"]
    assert [item.record.name for item in memory.list_records(expired=True).records] == []

    at(monkeypatch, "2027-03-01T00:00:00Z")
    assert [line.name for line in memory.manifest("rome trip").lines] == ["tea"]
    assert memory.recall("trip to rome").records == []
    listed = memory.list_records(expired=False)
    assert [item.record.name for item in listed.records] == ["tea"] and listed.expired_left_out == 1
    assert [item.record.name for item in memory.list_records(expired=True).records] == ["trip"]
    assert [item.record.name for item in memory.list_records().records] == ["tea", "trip"]
    assert memory.show("trip").body == "Rome.\n"  # kept: shown when asked for by name


@pytest.mark.parametrize("date, live", [("9999-12-31", True), ("0001-01-01", False)])
def test_dates_far_away_are_held_as_they_are(memory: MemoryService, date: str, live: bool) -> None:
    memory.save("far", type="user", description="A far date", body="", expires=date)
    assert [line.name for line in memory.manifest().lines] == (["far"] if live else [])
    assert memory.show("far").expires == date


def test_the_cli_saves_lists_and_takes_expiry_away(cli, vault: Vault) -> None:
    saved = cli(
        "memory", "save", "trip", "-t", "project", "-d", "Trip to Rome", "--expires", "2020-01-01", "--json"
    )
    assert saved.exit_code == 0
    assert "trip expires 2020-01-01, which has come: it is out of recall" in saved.stderr
    record = json.loads(saved.stdout)["record"]
    assert (record["expires"], record["expired"]) == ("2020-01-01", True)
    assert cli("memory", "save", "tea", "-t", "user", "-d", "Drinks green tea").exit_code == 0

    listed = cli("memory", "list")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["tea"]
    assert (
        "1 expired record(s) not listed (out of recall, kept): aibuddy memory list --expired" in listed.stderr
    )
    document = json.loads(cli("memory", "list", "--json").stdout)
    assert [r["name"] for r in document["records"]] == ["tea"] and "expires" not in document["records"][0]
    expired = cli("memory", "list", "--expired")
    assert expired.stdout.split("\t")[:4] == ["trip", "project", "manual", "2020-01-01"]
    (shown,) = json.loads(cli("memory", "list", "--expired", "--json").stdout)["records"]
    assert shown["expires"] == "2020-01-01" and shown["expired"] is True
    assert "expires: 2020-01-01\nexpired: true" in cli("memory", "show", "trip").stdout

    path = record_path(vault, "trip")
    assert cli("memory", "update", "trip", "--expires", "never").exit_code == 0
    assert "expires" not in path.read_text()
    assert [line.split("\t")[0] for line in cli("memory", "list").stdout.splitlines()] == ["tea", "trip"]
    assert cli("memory", "update", "trip", "--expires", "never").stdout.endswith("unchanged\n")


@pytest.mark.parametrize("command", [["save", "x", "-t", "user", "-d", "X"], ["update", "tea"]])
def test_a_bad_date_is_one_line_and_exit_6(cli, command: list[str]) -> None:
    assert cli("memory", "save", "tea", "-t", "user", "-d", "Drinks green tea").exit_code == 0
    before = cli("memory", "list", "--json").stdout
    result = cli("memory", *command, "--expires", "next friday")
    assert result.exit_code == 6
    assert result.stderr == (
        "error: invalid --expires value 'next friday': give a date (YYYY-MM-DD), days or weeks from "
        "today (30d, 2w) or never\n"
    )
    assert cli("memory", "list", "--json").stdout == before


def test_a_hand_written_expiry_that_is_no_date_is_reported_never_rewritten(cli, vault: Vault) -> None:
    text = f"{PLAIN}expires: when the trip is over\n---\nRome.\n"
    path = write(vault, "trip", text)
    shown = cli("memory", "show", "trip")
    assert shown.exit_code == 6 and "expires is not a date: 'when the trip is over'" in shown.stderr
    listed = cli("memory", "list")
    assert listed.exit_code == 0 and "skipped malformed record memory/demo/trip.md" in listed.stderr
    assert path.read_text() == text


def test_update_edits_a_hand_written_header_line_by_line(memory: MemoryService, vault: Vault) -> None:
    header = "---\r\n# my trip\r\nname: trip\r\ndescription: 'Trip: Rome'   # quoted\r\ntype: project\r\n"
    path = write(vault, "trip", f"{header}---\r\nRome.\r\n")
    memory.update("trip", expires="2027-03-01")
    text = path.read_bytes().decode()
    assert text.startswith(header) and "expires: 2027-03-01\r\n---\r\nRome.\r\n" in text
    memory.update("trip", expires="2027-04-01")
    assert "expires: 2027-04-01\r\n" in path.read_bytes().decode()
    memory.update("trip", expires="never")
    assert "expires" not in (text := path.read_bytes().decode()) and text.startswith(header)


def test_recall_on_the_fast_path_leaves_expired_records_out(vault: Vault) -> None:
    memory = Session(vault, "demo", environ={}).memory
    memory.save("trip", type="project", description="Trip to Rome", body="Rome.\n", expires="2020-01-01")
    memory.save("trip-plan", type="project", description="Trip to Rome: plan the museums", body="")
    result = run_in_process("memory", "recall", "trip to rome", "--json", env=child_env(vault.root))
    assert result.returncode == 0, result.stderr
    assert [r["name"] for r in json.loads(result.stdout)["records"]] == ["trip-plan"]


def test_extraction_never_updates_an_expired_record(memory: MemoryService) -> None:
    memory.create_auto("office", type="project", description="Office closed on Friday", body="closed")
    memory.update("office", expires="2020-01-01")
    decision = Extractor(memory).reconcile(
        {
            "type": "project",
            "name": "office",
            "description": "Office closed on Friday",
            "body": "closed again",
            "salience": 0.9,
            "durable": True,
            "recoverable": False,
        },
        False,
    )
    assert (decision.outcome, decision.name) == ("created", "office-2")
    assert memory.show("office").body == "closed" and memory.show("office").expires == "2020-01-01"


# --- git -------------------------------------------------------------------------------------


def sides(tmp_path: Path, base: str, ours: str, theirs: str) -> list[Path]:
    files = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        files.append(tmp_path / f"{name}.md")
        files[-1].write_text(text)
    return files


@pytest.mark.process
@needs_git
def test_the_merge_driver_treats_expires_as_any_header_key(tmp_path: Path) -> None:
    from aibuddy_cli.app.merge_driver import merge_file

    stamp = "2026-11-29T18:00:00Z"
    base = MemoryRecord("trip", "Trip to Rome", "project", "Rome.\n", created=stamp, updated=stamp)
    dated = base._replace(expires="2027-03-01")
    files = sides(
        tmp_path, render_record(base), render_record(dated), render_record(base._replace(body="Rome!\n"))
    )
    assert merge_file(*files, "memory/demo/trip.md") == 0
    assert parse_record("trip", files[1].read_text()) == dated._replace(body="Rome!\n")

    other = base._replace(expires="2027-04-01")
    files = sides(tmp_path, render_record(base), render_record(dated), render_record(other))
    assert merge_file(*files, "memory/demo/trip.md") == 1  # both changed it differently
    assert "<<<<<<<" in files[1].read_text()

    files = sides(tmp_path, render_record(dated), render_record(base), render_record(dated))
    assert merge_file(*files, "memory/demo/trip.md") == 0  # one side took it away
    assert parse_record("trip", files[1].read_text()).expires is None


def test_an_export_keeps_expired_records_but_claude_codes_folder_does_not(
    memory: MemoryService, tmp_path: Path
) -> None:
    from aibuddy_cli.memory.transfer import export

    stock(memory)
    memory.update("trip", expires="2020-01-01")
    assert [line["name"] for line in export(memory, "jsonl", "-").lines] == ["tea", "trip"]
    folder = tmp_path / "claude"
    exported = export(memory, "claude-code", str(folder))
    assert [line["name"] for line in exported.lines] == ["tea"]
    assert sorted(path.name for path in folder.iterdir()) == ["MEMORY.md", "tea.md"]
