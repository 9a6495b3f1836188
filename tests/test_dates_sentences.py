"""The dates 430 sentences name, English and Chinese, as `dates` read them when the set was made
(tests/fixtures/date_sentences.jsonl: the days a record states, a question's stretches and the
question without them), plus hand-checked ones: a faster reading must find the same dates."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest

from aibuddy_cli import dates
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
        # Where a day can begin, found from the text's numbers (text_days): other digits, other
        # spaces, lines between a month and its day, a number inside a word.
        ("١٦ June and June\u00a016", ["2024-06-16", "2024-06-16"]),
        ("June\n\n16th, 2023 then Sept. 5", ["2023-06-16", "2024-09-05"]),
        ("x16 June, June16, 2016 June 3", ["2024-06-03"]),
        ("16th of\nJune; 3 of  may", ["2024-06-16", "2024-05-03"]),
        ("June 2023年6月16日", ["2023-06-16"]),
        ("Jun . 5 and 1999.12.31 and 2020-2-30", ["1999-12-31"]),
        ("31st dec 1999年十二月三十一日", ["2024-12-31", "1999-12-31"]),
    ],
)
def test_hand_checked_days(text: str, days: list[str]) -> None:
    assert [day.isoformat() for day in text_days(text, RECORD_YEAR)] == days


def test_a_month_in_unusual_letters_is_read_not_a_crash() -> None:
    """Case-blind matching takes the long s (ſ) for an s: "ſept 5" is September 5th, where a
    record saying it used to stop the index build with a KeyError."""
    assert text_days("ſept 5", RECORD_YEAR) == [dt.date(2024, 9, 5)]


def test_the_days_a_record_states_are_those_the_whole_reading_finds() -> None:
    """text_days looks for days only, where a number is; a question's reading (months, years,
    days) looks everywhere: over 5,000 generated texts dense with dates, look-alikes and odd
    letters and spaces, both find the same days."""
    rng = random.Random(35)
    pick = rng.choice
    numbers = ["1", "5", "16", "31", "32", "09", "2023", "1999", "20", "123", "١٦", "0"]
    months = ["June", "jun", "JUN", "Sept", "ſept", "May", "may", "march", "dec", "OCT", "summary", "x"]
    spaces = [" ", "  ", "", "\n", "\u00a0", "\t"]
    cn = [*numbers, "十", "五", "十二", "三十一"]

    def piece() -> str:
        form = rng.randrange(5)
        if form == 0:  # 16th of June, 2023
            parts = [numbers, ["", "st", "th"], spaces, ["", "of "], months, ["", ".", ","], ["", " ", ", "],
                     ["", "2023", "20"]]  # fmt: skip
        elif form == 1:  # June 16, 2023
            parts = [months, ["", ".", ". ", ","], spaces, numbers, ["", "th", ", 2023", " 1999", "x"]]
        elif form == 2:  # 2023-06-16
            parts = [["2023", "1999", "19", "201"], list("-/.x"), numbers, list("-/.x"), numbers]
        elif form == 3:  # 2023年6月16日
            parts = [["", "2023年"], cn, ["月"], cn, list("日号份x")]
        else:
            parts = [["x", "_", "İ", "in ", "by ", "2023", " ", "。", "-"]]
        return "".join(pick(choices) for choices in parts)

    with_days = 0
    for _ in range(5000):
        text = "".join(piece() + pick([" ", "", "_", ". "]) for _ in range(rng.randint(1, 4)))
        whole = [(found.year or RECORD_YEAR, found.month, found.day) for found in dates._found(text)]
        expected = [day for day in (dates._day(*found) for found in whole if found[2] is not None) if day]
        assert text_days(text, RECORD_YEAR) == expected, text
        with_days += bool(expected)
    assert with_days > 1000
