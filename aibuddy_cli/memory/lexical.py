"""Ranking a user's memory records by a question's words: the lexical half of recall.

The derived index (index.py) keeps an FTS5 table over each record's name, description and body;
this module chooses the records a question's words find there and orders them.

Rarer and common words. FTS5's bm25() gives a word that half of the records or more hold an IDF
of about zero (it clamps log((N - n + 0.5) / (n + 0.5)) at 1e-6), so such a word moved no score;
recall's old floor (a share of the best score) then dropped the records holding only such words,
and over 200 records they were left out of the match: over a payments team's notes "payments
release marker" found the one record holding "marker" and none of the release checklist, and a
question of common words beside one no record holds found nothing. Now:
- the records holding a rarer word (held by fewer than half of the records) are scored by FTS5's
  BM25 over those words (columns name : description : body weighing 4 : 3 : 1), as before;
- a common word weighs little but counts: each one a candidate holds adds
  ln(1 + (N - n + 0.5) / (n + 0.5)) to its score (BM25's IDF kept positive: ln 2 at most);
- when the rarer words find fewer records than asked for, records holding only common words fill
  the rest: those whose name or description holds all of them, then those holding all of them,
  then those whose name or description holds one, then any (`WordRanking._fill`).
Scoring every record that holds a word 7,000 of 10,000 records hold costs about 5 ms; the fill and
the common words' gains cost a fraction of a millisecond (FTS5 stops reading when it has enough,
and the gains look up only the candidates), so recall keeps its speed.

Time. When the question names a time (dates.read_time), the records of that time (by their days:
header dates and the dates their text states) that share a word with the question come first,
ranked by its words; records of other times follow only when those are fewer than asked for: the
date narrows, the question's subject decides within it, and a rare word from another month no
longer outweighs the date. Records of that time that share no word with the question come last,
with a score of 0 ("what did I decide last week?").

A long-lived process (the MCP server) keeps, per index, and after a save renews from the records
that changed only (index.MemoryIndex.changed_since; `PhraseScores.after`), each phrase's records
and its share of the BM25 score (`PhraseScores`: FTS5's own
bm25() of the phrase alone, which is what the phrase adds to a question of several; summed here in
FTS5's order, so the scores are the very same numbers); a question then sums and orders the
records of its phrases in numpy (about 1 ms where FTS5 scoring every record that holds a word 15 %
of 100,000 records hold costs about 20 ms), and reads the names of the best only.

Recall's floor (`above_floor`): a record must share a word with the question (a stopword does not
count: text.query_terms), or, when none does, be of the time it names. There is no share-of-the-
best floor any more: a record that matches only common words is a candidate, and recall fills its
five with the best.
"""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..dates import Span, read_time
from ..store.cache_db import select_in
from ..text import query_terms

if TYPE_CHECKING:
    import numpy as np

COLUMN_WEIGHTS = "4.0, 3.0, 1.0"  # bm25(): a word in the name or description says more than in the body
DATED_LIMIT = 500  # records of a question's time listed when they share no word with it
_NAME_OR_DESCRIPTION = "{name description}: "
LOOKUPS = 30  # records up to which a common word's gain is looked up one by one (else read at once)


class Term(NamedTuple):
    phrase: str  # an FTS5 phrase, as text.query_terms makes it
    held: int  # how many records hold it


class Within(NamedTuple):
    """A condition on the FTS5 rowid (a record's id) and its values. The unary plus keeps SQLite
    from handing it to FTS5 as rowid lookups, which would run the match, and bm25()'s count of the
    records holding each term, once per listed record: the terms' records are read once instead.
    days, keep: the same condition, for PhraseScores, when it is one of days (`_days`)."""

    sql: str
    values: tuple[object, ...]
    days: tuple[Span, ...] = ()
    keep: bool = True

    def both(self, other: Within) -> Within:
        return Within(f"{self.sql}{other.sql}", (*self.values, *other.values))


EVERYWHERE = Within("", ())


def _without(keys: Sequence[int]) -> Within:
    if not keys:
        return EVERYWHERE
    return Within(f" AND +records_fts.rowid NOT IN ({', '.join('?' * len(keys))})", tuple(keys))


def _days(spans: Sequence[Span], keep: bool) -> Within:
    clauses = " OR ".join("day BETWEEN ? AND ?" for _ in spans)
    values = tuple(bound.isoformat() for span in spans for bound in span)
    inside = "IN" if keep else "NOT IN"
    sql = f" AND +records_fts.rowid {inside} (SELECT id FROM record_days WHERE {clauses})"
    return Within(sql, values, tuple(spans), keep)


