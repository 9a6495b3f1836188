"""Meaning for a question mostly in Chinese or Japanese: the characters it shares with a record.

No static model shipped in a package reads Chinese (WordLlama's vocabulary is English: on
MADial-Bench ZH it made recall worse), and Chinese has no spaces between words: a question's
words (lexical.py: its characters' adjacent pairs) miss a record that says the same thing with
one character in common ("她平时吃荤吗？" and "从去年开始吃素"), or with a word the question
splits differently. This signal ranks the records by the runs of 1 to 3 characters (`grams`)
they share with the question, each weighted by how rare it is among the records, BM25 style:

    score(record) = sum over the question's grams g the record holds of
                    w(g) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average length))
    w(g) = (1 + ln(times g is in the question)) * ln(1 + (N - n + 0.5) / (n + 0.5))

where tf is how often the record holds g, length its count of grams, n the records holding g
and N the records holding any (those with Chinese or Japanese text). B is low (0.3): a long
record is not pushed down much for its length, so a short one that shares a common character or
two does not outrank the records that share the question's words.

It is fused with the words' ranking by reciprocal rank at half the weight of the words
(`WEIGHT`): the character runs a question shares with a record are weaker evidence than the
English model's vectors. A record counts as a match by meaning (recall's rule: no body without a
match) from half the best record's score, and when it holds at least 15 % of the question's
characters (`MATCH_COVERAGE`), each weighted by its rarity, one that no record holds as the
rarest: "量子计算机的原理是什么？" shares only 的 and 是 with notes that mostly hold them and matches
none, "她平时吃荤吗？" matches the note that holds 吃素.

The index keeps each record's grams with their counts (memory/index.py: an inverted store,
read only for the question's grams); a question reads the postings of its rarest `QUESTION_GRAMS`
grams. Measured with bench/eval_retrieval.py (tuned there on MADial-Bench ZH, the paraphrase set,
the dated days and common words, every one of them at once), against what was not kept: TF-IDF
cosines fused at the words' weight ranked MADial higher but put records that share a character
or two above the common-words set's answers; FTS5's own BM25 over the index's table of single
characters (runs as phrases, no new store) ranked MADial's dialogues below the words alone; and
FTS5's trigram tokenizer matches no run shorter than 3 characters (MADial's last turns: worse
than the words alone).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from operator import add
from typing import Any, NamedTuple

from ..text import CJK_CLASS  # the one definition of which characters are CJK

SIZES = (1, 2, 3)  # the lengths of the runs of characters kept
K1 = 1.2
B = 0.3
WEIGHT = 0.5  # the signal's weight in the fusion with the words (theirs is 1)
MATCH_COVERAGE = 0.15  # a match by meaning holds at least this share of the question's characters
MATCH_SHARE = 0.5  # ... and scores at least this share of the best record's score
QUESTION_GRAMS = 100  # a long question's rarest grams, the only ones read (3 SQL values each: with a
# dated question's 500 records, under the 999 an older SQLite allows)
TEXT_CHARS = 2000  # of a record's body, as for the vectors (index.embed_missing)

_RUN = re.compile(f"[{CJK_CLASS}]+")


def grams(text: str) -> Counter[str]:
    """The runs of 1 to 3 CJK characters in text (never across another character: a space, a
    comma or a Latin letter ends a run), with how often each occurs."""
    found: Counter[str] = Counter()
    if text.isascii():
        return found
    for run in _RUN.findall(text):
        # SIZES, each run's grams by size, made and counted in C (an index build counts every
        # record's: a slice per gram in Python cost twice as much).
        found.update(run)
        pairs = list(map(add, run, run[1:]))
        found.update(pairs)
        found.update(map(add, pairs, run[2:]))
    return found


def record_text(name: str, description: str, body: str) -> str:
    return f"{name.replace('-', ' ')}. {description}. {body[:TEXT_CHARS]}"


class Scored(NamedTuple):
    name: str
    score: float
    coverage: float  # the share of the question's characters the record holds, by their rarity


def weight(held: int, records: int) -> float:
    """The rarity of a gram held by `held` of `records` records (BM25's IDF, kept positive)."""
    return math.log(1 + (records - held + 0.5) / (held + 0.5))


class Weight(NamedTuple):
    score: float  # w(g) * (K1 + 1): what the gram adds to a record's score, times its count part
    cover: float  # a character's rarity, counted in the share of the question a record holds; 0 else


def weights(question: Counter[str], held: dict[str, int], records: int) -> dict[str, Weight]:
    """The weights of the question's grams some record holds (the rarest QUESTION_GRAMS of them);
    held: how many records hold each, of `records`."""
    kept = sorted((count, gram) for gram, count in held.items() if count and gram in question)
    return {
        gram: Weight(
            (1 + math.log(question[gram])) * weight(count, records) * (K1 + 1),
            weight(count, records) if len(gram) == 1 else 0.0,
        )
        for count, gram in kept[:QUESTION_GRAMS]
    }


def characters(question: Counter[str], held: dict[str, int], records: int) -> float:
    """The weight of the question's characters in all, a character no record holds weighing as
    one a single record holds (the rarest)."""
    return sum(weight(max(held.get(gram, 0), 1), records) for gram in question if len(gram) == 1)


def length_terms(average: float) -> tuple[float, float]:
    """The score's denominator is count + K1 * (1 - B + B * length / average): its constant part
    and the factor of the record's length."""
    return K1 * (1 - B), K1 * B / (average or 1.0)


def matches(ranked: list[Scored]) -> list[Scored]:
    """The ones that count as a match by meaning: from MATCH_SHARE of the best score, holding at
    least MATCH_COVERAGE of the question's weight."""
    best = ranked[0].score if ranked else 0.0
    return [item for item in ranked if item.score >= best * MATCH_SHARE and item.coverage >= MATCH_COVERAGE]


Posting = tuple[int, int, int]  # a record's id, the gram's count in it and the record's length


class GramPostings:
    """What a long-lived process keeps of one index between Chinese questions, as of one
    generation and change of its records (index.MemoryIndex.generation): the postings of the
    grams asked (numpy: ids ascending, counts, lengths). `best` scores them as
    index.rank_characters' SQL does, the very same numbers (each term in the same order of
    operations, a record's terms summed in the question's order, ties to the lower id): 100,000
    records in ~6 ms instead of ~90 ms of SQLite summing every posting. At most MAX_POSTINGS
    postings are kept (the grams kept first go first); any change of the records drops them all."""

    MAX_POSTINGS = 2_000_000  # about 48 MB

    def __init__(self, generation: object) -> None:
        import threading

        self.generation = generation
        self._guard = threading.Lock()
        self._grams: dict[str, tuple[Any, Any, Any]] = {}
        self._kept = 0

    def held(self, gram: str) -> int | None:
        """How many records hold gram, when its postings are kept."""
        with self._guard:
            found = self._grams.get(gram)
        return None if found is None else len(found[0])

    def postings(self, gram: str, read: Callable[[str], list[Posting]]) -> tuple[Any, Any, Any]:
        """gram's (ids, counts, lengths), kept or read (ids ascending)."""
        import numpy as np

        with self._guard:
            found = self._grams.get(gram)
        if found is not None:
            return found
        rows = np.array(read(gram), dtype=np.int64).reshape(-1, 3)
        found = (rows[:, 0].copy(), rows[:, 1].astype(np.float64), rows[:, 2].astype(np.float64))
        with self._guard:
            while self._grams and self._kept + len(found[0]) > self.MAX_POSTINGS:
                self._kept -= len(self._grams.pop(next(iter(self._grams)))[0])
            self._grams[gram] = found
            self._kept += len(found[0])
        return found

    def best(
        self,
        weights: dict[str, Weight],
        constant: float,
        per_gram: float,
        read: Callable[[str], list[Posting]],
        among: list[int] | None,
        size: int,
    ) -> list[tuple[int, float, float]]:
        """The `size` best (id, score, cover) of the records holding a gram of weights (of among,
        when given), best first, then by id."""
        import numpy as np

        found = {gram: self.postings(gram, read) for gram in weights}
        top = max((int(ids[-1]) for ids, _, _ in found.values() if len(ids)), default=-1) + 1
        score, cover, seen = np.zeros(top), np.zeros(top), np.zeros(top, dtype=bool)
        for gram, (share, rarity) in weights.items():
            ids, counts, lengths = found[gram]
            score[ids] += share * counts / (counts + constant + per_gram * lengths)
            cover[ids] += rarity
            seen[ids] = True
        if among is not None:
            allowed = np.zeros(top, dtype=bool)
            inside = np.asarray([key for key in among if key < top], dtype=np.int64)
            allowed[inside] = True
            seen &= allowed
        ids = np.nonzero(seen)[0]
        order = np.lexsort((ids, -score[ids]))[:size]
        return [(int(key), float(score[key]), float(cover[key])) for key in ids[order]]
