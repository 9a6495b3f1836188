"""Recall that knows time: a question that names a day, a month or "last week" (in English or
Chinese) prefers the records whose days fit, by their header dates or the dates their text
states; a question that names no time ranks as before."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from aibuddy_cli.app.session import Session
from aibuddy_cli.dates import query_spans, text_days
from aibuddy_cli.memory.records import MemoryRecord, render_record
from aibuddy_cli.vault import Vault

TODAY = dt.date(2026, 12, 2)  # a Wednesday


def days(text: str) -> list[tuple[str, str]]:
    return [(span.first.isoformat(), span.last.isoformat()) for span in query_spans(text, TODAY)]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("What did Caroline do on 16 June, 2023?", ("2023-06-16", "2023-06-16")),
        ("what happened on the 5th of November 2024", ("2024-11-05", "2024-11-05")),
        ("the 2023-06-16 meeting", ("2023-06-16", "2023-06-16")),
        ("June 2023 trip", ("2023-06-01", "2023-06-30")),
        ("what did I decide last week?", ("2026-11-23", "2026-11-29")),
        ("yesterday's standup", ("2026-12-01", "2026-12-01")),
        ("3 days ago", ("2026-11-29", "2026-11-29")),
        ("plans from last month", ("2026-11-01", "2026-11-30")),
        ("去年的计划", ("2025-01-01", "2025-12-31")),
        ("上周的会议说了什么", ("2026-11-23", "2026-11-29")),
        ("2023年6月16日做了什么", ("2023-06-16", "2023-06-16")),
        ("in 2023", ("2023-01-01", "2023-12-31")),
    ],
)
def test_a_question_names_a_stretch_of_days(question: str, first: tuple[str, str]) -> None:
    assert days(question)[0] == first


def test_a_month_or_day_without_its_year_means_the_latest_ones() -> None:
    assert days("in May")[:2] == [("2026-05-01", "2026-05-31"), ("2025-05-01", "2025-05-31")]
    assert days("五月去了哪里")[0] == ("2026-05-01", "2026-05-31")
    assert days("Dec 3")[0] == ("2025-12-03", "2025-12-03")  # not in the future
    assert days("6月16日")[0] == ("2026-06-16", "2026-06-16")


@pytest.mark.parametrize("text", ["I may go to the gym", "we march on", "the sprint was long", "version 2.3"])
def test_words_that_only_look_like_dates_name_none(text: str) -> None:
    assert days(text) == []


def test_a_text_states_days() -> None:
    text = "On 16 June 2023 Alice went hiking; June 20 she rested. 2024-01-05: party. 6月16日去了公园"
    assert sorted(set(text_days(text, 2023))) == [
        dt.date(2023, 6, 16),
        dt.date(2023, 6, 20),
        dt.date(2024, 1, 5),
    ]


def write(vault: Vault, name: str, description: str, body: str, created: str) -> None:
    record = MemoryRecord(
        name=name, description=description, type="project", body=body, created=created, updated=created
    )
    folder = vault.root / "memory/demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(render_record(record))


def recalled(vault: Vault, query: str) -> list[str]:
    with Session(vault, "demo", environ={}) as session:
        return [record.name for record in session.memory.recall(query).records]


@pytest.fixture
def diary(vault: Vault) -> Path:
    """Caroline's doings on several days, each written down that day, and one told later."""
    write(vault, "caroline-hiking", "Caroline went hiking with her sister", "", "2023-06-16T18:00:00Z")
    write(vault, "caroline-museum", "Caroline visited the science museum", "", "2023-06-20T18:00:00Z")
    write(vault, "caroline-pottery", "Caroline started a pottery class", "", "2023-07-02T18:00:00Z")
    write(
        vault,
        "caroline-summary",
        "What Caroline did in spring",
        "On 3 May 2023 Caroline ran a 10k.",
        "2023-08-01T18:00:00Z",
    )
    return vault.root


def test_a_date_question_prefers_the_record_of_that_day(vault: Vault, diary: Path) -> None:
    assert recalled(vault, "What did Caroline do on 16 June, 2023?")[0] == "caroline-hiking"
    assert recalled(vault, "What did Caroline do on June 20, 2023?")[0] == "caroline-museum"
    assert recalled(vault, "Caroline in July 2023")[0] == "caroline-pottery"
    # A day the text states counts as well as the day it was written.
    assert recalled(vault, "What did Caroline do on 3 May 2023?")[0] == "caroline-summary"


def test_a_question_with_no_time_ranks_as_before(vault: Vault, diary: Path) -> None:
    assert recalled(vault, "pottery class")[0] == "caroline-pottery"


def test_what_happened_recently_comes_without_shared_words(vault: Vault) -> None:
    now = dt.datetime.now(dt.UTC)
    monday = now.date() - dt.timedelta(days=now.weekday())
    last_week = dt.datetime.combine(monday - dt.timedelta(days=3), dt.time(12), dt.UTC)
    write(
        vault,
        "vendor-choice",
        "Chose Acme as the payments vendor",
        "",
        last_week.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    write(vault, "old-choice", "Chose the office chairs", "", "2024-02-01T12:00:00Z")
    assert recalled(vault, "what did I decide last week?") == ["vendor-choice"]