def common_weight(held: int, total: int) -> float:
    """What a word that half of the records or more hold adds to a record holding it: BM25's IDF
    kept positive, ln(1 + (N - n + 0.5) / (n + 0.5)), between 0 and ln 2."""
    return math.log(1 + (total - held + 0.5) / (held + 0.5))


class Candidate(NamedTuple):
    key: int  # the record's id in the index
    name: str
    score: float


class WordRanking:
    """One question's terms over one index: how many records hold each, and what they find."""

    def __init__(
        self, db: sqlite3.Connection, phrases: list[str], live: str, scores: PhraseScores | None = None
    ) -> None:
        """scores: a long-lived process's (module docstring), None for the SQL alone."""
        self.db = db
        self.live = live  # the SQL condition on `r` of a record in recall (not expired)
        self.scores = scores
        if scores is not None:
            total = scores.total(db)
            held = [Term(phrase, scores.held(db, phrase)) for phrase in phrases]
        else:
            records = db.execute("SELECT count(*) FROM records").fetchone()[0]
            broken = db.execute("SELECT count(*) FROM records WHERE error IS NOT NULL").fetchone()[0]
            total = records - broken  # FTS5's row count: each well-formed record has one row
            count = "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?"
            held = [Term(phrase, db.execute(count, (phrase,)).fetchone()[0]) for phrase in phrases]
        self.rare = [term.phrase for term in held if term.held and 2 * term.held < total]
        self.rare_held = sum(term.held for term in held if 2 * term.held < total)  # at most the records
        self.common = {
            term.phrase: common_weight(term.held, total) for term in held if 2 * term.held >= total
        }

    def best(self, within: Within, limit: int) -> list[Candidate]:
        """The best `limit` records that share a term with the question and pass `within`."""
        if limit <= 0 or not (self.rare or self.common):
            return []
        found = self._holding_rare(within, limit) if self.rare else []
        if self.common and len(found) < limit:
            filled = self._fill(within, [c.key for c in found], limit - len(found))
            gained = self._common_gains([c.key for c in filled])
            found += [c._replace(score=gained.get(c.key, 0.0)) for c in filled]
        return sorted(found, key=lambda c: -c.score)  # stable: a tie keeps the order found

    def _holding_rare(self, within: Within, limit: int) -> list[Candidate]:
        """The records holding a rarer term: FTS5's BM25 over those terms, plus the weight of each
        common term a record holds. FTS5 looks that up record by record (about 20 µs each) when
        the rarer terms are in few records; otherwise each common term's records are read once,
        into a lookup (about 0.8 ms for one that 7,000 of 10,000 records hold). With PhraseScores,
        the same scores summed in numpy (`_summed`)."""
        if self.scores is not None and (within.days or not within.sql):  # (a condition it can read)
            return self._summed(within, limit, self.scores)
        common = "SELECT c.rowid FROM records_fts c WHERE c.records_fts MATCH ?"
        if self.rare_held <= LOOKUPS:
            holds = f"EXISTS ({common} AND c.rowid = records_fts.rowid)"
        else:
            holds = f"records_fts.rowid IN ({common})"
        gains = "".join(f" + ? * ({holds})" for _ in self.common)
        rows = self.db.execute(
            f"SELECT r.id, r.name, -bm25(records_fts, {COLUMN_WEIGHTS}){gains} AS score FROM records_fts"
            f" JOIN records r ON r.id = records_fts.rowid WHERE records_fts MATCH ?{within.sql}"
            f" AND r.error IS NULL AND {self.live} ORDER BY score DESC, r.name LIMIT ?",
            (
                *(value for phrase, gain in self.common.items() for value in (gain, phrase)),
                " OR ".join(self.rare),
                *within.values,
                limit,
            ),
        )
        return [Candidate(*row) for row in rows]

    def _summed(self, within: Within, limit: int, scores: PhraseScores) -> list[Candidate]:
        """_holding_rare's records and scores, from each phrase's kept scores: the records of the
        rarer phrases, each one's score summed as bm25() sums it (phrase by phrase, in the order
        of the query), plus the weight of each common phrase it holds; the best `limit` by score,
        then name (every record tied with the last one read, so the order by name is exact)."""
        import numpy as np

        rare = [scores.of(self.db, phrase) for phrase in self.rare]
        ids = np.unique(np.concatenate([keys for keys, _ in rare]))
        total = np.zeros(len(ids))
        for keys, values in rare:
            share = np.zeros(len(ids))
            share[np.searchsorted(ids, keys)] = values
            total += share
        for phrase, gain in self.common.items():
            keys = scores.of(self.db, phrase)[0]
            total += gain * np.isin(ids, keys, assume_unique=True)
        if within.days:
            inside = np.isin(ids, scores.of_days(self.db, within.days), assume_unique=True)
            chosen = inside if within.keep else ~inside
            ids, total = ids[chosen], total[chosen]
        # Records out of recall (expired) may be among the best: read as many more.
        out = f"SELECT count(*) FROM records r WHERE r.expires_ns IS NOT NULL AND NOT {self.live}"
        wanted = limit + self.db.execute(out).fetchone()[0]
        if len(ids) > wanted:
            least = np.partition(total, len(total) - wanted)[len(total) - wanted]
            chosen = total >= least
            ids, total = ids[chosen], total[chosen]
        best = dict(zip(ids.tolist(), total.tolist(), strict=True))
        named = "SELECT r.id, r.name FROM records r WHERE r.id IN ({}) AND r.error IS NULL AND " + self.live
        found = [Candidate(key, name, best[key]) for key, name in select_in(self.db, named, list(best))]
        return sorted(found, key=lambda c: (-c.score, c.name))[:limit]

    def _fill(self, within: Within, taken: list[int], limit: int) -> list[Candidate]:
        """Up to `limit` records holding only common terms, the likeliest first: those whose name
        or description holds all of them, then those holding all, then those whose name or
        description holds one, then any; within each, the latest indexed (FTS5 reads its matches
        in that order and stops when it has enough, so this costs well under a millisecond where
        scoring all the records that hold a common word would cost milliseconds)."""
        every, some = " AND ".join(self.common), " OR ".join(self.common)
        expressions = [f"{_NAME_OR_DESCRIPTION}({every})", every, f"{_NAME_OR_DESCRIPTION}({some})", some]
        found: list[Candidate] = []
        for expression in dict.fromkeys(expressions):
            if len(found) >= limit:
                break
            others = within.both(_without([*taken, *(c.key for c in found)]))
            rows = self.db.execute(
                "SELECT r.id, r.name FROM records_fts JOIN records r ON r.id = records_fts.rowid"
                f" WHERE records_fts MATCH ?{others.sql} AND r.error IS NULL AND {self.live}"
                " ORDER BY records_fts.rowid DESC LIMIT ?",
                (expression, *others.values, limit - len(found)),
            )
            found += [Candidate(key, name, 0.0) for key, name in rows]
        return found

    def _common_gains(self, keys: list[int]) -> dict[int, float]:
        """What the common terms add to each of the records `keys` (the fill): the weight of each
        one it holds. FTS5 looks a few records up one by one (about 20 µs each); for more, reading
        the term's records once is cheaper (about 0.5 ms for one 7,000 of 10,000 records hold)."""
        gains: dict[int, float] = {}
        if not keys:
            return gains
        among = f"{'' if len(keys) <= LOOKUPS else '+'}rowid IN ({', '.join('?' * len(keys))})"
        for phrase, gain in self.common.items():
            query = f"SELECT rowid FROM records_fts WHERE records_fts MATCH ? AND {among}"
            for (key,) in self.db.execute(query, (phrase, *keys)):
                gains[key] = gains.get(key, 0.0) + gain
        return gains


