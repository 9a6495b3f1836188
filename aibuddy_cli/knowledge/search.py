"""Query parsing, phrase checks and snippets for section search (English, CJK, "quoted phrases")."""

from __future__ import annotations

import re
from typing import NamedTuple

from ..text import STOPWORDS, is_cjk, query_terms, tokens
from .outline import split_lines

_QUOTED = re.compile(r'"([^"]+)"')


class Query(NamedTuple):
    phrases: list[str]  # as written, each must occur in a hit
    terms: list[str]  # tokens outside quotes (stopwords dropped)
    expression: str | None  # the FTS5 MATCH expression; None if nothing searchable

    @property
    def all_tokens(self) -> set[str]:
        found = set(self.terms)
        for phrase in self.phrases:
            found.update(tokens(phrase))
        return found


def parse_query(text: str) -> Query:
    """Quoted parts are phrases that must all occur; other words and CJK bigrams rank the hits."""
    phrases = [p.strip() for p in _QUOTED.findall(text) if tokens(p)]
    rest = _QUOTED.sub(" ", text)
    optional = query_terms(rest)
    terms = [t for t in tokens(rest) if is_cjk(t) or (t not in STOPWORDS and len(t) > 1)]
    required = ['"' + " ".join(tokens(p)) + '"' for p in phrases]
    if required:
        expression = " AND ".join(required)
        if optional:
            expression += " AND (" + " OR ".join(dict.fromkeys(required + optional)) + ")"
    elif optional:
        expression = " OR ".join(optional)
    else:
        expression = None
    return Query(phrases, terms, expression)


def contains_phrases(text: str, phrases: list[str]) -> bool:
    """Each phrase occurs as written (ignoring case), not inside a longer word: "rolling restart
    procedure" is not found in "rolling-restart procedure" nor in "...procedures"."""
    return all(_phrase_pattern(phrase).search(text) for phrase in phrases)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """The phrase as written, with any run of white space (a wrapped line) between its words."""
    before = r"(?<![A-Za-z0-9])" if phrase[0].isascii() and phrase[0].isalnum() else ""
    after = r"(?![A-Za-z0-9])" if phrase[-1].isascii() and phrase[-1].isalnum() else ""
    words = r"\s+".join(re.escape(word) for word in phrase.split())
    return re.compile(before + words + after, re.IGNORECASE)


def best_line(text: str, first_line: int, query: Query) -> tuple[int, str]:
    """(line number, line) of the section line that matches the query best, for a snippet."""
    wanted = query.all_tokens
    best = (first_line, "", -1.0)
    for offset, line in enumerate(split_lines(text)):
        stripped = line.strip()
        if not stripped:
            continue
        score = float(len(wanted.intersection(tokens(stripped))))
        if query.phrases and contains_phrases(stripped, query.phrases[:1]):
            score += 10
        if score > best[2]:
            best = (first_line + offset, stripped, score)
    number, line, _ = best
    return number, line if len(line) <= 240 else line[:239] + "…"
