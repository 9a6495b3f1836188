"""`memory review`: what a year of memory needs a person to decide, proposed and never done by itself.

Four kinds of proposal, each with a stable id (`exp-…`, `con-…`, `dup-…`, `old-…`: a digest of its
kind and of the records' names, types, descriptions, `updated` and `expires`, so the same vault
gives the same ids, and an id stops matching once one of its records changed) and one action:

- expired (`delete`): the record's `expires` moment has come; it is out of recall already.
- contradiction (`keep-one`): two records of one type give one subject two values ("Weekly report
  due Friday" / "… due Monday", "Lives in Berlin" / "Lives in Paris"), or one says not what the
  other says: the newer (`updated`) is kept, the other deleted. The rule is deterministic, over
  facts.py's content terms: each description has terms the other lacks, they are *values* (they
  hold a digit, name a day or month, or are written with a capital letter inside the
  description: a place, a person, a product), they stand in one place of the sentence (not in
  what it is about: "Rent for the flat in Porto is 900 euros" / "… in Lisbon is 1200 euros" are
  two flats), and at least as many terms agree as the larger side has differing ones. "Allergic
  to peanuts" / "allergic to shellfish" or "drinks tea" / "likes tea" differ in words that are no
  values, and are left alone: two facts, or a rewording.
- duplicate (`merge`): two records of one type state the same fact (facts.compare ≥ similarity, no
  differing key term). The one kept is a person's over extraction's, then the more recently used;
  the other's body is added to its body unless it already says it, then the other is deleted.
- unused (`archive`): neither recalled nor changed for `--unused-days` (its recency: the later of
  `updated`, `lastRecalledAt` and a hand edit). Archiving sets `expires` to today: out of recall,
  kept in the vault, back with `memory update NAME --expires never`. A record with a future
  expiry is not proposed: it has an end already.

Applying goes through MemoryService (update, delete), so every change is an ordinary write whose
previous bytes git keeps when the vault is a repository; the `.history/` file of a deleted record
goes with it, as with `memory delete`. A proposal whose records changed or went since it was
listed (an earlier proposal of the same call deleted one) is skipped, not forced.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, NamedTuple

from ..errors import MalformedRecord, NotFound, Operation, Option
from . import expiry
from .facts import Comparison, agree, compare, fact_terms
from .index import IndexedRecord, Problem
from .records import MemoryRecord

if TYPE_CHECKING:
    from .service import MemoryService

UNUSED_DAYS = 180
KINDS = ("expired", "contradiction", "duplicate", "unused")
ACTIONS = {"expired": "delete", "contradiction": "keep-one", "duplicate": "merge", "unused": "archive"}
PREFIXES = {"expired": "exp", "contradiction": "con", "duplicate": "dup", "unused": "old"}
COMMON = 500  # records of one type a term pairs at most (`_pairs`): a bound on the work
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class Proposal(NamedTuple):
    id: str
    kind: str
    action: str
    records: tuple[str, ...]  # the one kept first
    keep: str | None
    reason: str

    def summary(self) -> str:
        """What applying it does, in a few words."""
        if self.action == "merge":
            return f"merge {self.records[1]} into {self.records[0]}"
        if self.action == "keep-one":
            return f"keep {self.records[0]}, delete {self.records[1]}"
        if self.action == "archive":
            return f"archive {self.records[0]} (expires today)"
        return f"delete {self.records[0]}"


class Applied(NamedTuple):
    id: str
    action: str
    outcome: str
    detail: str


class Review(NamedTuple):
    """`memory review`: what was applied (with --apply) and the proposals that are left."""

    user: str
    unused_days: int
    applied: list[Applied]
    proposals: list[Proposal]
    problems: list[Problem]


# --- finding -------------------------------------------------------------------------------------


def _fingerprint(record: MemoryRecord) -> str:
    return "\0".join(
        (record.name, record.type, record.description, record.updated or "", record.expires or "")
    )


def _proposal(kind: str, records: Sequence[MemoryRecord], reason: str, keep: str | None = None) -> Proposal:
    # The kept record is part of the id: an id names what its apply does (a recall that makes the
    # other duplicate the more recently used one gives the proposal a new id).
    digest = hashlib.sha256(
        "\n".join([kind, keep or "", *sorted(map(_fingerprint, records))]).encode("utf-8", "surrogatepass")
    ).hexdigest()
    return Proposal(
        f"{PREFIXES[kind]}-{digest[:8]}", kind, ACTIONS[kind], tuple(r.name for r in records), keep, reason
    )


def _day(ns: int) -> str:
    try:
        return (_EPOCH + dt.timedelta(microseconds=ns // 1000)).date().isoformat()
    except OverflowError:
        return "?"


def _block(term: str) -> str:
    """The key two terms that may agree share (facts.agree: five leading letters of a word)."""
    return term[:5] if term.isascii() and term.isalpha() and len(term) >= 5 else term


def _pairs(items: Sequence[IndexedRecord]) -> list[tuple[IndexedRecord, IndexedRecord]]:
    """The pairs of records of one type that may state one fact or one subject, each once: their
    descriptions share at least half the terms of the longer one (a duplicate shares 0.6 of all,
    a contradiction as many as the larger side's differing ones).

    Prefix filtering (as in similarity joins): two sets sharing half of each share one of the
    rarer half-plus-one terms of each, so only those are indexed; a term more than COMMON records
    of one type have in that part pairs nothing (a bound on the work)."""
    keys = [{_block(term) for term in fact_terms(item.record.description).terms} for item in items]
    frequency: dict[tuple[str, str], int] = {}
    for item, found in zip(items, keys, strict=True):
        for key in found:
            frequency[item.record.type, key] = frequency.get((item.record.type, key), 0) + 1
    postings: dict[tuple[str, str], list[int]] = {}
    for number, (item, found) in enumerate(zip(items, keys, strict=True)):
        rarest = sorted(found, key=lambda key: (frequency[item.record.type, key], key))
        for key in rarest[: len(rarest) // 2 + 1]:
            postings.setdefault((item.record.type, key), []).append(number)
    candidates: set[tuple[int, int]] = set()
    for numbers in postings.values():
        if len(numbers) <= COMMON:
            candidates.update(combinations(numbers, 2))
    close = [(a, b) for a, b in candidates if 2 * len(keys[a] & keys[b]) >= max(len(keys[a]), len(keys[b]))]
    return [(items[a], items[b]) for a, b in sorted(close)]  # (sorting the few that pass, not all)


_VALUE_WORDS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december""".split()
)
_CAPITALISED = re.compile(r"(?<=[\s(\"'])[A-Z][\w'’-]*")  # a word written with a capital, not first