def _varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another (FTS5's sizes and averages)."""
    values: list[int] = []
    value, read = 0, 0
    for byte in blob:
        read += 1
        if read == 9:  # the ninth byte: all 8 bits
            values.append((value << 8) | byte)
            value, read = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            values.append((value << 7) | byte)
            value, read = 0, 0
    return values


K1, B = 1.2, 0.75  # FTS5's bm25() constants


def bm25_share(freq: np.ndarray, length: np.ndarray, held: int, rows: int, tokens: int) -> np.ndarray:
    """What FTS5's bm25() gives records for a phrase alone (negated), computed as its C code does
    (the same operations in the same order, in float64): freq, the phrase's hits in each record
    weighted by column; length, each record's tokens; held, the records holding it; rows and
    tokens, FTS5's row count and tokens in all."""
    import numpy as np

    idf = math.log((rows - held + 0.5) / (held + 0.5))
    if idf <= 0.0:
        idf = 1e-6
    average = float(tokens) / float(rows)
    with np.errstate(all="ignore"):
        return idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * length / average)))


class Postings(NamedTuple):
    """A phrase's records (ids, ascending) and the score it gives each, at the index's stats
    (rows, tokens); freq and length (bm25_share's), when they reproduce those scores exactly."""

    ids: np.ndarray
    values: np.ndarray
    freq: np.ndarray | None = None
    length: np.ndarray | None = None


