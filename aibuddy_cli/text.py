"""Tokenising for lexical search: English words and CJK characters, the same at index and query time.

A CJK run has no spaces between words, so each character is a token and a query searches the
run's adjacent pairs as phrases (bigrams). That lets "周报格式" find a record that mentions 周报
without any word segmenter.
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[^\W_]+")  # letters and digits: the tokens of an ASCII text
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
    """Lower-cased word and CJK-character tokens, in order (split by the regex engine: a
    character-by-character loop in Python cost most of a knowledge index build)."""
    lowered = text.lower()
    if text.isascii():
        return _WORD.findall(lowered)
    return _TOKEN.findall(lowered)


# The CJK ranges as a regular expression's character class body: `[{CJK_CLASS}]`.
CJK_CLASS = "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in _CJK_RANGES)
# One token of tokens(): a CJK character that is a word character, or a run of other word ones.
_TOKEN = re.compile(f"(?=[^\\W_])[{CJK_CLASS}]|[^\\W_{CJK_CLASS}]+")


def count_tokens(text: str) -> int:
    """len(tokens(text)), counted by the regex engine alone (where each line of an indexed text
    starts, for long texts in any script)."""
    return len(_TOKEN.findall(text.lower()))


def is_cjk(token: str) -> bool:
    return len(token) == 1 and _is_cjk_char(token)


# An ASCII byte as index_text keeps it: a letter lower-cased, a digit itself, anything else a space.
_ASCII_INDEXED = bytes(
    code + 32 if 65 <= code <= 90 else code if 48 <= code <= 57 or 97 <= code <= 122 else 32
    for code in range(256)
)


def index_text(text: str) -> str:
    """The text an FTS5 column stores: tokens joined by spaces, so FTS5 sees each CJK character.
    An ASCII text (most records) is mapped byte by byte and split on the spaces, twice as fast as
    the regex and the same words (an index build tokenises every record)."""
    if text.isascii():
        return b" ".join(text.encode("ascii").translate(_ASCII_INDEXED).split()).decode("ascii")
    return " ".join(tokens(text))


def query_terms(query: str) -> list[str]:
    """FTS5 phrases for a free-text query: each meaningful word, and for a run of CJK characters
    its bigrams (a lone CJK character stands for itself), without repeats."""
    terms: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            terms.append(f'"{run[0]}"')
        terms.extend(f'"{a} {b}"' for a, b in zip(run, run[1:], strict=False))
        run.clear()

    for token in tokens(query):
        if is_cjk(token):
            run.append(token)
            continue
        flush()
        if token not in STOPWORDS and (len(token) > 1 or not token.isascii()):
            terms.append(f'"{token}"')
    flush()
    return list(dict.fromkeys(terms))


def shorten(text: str, limit: int) -> str:
    """text cut to at most limit characters, an ellipsis marking the cut (model echoes, digests)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(value: Any) -> Any:
    """value (a text, or lists and objects of them) with each lone surrogate (a `\\ud800` escape
    a model's JSON can hold, which no UTF-8 text can) as U+FFFD: fit to log and print."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list | tuple):
        return [printable(item) for item in value]
    if isinstance(value, dict):
        return {printable(key): printable(item) for key, item in value.items()}
    return value
