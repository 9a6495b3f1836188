"""Dates in what people write: the days a question names, and the days a text states.

A question names a time in English or Chinese: a day ("16 June, 2023", "June 16th", "2023-06-16",
6月16日), a month ("in May", "June 2023", 五月, 2023年5月), a year ("in 2023", 2023年) or a time
relative to today ("yesterday", "last week", "last month", "3 days ago", 昨天, 上周, 上个月, 去年).
Each becomes a `Span` of days. A month or a day without its year stands for that month or day in
each of the last YEARS_BACK years (the nearest first): "in May" asked today may mean this May or
one before it, and the records will say which.

A record states days too: its header dates, and the dates its text names (`text_days`), a day
without its year taking the year the record was written.

Ambiguous words are months only where they read as one: "may" and "march" need a day, a year or
a word of time before them ("in May", "early March"), so "I may go" names no date.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import NamedTuple

YEARS_BACK = 6

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_AMBIGUOUS = {"may", "march", "mar", "jan", "dec"}  # words before English months that make them one
_TIME_WORDS = r"(?:in|on|of|during|since|until|till|before|after|by|early|late|mid|last|this|next|from|to)"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_CN_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}


class Span(NamedTuple):
    first: dt.date
    last: dt.date  # inclusive

    def holds(self, day: dt.date) -> bool:
        return self.first <= day <= self.last


def _month_span(year: int, month: int) -> Span | None:
    try:
        first = dt.date(year, month, 1)
    except ValueError:
        return None
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return Span(first, following - dt.timedelta(days=1))


def _day(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _years(today: dt.date, month: int, day: int = 1) -> Iterator[int]:
    """The years a month (or day) without its year may mean: not in the future, nearest first."""
    year = today.year if (month, day) <= (today.month, today.day) else today.year - 1
    return iter(range(year, year - YEARS_BACK, -1))


def _cn_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _CN_DIGITS.get(text[1:], 0) if len(text) == 2 else None
    if text.endswith("十"):
        return _CN_DIGITS.get(text[:-1], 0) * 10 if len(text) == 2 else None
    if len(text) == 3 and text[1] == "十":
        return _CN_DIGITS.get(text[0], 0) * 10 + _CN_DIGITS.get(text[2], 0)
    return _CN_DIGITS.get(text)


class _Found(NamedTuple):
    year: int | None
    month: int
    day: int | None
    start: int
    end: int


_CN_NUM = r"[0-9一二三四五六七八九十]{1,3}"
_PATTERNS = [
    # 2023-06-16, 2023/6/16, 2023.06.16
    (re.compile(r"\b((?:19|20)\d\d)[-/.](\d{1,2})[-/.](\d{1,2})\b"), "ymd"),
    # 16 June 2023, 16th of June, 2023
    (
        re.compile(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?(?:\s+((?:19|20)\d\d))?\b", re.I
        ),
        "dmy",
    ),
    # June 16, 2023; June 16th
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+((?:19|20)\d\d))?", re.I), "mdy"),
    # June 2023
    (re.compile(rf"\b({_MONTH})\.?,?\s+((?:19|20)\d\d)\b", re.I), "my"),
    # 2023年6月16日, 6月16日, 六月十六号
    (re.compile(rf"(?:((?:19|20)\d\d)年)?({_CN_NUM})月({_CN_NUM})[日号]"), "cn-md"),
    # 2023年6月, 五月
    (re.compile(rf"(?:((?:19|20)\d\d)年)?({_CN_NUM})月(?!\d|[日号份])"), "cn-m"),
]
_DIGITS = re.compile(r"\d+")
_BARE_MONTH = re.compile(rf"(?:\b({_TIME_WORDS})\s+)?\b({_MONTH})\b\.?", re.I)
_YEAR = re.compile(
    r"(?:\b(?:in|of|during|since)\s+((?:19|20)\d\d)\b)|((?:19|20)\d\d)年(?![0-9一二三四五六七八九十]{1,3}月)"
)


# Letters that case-blind matching takes for an ASCII letter of a month's name: folded, a word
# the patterns matched is a key of MONTHS, and a text keeps its length (where each date stands).
_FOLD = {"İ": "i", "ı": "i", "ſ": "s", "K": "k"}
_MONTH_PREFIXES = frozenset(name[:3] for name in MONTHS)
_TIME_WORD = re.compile(rf"\b{_TIME_WORDS}\s+", re.I)


def _folded(text: str) -> str:
    for letter, ascii_letter in _FOLD.items():
        if letter in text:
            text = text.replace(letter, ascii_letter)
    return text.lower()


def _month_number(word: str) -> int:
    return MONTHS[_folded(word)]


def _is_word(character: str) -> bool:
    """What `\\w` matches (so `\\b` stands beside a character that is not one)."""
    return character.isalnum() or character == "_"


def _month_starts(text: str) -> list[int]:
    """Where a month's name may begin: a word starting with the first three letters of one. Every
    English pattern needs one, so a text without any is never scanned by them, and the others
    are tried only there, not at each of the text's characters."""
    folded = _folded(text)
    starts = []
    for prefix in _MONTH_PREFIXES:
        at = folded.find(prefix)
        while at != -1:
            if at == 0 or not _is_word(text[at - 1]):
                starts.append(at)
            at = folded.find(prefix, at + 1)
    return sorted(starts)