class PhraseScores:
    """What a long-lived process keeps of one index between questions, as of one generation
    and change of its records (index.MemoryIndex.generation): each phrase's records (ids, sorted)
    and what it adds to each one's BM25 score (FTS5's bm25() of the phrase alone), the records
    in FTS5, the records of a span of days. Shared by the threads of a server (each its own
    connection); a thread that reads a later change makes a new one (`kept_scores`), which
    takes over the phrases of this one: their changed records are read again, and every score
    computed anew at the new stats (bm25_share: the same numbers FTS5 gives), so a save costs
    the next question the changed records only. At most MAX_POSTINGS records in all are kept
    (the phrases kept first go first)."""

    MAX_POSTINGS = 2_000_000  # about 32 MB

    def __init__(self, generation: object) -> None:
        self.generation = generation
        self._guard = threading.Lock()
        self._phrases: dict[str, Postings] = {}
        self._stale: dict[str, tuple[Postings, np.ndarray]] = {}  # from an earlier change: (its, changed ids)
        self._lengths: np.ndarray | None = None  # each record's tokens by id (-1: none), once read
        self._days: dict[tuple[Span, ...], np.ndarray] = {}
        self._stats: tuple[int, int] | None = None
        self._kept = 0

    def after(self, generation: object, changed: Sequence[int]) -> PhraseScores:
        """A PhraseScores at a later change of the same index, the records `changed` since."""
        import numpy as np

        later = PhraseScores(generation)
        ids = np.asarray(changed, dtype=np.int64)
        with self._guard:
            for phrase, (postings, before) in self._stale.items():
                later._stale[phrase] = (postings, np.union1d(before, ids))
            for phrase, postings in self._phrases.items():
                later._stale[phrase] = (postings, ids)
            later._kept = self._kept
            if self._lengths is not None:
                later._lengths = self._lengths.copy()
                later._lengths[ids[ids < len(later._lengths)]] = -1
        return later

    def stats(self, db: sqlite3.Connection) -> tuple[int, int]:
        """FTS5's row count (each well-formed record has one row) and tokens in all."""
        if self._stats is None:
            row = db.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
            sizes = _varints(row[0]) if row is not None else []
            self._stats = (sizes[0], sum(sizes[1:])) if sizes else (0, 0)
        return self._stats

    def total(self, db: sqlite3.Connection) -> int:
        """The records FTS5 holds (each well-formed record has one row)."""
        return self.stats(db)[0]

    def held(self, db: sqlite3.Connection, phrase: str) -> int:
        return len(self.of(db, phrase)[0])

    def _lengths_of(self, db: sqlite3.Connection, ids: np.ndarray) -> np.ndarray | None:
        """The tokens of each of the records ids (FTS5's sizes), None when one has none."""
        import numpy as np

        if not len(ids):
            return np.zeros(0)
        with self._guard:
            lengths = self._lengths
        wanted = "SELECT id, sz FROM records_fts_docsize"
        if lengths is None or int(ids.max()) >= len(lengths) or (lengths[ids] < 0).any():
            if lengths is None:
                rows = db.execute(wanted).fetchall()
            else:
                unknown = (ids >= len(lengths)) | (lengths[np.minimum(ids, len(lengths) - 1)] < 0)
                rows = select_in(db, wanted + " WHERE id IN ({})", ids[unknown].tolist())
            before = 0 if lengths is None else len(lengths) - 1
            top = max([before, int(ids.max()), *(key for key, _ in rows)])
            grown = np.full(top + 1, -1.0)
            if lengths is not None:
                grown[: len(lengths)] = lengths
            for key, blob in rows:
                grown[key] = sum(_varints(blob))
            with self._guard:
                self._lengths = lengths = grown
        found = lengths[ids]
        return None if (found < 0).any() else found

    def _read(self, db: sqlite3.Connection, phrase: str, among: np.ndarray | None = None) -> Postings:
        """The phrase's records (of among, when given) and their scores, from FTS5."""
        import numpy as np

        within = "" if among is None else f" AND rowid IN ({', '.join('?' * len(among))})"
        rows = db.execute(
            f"SELECT rowid, -bm25(records_fts, {COLUMN_WEIGHTS}) FROM records_fts"
            f" WHERE records_fts MATCH ?{within} ORDER BY rowid",
            (phrase, *([] if among is None else among.tolist())),
        ).fetchall()
        ids = np.fromiter((key for key, _ in rows), dtype=np.int64, count=len(rows))
        values = np.fromiter((value for _, value in rows), dtype=np.float64, count=len(rows))
        return Postings(ids, values)

    def _counted(self, db: sqlite3.Connection, postings: Postings, held: int) -> Postings:
        """postings with the weighted hits of each record (read back from its score: a whole
        number, since the column weights are), when bm25_share gives the very same scores."""
        import numpy as np

        rows, tokens = self.stats(db)
        length = self._lengths_of(db, postings.ids)
        if length is None or not len(postings.ids) or not held <= rows:  # (rows read after a write)
            return postings
        idf = max(math.log((rows - held + 0.5) / (held + 0.5)), 1e-6)
        norm = K1 * (1 - B + B * length / (float(tokens) / float(rows)))
        with np.errstate(all="ignore"):
            freq = np.rint(postings.values * norm / (idf * (K1 + 1.0) - postings.values))
        if not np.array_equal(bm25_share(freq, length, held, rows, tokens), postings.values):
            return postings
        return postings._replace(freq=freq, length=length)

    def of(self, db: sqlite3.Connection, phrase: str) -> tuple[np.ndarray, np.ndarray]:
        """The phrase's records (ids, ascending) and the score it gives each."""
        kept = self._phrases.get(phrase)
        if kept is not None:
            return kept.ids, kept.values
        postings = self._renewed(db, phrase)
        if postings is None:
            postings = self._read(db, phrase)
            postings = self._counted(db, postings, len(postings.ids))
        with self._guard:
            if phrase in self._phrases:  # another thread read it meanwhile
                return self._phrases[phrase].ids, self._phrases[phrase].values
            self._stale.pop(phrase, None)
            while self._phrases and self._kept + len(postings.ids) > self.MAX_POSTINGS:
                self._kept -= len(self._phrases.pop(next(iter(self._phrases))).ids)
            self._phrases[phrase] = postings
            self._kept += len(postings.ids)
        return postings.ids, postings.values

    def _renewed(self, db: sqlite3.Connection, phrase: str) -> Postings | None:
        """The phrase's postings from those of an earlier change: its changed records read
        again, every score computed at the stats of now; None when that cannot be exact."""
        import numpy as np

        stale = self._stale.get(phrase)
        if stale is None:
            return None
        before, changed = stale
        if before.freq is None or before.length is None:
            return None
        kept = ~np.isin(before.ids, changed, assume_unique=True)
        fresh = self._read(db, phrase, changed) if len(changed) else Postings(changed, changed.astype(float))
        ids = np.concatenate([before.ids[kept], fresh.ids])
        held = len(ids)
        fresh = self._counted(db, fresh, held)
        if fresh.freq is None or fresh.length is None:
            return None
        rows, tokens = self.stats(db)
        if held > rows:  # (the counts were read before a later write)
            return None
        order = np.argsort(ids, kind="stable")
        freq = np.concatenate([before.freq[kept], fresh.freq])[order]
        length = np.concatenate([before.length[kept], fresh.length])[order]
        return Postings(ids[order], bm25_share(freq, length, held, rows, tokens), freq, length)

    def of_days(self, db: sqlite3.Connection, spans: tuple[Span, ...]) -> np.ndarray:
        """The ids of the records with a day in one of spans (ascending)."""
        kept = self._days.get(spans)
        if kept is None:
            import numpy as np

            clauses = " OR ".join("day BETWEEN ? AND ?" for _ in spans)
            values = [bound.isoformat() for span in spans for bound in span]
            rows = db.execute(f"SELECT DISTINCT id FROM record_days WHERE {clauses} ORDER BY id", values)
            kept = np.fromiter((key for (key,) in rows), dtype=np.int64)
            with self._guard:
                self._days[spans] = kept
        return kept