def _values(terms: Iterable[str], description: str) -> bool:
    """Whether every term is a value rather than a word of the predicate: it holds a digit (a
    date, a time, a version, 3月), is a day or month, or was written with a capital letter
    inside the description (a place, a name, a product)."""
    names = [word.lower() for word in _CAPITALISED.findall(description)]
    return all(
        any(char.isdigit() for char in term)
        or term in _VALUE_WORDS
        or any(name.startswith(term) or agree(term, name) for name in names)
        for term in terms
    )


def _contradicts(found: Comparison, a: str, b: str) -> bool:
    """Descriptions a and b give one subject two values (module docstring)."""
    if found.flipped:
        return not found.only_existing and not found.only_candidate and found.agreeing > 0
    if not found.differing or not found.one_value:  # two places differ: one is the subject
        return False
    differing = max(len(found.only_existing), len(found.only_candidate))
    return (
        found.agreeing >= differing and _values(found.only_existing, a) and _values(found.only_candidate, b)
    )


def _kept_of_duplicates(a: IndexedRecord, b: IndexedRecord) -> tuple[IndexedRecord, IndexedRecord, str]:
    """(kept, other, why): a person's words over extraction's, then the more recently used, the
    more recalled, the first by name."""
    if a.record.provenance != b.record.provenance:
        kept = a if a.record.provenance == "manual" else b
        why = "written by a person"
    elif a.recency_ns != b.recency_ns:
        kept = a if a.recency_ns > b.recency_ns else b
        why = "used more recently"
    elif a.record.recall_count != b.record.recall_count:
        kept = a if a.record.recall_count > b.record.recall_count else b
        why = "recalled more often"
    else:
        kept, why = a, "first by name"
    return kept, (b if kept is a else a), why


