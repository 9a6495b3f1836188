"""How a section's structure ranks it beside BM25: the question's words in its heading, its rare
words together in one place of its text (a table row under its header, a list item after the line
that introduces the list, a window of a few words), and for a question that asks what is not so,
a denial in that place.

Pure functions over where the question's words occur in each candidate section (offsets of
stemmed tokens per column, read from the index), so that they can be tested apart from SQLite.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from ..text import count_tokens

# A window of the body this many tokens wide holds "words close together": a table row, a list
# item, a sentence or two (a CJK character is a token, so Chinese text gets fewer words in it).
WINDOW = 16
CONTEXT_WEIGHT = 0.4  # a phrase only the question before holds, beside one the question asks
# What a section's structure adds to its BM25 (as a share of the best section's), each times the
# share of the question's weight it holds: its heading; its best place (passage or window); that
# place once more when it holds a denial, for a question that asks what is not so. Measured on the
# section sets of bench/eval_retrieval.py (stronger weights for heading or denial lost more
# questions than they won there).
HEADING_WEIGHT, PLACE_WEIGHT, DENIAL_WEIGHT = 0.3, 0.3, 0.3
# Sections are then placed by reciprocal-rank fusion of that score's place and their document's
# (BM25 over its whole text), the usual k: a section of the document that answers the question as
# a whole outranks a section elsewhere that shares more words with it (a glossary, an overview).
_FUSION_K = 60


class Phrase(NamedTuple):
    """A query phrase as the index stores it: its stemmed tokens, and how much it weighs."""

    stems: tuple[str, ...]
    weight: float
    asked: bool = True  # in the sentence asked, not only in the ones before it


class Evidence(NamedTuple):
    heading: float  # weight of the asked phrases its own heading holds, times the share they cover
    window: float  # weight of the distinct phrases in the best window of its text
    negation: bool  # a negation stands in or near that window


NOTHING = Evidence(0.0, 0.0, False)
Span = tuple[int, int]  # token offsets [start, end) of a line of a section's indexed text
Passage = list[Span]  # the lines one place of a section is read from

_QUOTE = re.compile(r"^\s*(?:>\s?)*")  # block quote markers, read through
_LIST_ITEM = re.compile(r"\s{0,8}(?:[-*+]|\d{1,9}[.)])\s")
_TABLE_RULE = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def passages(text: str) -> list[Passage]:
    """The places of a section's indexed text (as prose_of gives it, line by line) that a
    question's words may share: each table row with the table's header row, each list item
    (with its continuation lines) with the line that introduces the list."""
    lines = text.split("\n")
    spans: list[Span] = []
    offset = 0
    for line in lines:
        count = count_tokens(line)
        spans.append((offset, offset + count))
        offset += count
    bare = [_QUOTE.sub("", line, count=1) for line in lines]
    found: list[Passage] = []
    index = 0
    while index < len(lines):
        line = bare[index]
        if "|" in line and index + 1 < len(lines) and _TABLE_RULE.match(bare[index + 1]):
            header, index = spans[index], index + 2
            while index < len(lines) and "|" in bare[index]:
                found.append([header, spans[index]])
                index += 1
            continue
        if _LIST_ITEM.match(line):
            before = index - 1
            while before >= 0 and not bare[before].strip() and index - before < 3:
                before -= 1  # (a blank line between the list and what introduces it)
            lead = [spans[before]] if before >= 0 and bare[before].strip() else []
            while index < len(lines) and _LIST_ITEM.match(bare[index]):
                item = [spans[index]]
                index += 1
                while index < len(lines) and bare[index].strip() and not _LIST_ITEM.match(bare[index]):
                    item.append(spans[index])
                    index += 1
                found.append(lead + item)
            continue
        index += 1
    return [passage for passage in found if any(end > start for start, end in passage)]


def idf(df: int, total: int) -> float:
    """BM25's inverse document frequency of a term found in df of total sections."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def occurrences(positions: Mapping[str, Sequence[int]], stems: Sequence[str]) -> list[int]:
    """Where a phrase starts in one column: its first token's offsets followed by the others."""
    first = positions.get(stems[0], ())
    if len(stems) == 1:
        return list(first)
    rest = [set(positions.get(stem, ())) for stem in stems[1:]]
    return [start for start in first if all(start + 1 + i in later for i, later in enumerate(rest))]