_KEPT: dict[str, PhraseScores | None] = {}  # by index file: a server's, from its second question on
_KEPT_GUARD = threading.Lock()
KEPT_INDEXES = 4  # the indexes (users) a process keeps scores of, the last used: a server of many
# users keeps at most this many stores of MAX_POSTINGS


def keep_latest(kept: dict, key: object, value: object, most: int = KEPT_INDEXES) -> None:
    """kept[key] = value, as the latest used; the ones used longest ago go beyond `most`."""
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > most:
        del kept[next(iter(kept))]


def later_than(kept: object, read: tuple[int | None, int | None]) -> bool:
    """Whether a kept generation (lineage, seq) is a later change of the same index than the one
    a reader's snapshot shows (renewing it to the reader's would go back: changed_since sees none)."""
    if not isinstance(kept, tuple) or kept[0] != read[0]:
        return False
    return (kept[1] or 0) > (read[1] or 0)


def kept_scores(
    where: str,
    db: sqlite3.Connection,
    lineage: int | None,
    seq: int | None,
    changed_since: Callable[[int | None], list[int] | None],
) -> PhraseScores | None:
    """The process's PhraseScores of the index at `where` (read on db), at its generation
    `lineage` and latest change `seq`: the kept one, or one renewed from it (the records changed
    since, by changed_since), or a new one; None for the first question on it in a process
    without numpy loaded (a one-shot command asks once and does not pay numpy's import, about
    60 ms, for it), and for an index of an older version (no generation: SQL alone)."""
    with _KEPT_GUARD:
        if lineage is None or (where not in _KEPT and "numpy" not in sys.modules):
            keep_latest(_KEPT, where, None)
            return None
        scores = _KEPT.get(where)
    if scores is not None and later_than(scores.generation, (lineage, seq)):
        return None  # another thread keeps a later state than this one reads: ranked in SQL
    if scores is None or scores.generation != (lineage, seq):
        later = None
        if scores is not None and scores.generation[0] == lineage:  # type: ignore[index]
            changed = changed_since(scores.generation[1])  # type: ignore[index]
            if changed is not None:
                later = scores.after((lineage, seq), changed)
        scores = later or PhraseScores((lineage, seq))
    with _KEPT_GUARD:
        keep_latest(_KEPT, where, scores)
    return scores


