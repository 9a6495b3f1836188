"""index_text, the text an FTS5 column stores: a fast path for ASCII texts gives exactly the
tokens of the general one (tokens(), joined by spaces), so an index built with either is the same."""

from __future__ import annotations

import random
import string

import pytest

from aibuddy_cli.text import index_text, tokens

SAMPLES = [
    "",
    "   ",
    "Deploy the API_v2 to prod-eu1 at 09:30; rollback if p99>250ms!",
    "snake_case and CamelCase, MiXeD, ALLCAPS, x1y2z3 -- 2026-12-06T10:00:00Z",
    "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds\x1cand\x1fseparators\x7fdel\x00nul",
    "__leading and trailing__ _ _x_ 3.14159 1,000,000 e-mail@example.com http://a.b/c?d=e&f",
    "周报格式 with Latin mixed in, and a café, naïve résumé, İstanbul ſ K",
    "Ünïcödé words only: Straße ΑΒΓ кириллица",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_index_text_is_the_tokens_joined_by_spaces(text: str) -> None:
    assert index_text(text) == " ".join(tokens(text))


def test_index_text_of_random_ascii_is_the_tokens_joined_by_spaces() -> None:
    rng = random.Random(35)
    alphabet = string.printable + "\x00\x01\x1b\x7f_"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        assert index_text(text) == " ".join(tokens(text)), repr(text)
