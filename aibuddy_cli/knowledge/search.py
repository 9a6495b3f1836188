"""Query parsing, phrase checks and snippets for section search (English, CJK, "quoted phrases")."""

from __future__ import annotations

import re
from typing import NamedTuple

from ..text import STOPWORDS, is_cjk, query_terms, tokens
from .outline import split_lines

_QUOTED = re.compile(r'"([^"]+)"')
# A sentence: up to a question or exclamation mark, a full stop before a capital letter, a Chinese
# full stop or semicolon, a new line, or the end. "What is X? What does it return?" asks the second.
_SENTENCE = re.compile(r"(.*?)([?？]+|[!！。；\n]+|\.(?=\s+[A-Z])|$)", re.DOTALL)
# A question that asks what is not so ("which option is NOT…", "what does X not support",
# 不支持 / 不是 / 除了): its answer says "not" near its words, the distractor does not.
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|without|except|neither|nor|none|unlike)\b|n['’]t\b|[不没沒无無非未别別]|除了",
    re.IGNORECASE,
)
# A Chinese pair of characters that holds one of these is a question word or a particle (什么,
# 怎么, 哪些, 如何, …的…), as "what", "how" and "which" are English stop words: it names no subject.
_QUESTION_CHARS = frozenset("哪么吗呢吧啊何怎什的了")
# Words that only deny (what is left of "doesn't", "isn't", and the Chinese verbs of denial): as
# search terms they find every section that denies anything, the distractor as much as the
# answer. The ranking looks for a denial near the question's words instead (ranking.py).
_DENIALS = frozenset(
    "not never cannot without neither nor none don doesn didn isn aren wasn weren won wouldn shouldn"
    " couldn hasn haven hadn mustn needn 不能 不会 不是 没有 不要 不用 不必 不需 无法 并不".split()
)


def _subject_terms(terms: list[str]) -> list[str]:
    """The FTS5 phrases ('"word"', '"字 词"') but Chinese question words and words that only
    deny; all of them if nothing else is left."""
    kept = [
        term
        for term in terms
        if not _QUESTION_CHARS.intersection(term) and term.strip('"').replace(" ", "") not in _DENIALS
    ]
    return kept or terms


class Query(NamedTuple):
    phrases: list[str]  # as written, each must occur in a hit
    terms: list[str]  # tokens outside quotes (stopwords dropped)
    expression: str | None  # the FTS5 MATCH expression; None if nothing searchable
    # The FTS5 phrases of the question asked: the last sentence with a question mark, when other
    # sentences have words too. The others are context ("How do I create a vector? How do I read
    # its elements?"): they choose the document, the question the section. All of them otherwise
    # ("Tell me about X. Give an example." asks nothing apart).
    focus: list[str]
    context: list[str]  # the phrases only the sentences before the question hold
    negated: bool  # the question asks what is not so

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
    optional = _subject_terms(query_terms(rest))
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
    sentences = [(text, end) for text, end in _SENTENCE.findall(rest) if query_terms(text)]
    questions = [text for text, end in sentences if end.startswith(("?", "？"))]
    asked = questions[-1] if questions and len(sentences) > 1 else rest
    focus = list(dict.fromkeys(required + _subject_terms(query_terms(asked))))
    context = [term for term in optional if term not in focus]
    negated = _NEGATION.search(asked) is not None
    return Query(phrases, terms, expression, focus, context, negated)


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