def rank(
    db: sqlite3.Connection,
    query: str,
    limit: int,
    today: dt.date | None,
    live: str,
    scores: PhraseScores | None = None,
) -> list[tuple[str, float]]:
    """The records query's words find (module docstring): (name, score), best first; a question
    that names a time (read against today; none when today is None) has its records first.
    scores: a long-lived process's (kept_scores), None to rank in SQLite alone."""
    spans, words = read_time(query, today) if today is not None else ([], query)
    if limit <= 0:
        return []
    ranking = WordRanking(db, query_terms(words), live, scores)
    if not spans:
        return [(c.name, c.score) for c in ranking.best(EVERYWHERE, limit)]
    inside = ranking.best(_days(spans, keep=True), limit)
    outside = ranking.best(_days(spans, keep=False), limit - len(inside))
    shared = [(c.name, c.score) for c in (*inside, *outside)]
    if len(shared) >= limit:
        return shared
    taken = {name for name, _ in shared}
    dated = [(name, 0.0) for name in of_days(db, spans, live) if name not in taken]
    return shared + dated[: limit - len(shared)]


def of_days(db: sqlite3.Connection, spans: Sequence[Span], live: str) -> list[str]:
    """The well-formed records in recall with a day in one of spans, newest first (at most
    DATED_LIMIT)."""
    clauses = " OR ".join("d.day BETWEEN ? AND ?" for _ in spans)
    values = [bound.isoformat() for span in spans for bound in span]
    # (Each record once by its id, not DISTINCT over a join: a month of 100,000 records, 9,000 of
    # them, costs 10 ms instead of 17.)
    rows = db.execute(
        "SELECT r.name, r.recency_ns FROM records r WHERE r.id IN"
        f" (SELECT d.id FROM record_days d WHERE {clauses}) AND r.error IS NULL AND {live}"
        " ORDER BY r.recency_ns DESC, r.name LIMIT ?",
        (*values, DATED_LIMIT),
    )
    return [name for name, _ in rows]


def above_floor(scored: Sequence[tuple[str, float]], limit: int) -> list[str]:
    """The names recall returns of a ranking by words: the first `limit` that share a word with
    the question (a score above 0); those of the question's time alone (all 0) when none does."""
    chosen = [name for name, score in scored[:limit] if score > 0]
    return chosen or [name for name, _ in scored[:limit]]
