"""Tokenising for lexical search: English words and CJK characters, the same at index and query time.

A CJK run has no spaces between words, so each character is a token and adjacent pairs are
searched as phrases (bigrams). That lets "周报格式" find a record that mentions 周报 without any
word segmenter.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")  # letters and digits; a CJK run comes out whole and is split below
# Hiragana/katakana, CJK ideographs (with extension A and compatibility), Hangul syllables.
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xAC00, 0xD7AF))


def _is_cjk_char(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been before being but by can could did do
    does for from had has have he her here him his how i if in into is it its just me more most my
    no not of on or our out over she should so some such than that the their them then there these
    they this those to too us very was we were what when where which while who whom why will with
    would you your""".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word and CJK-character tokens, in order."""
    runs = _WORD.findall(text.lower())
    if text.isascii():
        return runs
    result: list[str] = []
    for run in runs:
        if run.isascii():
            result.append(run)
            continue
        word = ""
        for char in run:
            if _is_cjk_char(char):
                if word:
                    result.append(word)
                    word = ""
                result.append(char)
            else:
                word += char
        if word:
            result.append(word)
    return result


def is_cjk(token: str) -> bool:
    return len(token) == 1 and _is_cjk_char(token)


def index_text(text: str) -> str:
    """The text an FTS5 column stores: tokens joined by spaces, so FTS5 sees each CJK character."""
    return " ".join(tokens(text))


def fts_query(query: str) -> str | None:
    """An FTS5 MATCH expression ORing the query's terms and CJK bigram phrases; None if empty."""
    terms: list[str] = []
    seen: set[str] = set()
    previous_cjk: str | None = None

    def add(term: str) -> None:
        if term not in seen:
            seen.add(term)
            terms.append(term)

    for token in tokens(query):
        if is_cjk(token):
            add(f'"{token}"')
            if previous_cjk is not None:
                add(f'"{previous_cjk} {token}"')
            previous_cjk = token
            continue
        previous_cjk = None
        if token not in STOPWORDS and (len(token) > 1 or not token.isascii()):
            add(f'"{token}"')
    return " OR ".join(terms) if terms else None