def _written(item: IndexedRecord) -> str:
    return item.record.updated or item.record.created or ""


def _kept_of_contradiction(a: IndexedRecord, b: IndexedRecord) -> tuple[IndexedRecord, IndexedRecord, str]:
    """(kept, other, why): the later statement (`updated`), then a person's, then the first by name."""
    if _written(a) != _written(b):
        kept = a if _written(a) > _written(b) else b
        other = b if kept is a else a
        return kept, other, f"the newer: updated {_written(kept)}, the other {_written(other) or 'never'}"
    if a.record.provenance != b.record.provenance:
        kept = a if a.record.provenance == "manual" else b
        return kept, (b if kept is a else a), "written by a person; both updated at once"
    return a, b, "the first by name; both updated at once"


def _paired(live: Sequence[IndexedRecord], threshold: float) -> list[Proposal]:
    """Duplicates and contradictions, a record in one of them at most (the closest pair first):
    once it is applied, the next review pairs what is left."""
    found: list[tuple[float, str, str, bool, IndexedRecord, IndexedRecord, Comparison]] = []
    for a, b in _pairs(live):
        compared = compare(a.record.description, b.record.description, replacement=False)
        if not compared.differing and compared.score >= threshold:
            found.append((compared.score, a.record.name, b.record.name, True, a, b, compared))
        elif _contradicts(compared, a.record.description, b.record.description):
            differing = max(len(compared.only_existing), len(compared.only_candidate))
            score = compared.agreeing / (compared.agreeing + differing)
            found.append((score, a.record.name, b.record.name, False, a, b, compared))
    picked: list[Proposal] = []
    taken: set[str] = set()
    for _, first, second, duplicate, a, b, compared in sorted(
        found, key=lambda item: (-item[0], item[1], item[2])
    ):
        if first in taken or second in taken:
            continue
        taken.update((first, second))
        if duplicate:
            kept, other, why = _kept_of_duplicates(a, b)
            reason = (
                f"the same {kept.record.type} fact ({compared.score:.2f}): {kept.record.name} is kept "
                f"({why}), {other.record.name}'s body is added to it unless it says it already, then "
                f"{other.record.name} is deleted"
            )
        else:
            kept, other, why = _kept_of_contradiction(a, b)
            reason = (
                f"one subject, two values ({compared.explain()}): keeps {kept.record.name} ({why}), "
                f"deletes {other.record.name}"
            )
        kind = "duplicate" if duplicate else "contradiction"
        picked.append(_proposal(kind, [kept.record, other.record], reason, kept.record.name))
    return picked


def find_proposals(
    memory: MemoryService, unused_days: int = UNUSED_DAYS
) -> tuple[list[Proposal], list[Problem]]:
    """The proposals for the user's records (by kind, then records), and the malformed files."""
    listed = memory.list_records()
    at = expiry.now()
    threshold = memory.vault.config.extraction.similarity
    proposals: list[Proposal] = []
    live: list[IndexedRecord] = []
    for item in listed.records:
        record = item.record
        if expiry.is_expired(record.expires, at):
            reason = f"expired {record.expires}; out of recall since, kept until you delete it"
            proposals.append(_proposal("expired", [record], reason))
        else:
            live.append(item)
    proposals += _paired(live, threshold)
    cutoff = expiry.now_ns() - unused_days * 86_400 * 1_000_000_000
    for item in live:
        record = item.record
        if record.expires is None and item.recency_ns < cutoff:
            reason = (
                f"neither recalled nor changed for {unused_days} days or more (last {_day(item.recency_ns)}, "
                f"recalled {record.recall_count} time(s)): archiving sets expires to today; "
                f"'aibuddy memory update {record.name} --expires never' brings it back"
            )
            proposals.append(_proposal("unused", [record], reason))
    proposals.sort(key=lambda p: (KINDS.index(p.kind), p.records, p.id))
    return proposals, listed.problems