def _year_starts(text: str) -> list[int]:
    """Where a year of a "2023-06-16" may begin: a word starting 19 or 20."""
    starts = []
    for century in ("19", "20"):
        at = text.find(century)
        while at != -1:
            if at == 0 or not _is_word(text[at - 1]):
                starts.append(at)
            at = text.find(century, at + 1)
    return sorted(starts)


def _day_starts(text: str, months: list[int]) -> list[int]:
    """Where a "16th of June" may begin: the numbers just before a month's name (at most two
    digits, a suffix, spaces, "of" and spaces)."""
    starts: set[int] = set()
    for month in months:
        at = month
        while at > 0 and text[at - 1].isspace():
            at -= 1
        at -= 2  # "of"
        while at > 0 and text[at - 1].isspace():
            at -= 1
        at = max(at - 6, 0)  # a suffix, two digits and a character to spare
        starts.update(number.start() for number in _DIGITS.finditer(text, at, month))
    return sorted(starts)


def _matches_from(pattern: re.Pattern[str], text: str, starts: list[int]) -> Iterator[re.Match[str]]:
    """What `pattern.finditer(text)` yields, for a pattern whose matches can only begin at starts."""
    end = 0
    for start in starts:
        if start >= end:
            match = pattern.match(text, start)
            if match is not None:
                end = match.end()
                yield match


def _bare_month_matches(text: str, starts: list[int]) -> Iterator[re.Match[str]]:
    """What `_BARE_MONTH.finditer(text)` yields: a match begins at a month's name or at the word
    of time before it ("in May")."""
    end = 0
    for start in starts:
        if start < end:
            continue
        before = start
        while before > end and text[before - 1].isspace():
            before -= 1
        match = None
        if before < start:
            word = before
            while word > end and _is_word(text[word - 1]):
                word -= 1
            if word < before and _TIME_WORD.match(text, word) is not None:
                match = _BARE_MONTH.match(text, word)
        if match is None:
            match = _BARE_MONTH.match(text, start)
        if match is not None:
            end = match.end()
            yield match


def _number_starts(text: str) -> list[int]:
    """Where each run of digits begins (what `_DIGITS.finditer` finds): in an ASCII text by a
    search for each of the ten digits (ten scans in C cost a tenth of the regex's one)."""
    if not text.isascii():
        return [number.start() for number in _DIGITS.finditer(text)]
    digits = []
    for digit in "0123456789":
        at = text.find(digit)
        while at != -1:
            digits.append(at)
            at = text.find(digit, at + 1)
    digits.sort()
    return [at for place, at in enumerate(digits) if place == 0 or digits[place - 1] != at - 1]


def _words_before(text: str, numbers: list[int]) -> list[int]:
    """Where a "June 16" may begin: the word just before each number (spaces, and a "." after
    the word, between them)."""
    starts = []
    for number in numbers:
        at = number
        while at > 0 and text[at - 1].isspace():
            at -= 1
        if at == number:
            continue  # a month's name is followed by a space
        if at > 0 and text[at - 1] == ".":
            at -= 1
        end = at
        while at > 0 and _is_word(text[at - 1]):
            at -= 1
        if at < end:
            starts.append(at)
    return starts


_NO_DAY = ("my", "cn-m")  # the patterns that name a month without its day


def _found(text: str, days_only: bool = False) -> list[_Found]:
    """Every day or month named in text, with where it stands; a later pattern never reads a
    stretch an earlier one took. Each pattern is tried only where one of its matches can begin
    (a year, a month's name, a number before one) or in a text that has a 月, not at each of the
    text's characters.

    days_only (text_days: an index build reads every record): only the days, the same ones. A
    day's match always holds a number (where a "2023-06-16" or a "16 June" begins, and what
    follows a "June 16"'s month), so one pass over the text's numbers finds where each may
    begin, instead of a search for each month's name. The months alone are not looked for: they
    come after the days' patterns but for the Chinese day, which cannot overlap one ("June 2023"
    begins with a letter and ends before a character that is no word's)."""
    taken: list[tuple[int, int]] = []
    found: list[_Found] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    if days_only:
        numbers = _number_starts(text)
        months = []
    else:
        months = _month_starts(text)
    chinese_month = "月" in text
    for pattern, kind in _PATTERNS:
        matches: Iterator[re.Match[str]]
        if days_only and kind in _NO_DAY:
            continue
        if kind == "ymd":
            years = [at for at in numbers if text.startswith(("19", "20"), at)] if days_only else None
            matches = _matches_from(pattern, text, _year_starts(text) if years is None else years)
        elif kind == "dmy":
            matches = _matches_from(pattern, text, numbers if days_only else _day_starts(text, months))
        elif kind == "mdy":
            matches = _matches_from(pattern, text, _words_before(text, numbers) if days_only else months)
        elif kind == "my":
            matches = _matches_from(pattern, text, months)
        else:
            matches = pattern.finditer(text) if chinese_month else iter(())
        for match in matches:
            if not free(match.start(), match.end()):
                continue
            groups = match.groups()
            year: int | None
            day: int | None
            if kind == "ymd":
                year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
            elif kind == "dmy":
                year, month, day = (
                    (int(groups[2]) if groups[2] else None),
                    _month_number(groups[1]),
                    int(groups[0]),
                )
            elif kind == "mdy":
                year, month, day = (
                    (int(groups[2]) if groups[2] else None),
                    _month_number(groups[0]),
                    int(groups[1]),
                )
            elif kind == "my":
                year, month, day = int(groups[1]), _month_number(groups[0]), None
            else:
                month_number = _cn_number(groups[1])
                day_number = _cn_number(groups[2]) if kind == "cn-md" else None
                if month_number is None or (kind == "cn-md" and day_number is None):
                    continue
                year, month, day = (int(groups[0]) if groups[0] else None), month_number, day_number
            if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
                continue
            taken.append((match.start(), match.end()))
            found.append(_Found(year, month, day, match.start(), match.end()))
    if days_only:
        return found
    for match in _bare_month_matches(text, months):
        word = _folded(match.group(2))
        if not free(match.start(2), match.end(2)) or (word in _AMBIGUOUS and not match.group(1)):
            continue
        if word in _AMBIGUOUS and match.group(2)[0].islower() and match.group(1).lower() in ("to", "by"):
            continue  # "to march", "by may": a verb more likely than a month
        taken.append((match.start(2), match.end(2)))
        found.append(_Found(None, MONTHS[word], None, match.start(2), match.end(2)))
    return found