def best_window(
    hits: list[tuple[int, int]], weights: Sequence[float], width: int = WINDOW
) -> tuple[float, int]:
    """(weight, start) of the window of `width` tokens whose distinct phrases weigh most; hits
    are (offset, phrase index) pairs."""
    hits = sorted(hits)
    best, best_start = 0.0, -1
    counts: dict[int, int] = {}
    total = 0.0
    low = 0
    for offset, phrase in hits:
        if counts.get(phrase, 0) == 0:
            total += weights[phrase]
        counts[phrase] = counts.get(phrase, 0) + 1
        while hits[low][0] <= offset - width:
            gone = hits[low][1]
            counts[gone] -= 1
            if counts[gone] == 0:
                total -= weights[gone]
            low += 1
        if total > best + 1e-9:
            best, best_start = total, hits[low][0]
    return best, best_start


def _inside(offsets: Sequence[int], passage: Passage) -> bool:
    """Whether any of the sorted offsets falls in one of the passage's spans."""
    for start, end in passage:
        at = bisect_left(offsets, start)
        if at < len(offsets) and offsets[at] < end:
            return True
    return False


def reach(phrases: Sequence[Phrase], sections: Iterable[Mapping[str, Mapping[str, Sequence[int]]]]) -> float:
    """What the asked phrases that any of the sections (their columns) holds weigh together: the
    most a section could match of the question (a pair of Chinese characters across two words,
    found in none of them, is left out)."""
    held: set[int] = set()
    for columns in sections:
        for index, phrase in enumerate(phrases):
            if phrase.asked and index not in held:
                if any(occurrences(column, phrase.stems) for column in columns.values()):
                    held.add(index)
    return sum(phrases[index].weight for index in held)


def evidence(
    columns: Mapping[str, Mapping[str, Sequence[int]]],
    phrases: Sequence[Phrase],
    heading_words: int,
    places: Sequence[Passage] = (),
    denials: Collection[str] = (),
    denial_weight: float = 0.0,
) -> Evidence:
    """What one section holds of the phrases: its columns (name -> stem -> offsets), the number
    of words (stop words aside) of its heading, the passages of its text (`passages`). For a
    question that asks what is not so, a denial (one of the `denials` stems) counts as one more of
    its words, weighing `denial_weight`, in the window or passage where the others are."""
    body, title = columns.get("body", {}), columns.get("title", {})
    covered: set[int] = set()
    heading = 0.0
    for phrase in phrases:
        if not phrase.asked:
            continue
        starts = occurrences(title, phrase.stems)
        if starts:
            heading += phrase.weight
            covered.update(start + i for start in starts for i in range(len(phrase.stems)))
    # A heading the question's words make up says what the section is about; one that holds them
    # among many others (an overview's) says less.
    heading *= min(1.0, len(covered) / heading_words) if heading_words else 0.0
    weights = [phrase.weight for phrase in phrases]
    found = [sorted(occurrences(body, phrase.stems)) for phrase in phrases]
    if denials:
        weights.append(denial_weight)
        found.append(sorted(offset for stem in denials for offset in body.get(stem, ())))
    hits = [(offset, index) for index, starts in enumerate(found) for offset in starts]
    window, start = best_window(hits, weights)
    negation = bool(denials) and start >= 0 and _inside(found[-1], [(start, start + WINDOW)])
    for passage in places:
        weight = sum(weights[i] for i, starts in enumerate(found) if starts and _inside(starts, passage))
        if weight > window:
            window, negation = weight, bool(denials) and _inside(found[-1], passage)
    return Evidence(heading, window, negation)


def fuse(
    ranked: Sequence[tuple[int, float]],
    doc_place: Mapping[int, int],
    found: Mapping[int, Evidence],
    reach: float,
    negated: bool,
) -> list[tuple[int, float]]:
    """ranked (section, bm25 as FTS5 gives it: lower is better) with their fused score, best
    first. A section's own score is its BM25 as a share of the best one, plus what its structure
    holds as a share of `reach` (what the asked phrases the index holds weigh); sections are then
    placed by reciprocal-rank fusion of that score's place and their document's place."""
    best = min((score for _, score in ranked), default=0.0) or -1.0
    own = {}
    for section, score in ranked:
        value = score / best
        if reach > 0:
            held = found.get(section, NOTHING)
            window = min(1.0, held.window / reach)
            value += HEADING_WEIGHT * min(1.0, held.heading / reach) + PLACE_WEIGHT * window
            if negated and held.negation:
                value += DENIAL_WEIGHT * window
        own[section] = value
    order = sorted(own, key=lambda section: -own[section])
    fused = [(s, 1 / (_FUSION_K + place) + 1 / (_FUSION_K + doc_place[s])) for place, s in enumerate(order)]
    return sorted(fused, key=lambda item: -item[1])
