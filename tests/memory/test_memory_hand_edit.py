"""Records that age well, part 4: a hand edit counts as an update for the recall window. A record
whose content changed since the index last saw it, while its `updated` did not, is as recent as
the edit (its file's mtime); a fresh index (a clone) orders by header dates alone."""

from __future__ import annotations

import calendar
import os
import shutil
import time

from helpers import record_path
from helpers import write_record_file as write

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault

DAYS = {"alpha": 3, "bravo": 11, "charlie": 7, "delta": 1, "echo": 12, "foxtrot": 5, "golf": 9, "hotel": 2}
NEWEST = [("echo", "2026-03-12"), ("bravo", "2026-03-11"), ("golf", "2026-03-09"), ("charlie", "2026-03-07")]


def epoch(stamp: str) -> int:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def stock(vault: Vault) -> None:
    """A 5-line window, no lines for lexical matches, and records written on different days."""
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("window = 200", "window = 5\nlexical_share = 0"))
    for name, day in DAYS.items():
        stamp = f"2026-03-{day:02d}T10:00:00Z"
        record = MemoryRecord(name, f"Note {name}", "project", f"{name}\n", created=stamp, updated=stamp)
        os.utime(write(vault, name, render_record(record)), (epoch(stamp), epoch(stamp)))


def window(vault: Vault) -> list[tuple[str, str]]:
    """The manifest as a new process sees it (the index on disk is kept)."""
    lines = Session(Vault.open(vault.root), "demo", environ={}).memory.manifest().lines
    return [(line.name, line.modified) for line in lines]


def edit_by_hand(vault: Vault, name: str, old: str, new: str, when: str) -> None:
    path = record_path(vault, name)
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, (epoch(when), epoch(when)))


def test_a_hand_edited_old_record_comes_back_into_the_window(vault: Vault) -> None:
    stock(vault)
    assert window(vault) == [*NEWEST, ("foxtrot", "2026-03-05")]
    edit_by_hand(vault, "delta", "---\ndelta\n", "---\ndelta, now with a plan\n", "2026-04-02T09:00:00Z")
    assert window(vault) == [("delta", "2026-04-02"), *NEWEST]
    assert window(vault)[0] == ("delta", "2026-04-02")  # kept by the index, not found again each time
    # A recall of another record rewrites only telemetry: the edit's moment stays.
    Session(vault, "demo", environ={}).memory.recall("echo")
    assert [name for name, _ in window(vault)][:2] == ["echo", "delta"]


def test_a_fresh_index_orders_by_header_dates_as_a_clone_does(vault: Vault) -> None:
    stock(vault)
    window(vault)
    edit_by_hand(vault, "delta", "---\ndelta\n", "---\ndelta, edited\n", "2026-04-02T09:00:00Z")
    assert window(vault)[0] == ("delta", "2026-04-02")
    shutil.rmtree(vault.cache_dir)  # as a clone has no index: header dates alone
    assert window(vault) == [*NEWEST, ("foxtrot", "2026-03-05")]


def test_what_is_no_hand_edit_moves_nothing(vault: Vault) -> None:
    stock(vault)
    before = window(vault)
    # Only the file's times change (a checkout, a copy): the content is the same.
    os.utime(record_path(vault, "delta"), None)
    assert window(vault) == before
    # Only telemetry changes by hand: not an edit of what the record says.
    edit_by_hand(vault, "delta", "recallCount: 0", "recallCount: 3", "2026-04-02T09:00:00Z")
    assert window(vault) == before
    # An edit that also sets `updated`: the header says when.
    edit_by_hand(
        vault,
        "delta",
        "updated: 2026-03-01T10:00:00Z",
        "updated: 2026-03-08T10:00:00Z",
        "2026-04-02T09:00:00Z",
    )
    assert window(vault) == [*NEWEST[:3], ("delta", "2026-03-08"), ("charlie", "2026-03-07")]


def test_an_edit_through_aibuddy_counts_by_its_updated_date(vault: Vault) -> None:
    stock(vault)
    window(vault)
    memory = Session(vault, "demo", environ={}).memory
    memory.update("delta", body="delta, updated\n")
    updated = memory.show("delta").updated
    assert updated is not None and window(vault)[0] == ("delta", updated[:10])


def test_a_malformed_record_fixed_by_hand_counts_as_edited(vault: Vault) -> None:
    stock(vault)
    path = record_path(vault, "delta")
    good = path.read_text()
    path.write_text(good.replace("type: project", "type: opinion"))
    assert [name for name, _ in window(vault)] == ["echo", "bravo", "golf", "charlie", "foxtrot"]
    path.write_text(good)
    os.utime(path, (epoch("2026-04-02T09:00:00Z"), epoch("2026-04-02T09:00:00Z")))
    assert window(vault)[0] == ("delta", "2026-04-02")


def test_an_edit_dated_in_the_future_counts_as_now(vault: Vault) -> None:
    stock(vault)
    window(vault)
    edit_by_hand(vault, "delta", "---\ndelta\n", "---\ndelta, edited\n", "2999-01-01T00:00:00Z")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert window(vault)[0][0] == "delta" and window(vault)[0][1] <= today