def _relative(text: str, today: dt.date) -> tuple[list[Span], list[tuple[int, int]]]:
    """The stretches a time relative to today names, and where in text each is said."""
    monday = today - dt.timedelta(days=today.weekday())
    previous_month = today.replace(day=1) - dt.timedelta(days=1)

    def days_ago(offset: int) -> Span:
        moment = today - dt.timedelta(days=offset)
        return Span(moment, moment)

    rules: list[tuple[str, object]] = [
        (r"\btoday\b|今天|今日", days_ago(0)),
        (r"\byesterday\b|昨天|昨日", days_ago(1)),
        ("前天", days_ago(2)),
        (r"\b(\d{1,3}) days? ago\b", days_ago),
        (r"\b(?:this|the past|past) week\b|这周|本周|这个星期|这星期", Span(monday, today)),
        (
            r"\blast week\b|\bprevious week\b|上周|上个星期|上星期|上礼拜",
            Span(monday - dt.timedelta(days=7), monday - dt.timedelta(days=1)),
        ),
        (
            r"\b(?:a|one|two|three|\d) weeks? ago\b",
            Span(monday - dt.timedelta(days=21), monday - dt.timedelta(days=1)),
        ),
        (r"\bthis month\b|这个月|本月", Span(today.replace(day=1), today)),
        (
            r"\blast month\b|\bprevious month\b|上个月|上月",
            _month_span(previous_month.year, previous_month.month),
        ),
        (r"\bthis year\b|今年", Span(dt.date(today.year, 1, 1), today)),
        (r"\blast year\b|去年", Span(dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31))),
    ]
    spans: list[Span] = []
    said: list[tuple[int, int]] = []
    for pattern, meaning in rules:
        for match in re.finditer(pattern, text, re.IGNORECASE):
            span = meaning(int(match.group(1))) if callable(meaning) else meaning
            if isinstance(span, Span):
                spans.append(span)
                said.append((match.start(), match.end()))
    return spans, said


def read_time(text: str, today: dt.date) -> tuple[list[Span], str]:
    """The stretches of days text asks about (see the module's docstring; [] when it names
    none), and text without the words that named them: they are the question's time, and
    matching them as words would favour any record that happens to say "2023" or "June"."""
    spans, said = _relative(text, today)
    for found in _found(text):
        said.append((found.start, found.end))
        years = [found.year] if found.year is not None else list(_years(today, found.month, found.day or 1))
        for year in years:
            if found.day is not None:
                day = _day(year, found.month, found.day)
                if day is not None:
                    spans.append(Span(day, day))
            else:
                month = _month_span(year, found.month)
                if month is not None:
                    spans.append(month)
    for match in _YEAR.finditer(text):
        year = int(match.group(1) or match.group(2))
        spans.append(Span(dt.date(year, 1, 1), dt.date(year, 12, 31)))
        said.append((match.start(), match.end()))
    rest = list(text)
    for start, end in said:
        rest[start:end] = " " * (end - start)
    return spans, "".join(rest)


def query_spans(text: str, today: dt.date) -> list[Span]:
    return read_time(text, today)[0]


def text_days(text: str, year: int | None) -> list[dt.date]:
    """The days text states (a day without its year in `year`, when given); months alone are not
    days and are left out."""
    days = []
    for found in _found(text, days_only=True):
        chosen = found.year if found.year is not None else year
        if found.day is None or chosen is None:
            continue
        day = _day(chosen, found.month, found.day)
        if day is not None:
            days.append(day)
    return days
