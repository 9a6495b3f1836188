"""The dates 430 sentences name, English and Chinese, as `dates` read them when the set was made
(tests/fixtures/date_sentences.jsonl: the days a record states, a question's stretches and the
question without them), plus hand-checked ones: a faster reading must find the same dates."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from aibuddy_cli.dates import read_time, text_days

TODAY = dt.date(2026, 3, 15)
RECORD_YEAR = 2024
SET = Path(__file__).parent / "fixtures" / "date_sentences.jsonl"
SENTENCES = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", SENTENCES, ids=[f"s{number}" for number in range(len(SENTENCES))])
def test_each_sentence_names_the_dates_it_did(row: dict[str, object]) -> None:
    text = str(row["text"])
    spans, rest = read_time(text, TODAY)
    assert [day.isoformat() for day in text_days(text, RECORD_YEAR)] == row["days"]
    assert [[span.first.isoformat(), span.last.isoformat()] for span in spans] == row["spans"]
    assert rest == row["rest"]


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("We shipped on 16 June, 2023 and again on June 20th.", ["2023-06-16", "2024-06-20"]),
        ("Meet on 2024-02-29; not on 2023-02-29.", ["2024-02-29"]),
        ("I may go, and we march on by may.", []),
        ("The summary is in markdown; decide on the decorator.", []),
        ("2023年6月16日发布，十二月二十五日回滚，6月份再看。", ["2023-06-16", "2024-12-25"]),
        ("13月5日 and 5月32日 are no days", []),
        ("MAY 5, 2020 and Oct. 3", ["2020-05-05", "2024-10-03"]),
    ],
)
def test_hand_checked_days(text: str, days: list[str]) -> None:
    assert [day.isoformat() for day in text_days(text, RECORD_YEAR)] == days


def test_a_month_in_unusual_letters_is_read_not_a_crash() -> None:
    """Case-blind matching takes the long s (ſ) for an s: "ſept 5" is September 5th, where a
    record saying it used to stop the index build with a KeyError."""
    assert text_days("ſept 5", RECORD_YEAR) == [dt.date(2024, 9, 5)]