def chosen(memory: MemoryService, ids: Iterable[str], unused_days: int = UNUSED_DAYS) -> list[Proposal]:
    """The proposals these ids name, in the order given (each once); NotFound naming the ids that
    are not proposals of this review (the records changed, or other options made them)."""
    proposals, _ = find_proposals(memory, unused_days)
    by_id = {proposal.id: proposal for proposal in proposals}
    wanted = list(dict.fromkeys(ids))
    unknown = [proposal_id for proposal_id in wanted if proposal_id not in by_id]
    if unknown:
        raise NotFound(
            f"no proposal {', '.join(unknown)} in this review: its records changed since, or it was made "
            "with other options (give the same ",
            Option("unused_days"),
            "); run ",
            Operation("memory review"),
            " again",
        )
    return [by_id[proposal_id] for proposal_id in wanted]


# --- applying ------------------------------------------------------------------------------------


def merged_body(kept: str, other: str) -> str:
    """kept's body, and other's after a blank line unless kept says it already: the same words in
    a row, spaces aside ("No sugar" is not said by "No sugary drinks")."""
    said = " ".join(other.split())
    if not said or re.search(rf"(?<!\S){re.escape(said)}(?!\S)", " ".join(kept.split())):
        return kept
    if not kept.strip():
        return other
    return f"{kept.rstrip()}\n\n{other}"


def _current(memory: MemoryService, name: str) -> MemoryRecord | None:
    try:
        return memory.show(name)
    except (NotFound, MalformedRecord):
        return None


def apply_one(memory: MemoryService, proposal: Proposal, listed: dict[str, str]) -> Applied:
    """Apply one proposal through the service; skipped when a record it would remove or change
    changed since the review listed it (listed: name -> fingerprint then), or is gone."""

    def skipped(detail: str) -> Applied:
        return Applied(proposal.id, proposal.action, "skipped", detail)

    records = {name: _current(memory, name) for name in proposal.records}
    for name, record in records.items():
        if record is None:
            return skipped(f"{name} is gone or unreadable (an earlier proposal may have removed it)")
        if _fingerprint(record) != listed.get(name):  # (the kept one too: an earlier apply may have)
            return skipped(f"{name} changed since the review: run it again")
    if proposal.action == "delete":
        memory.delete(proposal.records[0])
        return Applied(proposal.id, proposal.action, "applied", f"deleted {proposal.records[0]}")
    if proposal.action == "archive":
        memory.update(proposal.records[0], expires=expiry.today().isoformat())
        return Applied(proposal.id, proposal.action, "applied", f"archived {proposal.records[0]}")
    kept, other = proposal.records
    if proposal.action == "merge":
        kept_record, other_record = records[kept], records[other]
        assert kept_record is not None and other_record is not None
        body = merged_body(kept_record.body, other_record.body)
        if body != kept_record.body:
            memory.update(kept, body=body)
        memory.delete(other)
        added = " (its body added)" if body != kept_record.body else ""
        return Applied(proposal.id, proposal.action, "applied", f"merged {other} into {kept}{added}")
    memory.delete(other)
    return Applied(proposal.id, proposal.action, "applied", f"kept {kept}, deleted {other}")


def review(memory: MemoryService, unused_days: int = UNUSED_DAYS, apply: Sequence[str] = ()) -> Review:
    """The review; with ids to apply, those proposals applied first (in the order given) and the
    proposals then left."""
    applied: list[Applied] = []
    if apply:
        wanted = chosen(memory, apply, unused_days)
        listed = {item.record.name: _fingerprint(item.record) for item in memory.list_records().records}
        applied = [apply_one(memory, proposal, listed) for proposal in wanted]
    proposals, problems = find_proposals(memory, unused_days)
    return Review(memory.user, unused_days, applied, proposals, problems)
