"""The derived knowledge search index: documents, their sections, and an FTS5 table over sections.

A cache under .aibuddy/: every use compares the knowledge folders with it (a digest of every
body's and sidecar's stat, or, where the vault's watch process answers, the files it says changed
since each folder's cursor) and re-indexes only what changed; deleting it loses nothing.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from ..store.cache_db import MASK, CacheDB, select_in, to_signed
from ..store.folder_watch import cursor_source
from ..text import STOPWORDS, index_text, is_cjk, tokens
from . import ranking
from .documents import DocRef, Meta
from .outline import heading_paths, split_lines
from .search import Query

if TYPE_CHECKING:
    from .usable import Usable

SCHEMA_VERSION = 6  # 6: the token instances and counts of sections_fts, read to rank by structure

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE docs (
    id INTEGER PRIMARY KEY,
    body_key TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    owner TEXT,
    status TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    title TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    summary TEXT,
    section_count INTEGER NOT NULL,
    signature INTEGER NOT NULL
);
CREATE TABLE sections (
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    level INTEGER NOT NULL,
    title TEXT NOT NULL,
    anchor TEXT NOT NULL,
    path TEXT NOT NULL,
    first_line INTEGER NOT NULL,
    last_line INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX sections_by_doc ON sections (doc, ord);
CREATE VIRTUAL TABLE sections_fts USING fts5(
    title, body, context, metadata, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE docs_fts USING fts5(
    title, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE section_tokens USING fts5vocab(sections_fts, instance);
CREATE VIRTUAL TABLE section_terms USING fts5vocab(sections_fts, row)
"""
_TOKENIZE = "porter unicode61 remove_diacritics 2"  # (the tables': a query's words stem alike)
# Words that deny in a section's text, as the index holds them (stemmed; a CJK character is a token,
# "don't" is "don" "t").
_DENIALS = "not no never cannot without except neither nor none unlike t 不 没 沒 无 無 非 未 别 別 除"
# Where a term is found in the best sections is read to rank them by structure, unless it occurs
# more often than this in the whole index (reading it would cost more than it tells: BM25 has
# weighed it already). A word that denies is read up to the second bound, and only for a question
# that asks what is not so.
_MAX_INSTANCES, _MAX_DENIALS = 20_000, 100_000
# A table (a header row above its rule) or a list item: a section with one has passages to read.
_HAS_PASSAGES = re.compile(r"^[\s>]*(?:\|?\s*:?-{3,}|(?:[-*+]|\d{1,9}[.)])\s)", re.MULTILINE)
_ASKED_WEIGHT = 3  # how much more the question asked weighs than the sentences before it
_FEW_DOCS = 8  # documents whose whole-text BM25 is looked up one by one; more: the best are listed
_STRUCTURE_POOL = 30  # the best sections by BM25 whose structure is read

# bm25 column weights of a section: its heading, its text, its context (the document's title and
# the headings above it: "Retries" under "Payments > Failures" is about failed payments) and its
# metadata (front matter, link targets: found, but below any prose that matches).
_SECTION_WEIGHTS = "3.0, 1.0, 1.0, 0.2"


class IndexedDocJson(TypedDict):
    doc: str
    title: str
    scope: str
    owner: str | None
    status: str
    sections: int
    summary: str | None


class IndexedDoc(NamedTuple):
    ref: DocRef
    title: str
    sha256: str
    summary: str | None
    section_count: int

    def to_json(self) -> IndexedDocJson:
        return {
            "doc": self.ref.qualified,
            "title": self.title,
            "scope": self.ref.scope,
            "owner": self.ref.owner,
            "status": self.ref.status,
            "sections": self.section_count,
            "summary": self.summary,
        }


class Hit(NamedTuple):
    ref: DocRef
    title: str
    anchor: str
    section_title: str
    path: list[str]
    start: int
    end: int
    text: str
    score: float


_FRONT_MATTER = re.compile(
    r"\A\ufeff?(?:---|\+\+\+)[ \t]*\r?\n.*?^(?:---|\+\+\+|\.\.\.)[ \t]*$", re.DOTALL | re.MULTILINE
)
_LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|<https?://[^>\s]*>|https?://[^\s)\]>]+")


def prose_of(text: str) -> tuple[str, str]:
    """What a section says, and its metadata: a front matter block (tags and owners would match
    every question about their topics) and link targets (a list of URLs repeats the names of
    every topic in its host names). The metadata is indexed apart, at a low weight: a search
    for a URL still finds it, below the prose that answers. The text shown is unchanged."""
    kept: list[str] = []

    def aside(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return " "

    prose = _LINK_TARGET.sub(aside, _FRONT_MATTER.sub(aside, text))
    return prose, " ".join(kept)


def _marks(values: list[object] | list[int] | list[str]) -> str:
    """The SQL placeholders of an IN list."""
    return ",".join("?" * len(values))


# The watch cursors (store.folder_watch.Changes) each folder's last refresh kept, one per watch: made on
# opening an index of this version that an earlier aibuddy made (it had none).
_CURSORS = """CREATE TABLE IF NOT EXISTS cursors (
    folder TEXT NOT NULL, watch TEXT NOT NULL, cursor TEXT NOT NULL, PRIMARY KEY (folder, watch)
)"""


class KnowledgeIndex(CacheDB):
    schema = _SCHEMA
    version = SCHEMA_VERSION
    tables = (
        "meta", "docs", "sections", "section_tokens", "section_terms", "sections_fts", "docs_fts", "cursors",
    )  # fmt: skip
    added = (_CURSORS,)

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._scratch: sqlite3.Connection | None = None  # the connection whose temp tables stem queries

    def holds(self, body_key: str) -> bool:
        return self.db.execute("SELECT 1 FROM docs WHERE body_key = ?", (body_key,)).fetchone() is not None

    def signatures(self, keys: list[str] | None = None) -> dict[str, int]:
        """Each indexed document's signature (its files' digest) by body key (of keys only, when given)."""
        if keys is None:
            return {key: sig & MASK for key, sig in self.db.execute("SELECT body_key, signature FROM docs")}
        rows = select_in(self.db, "SELECT body_key, signature FROM docs WHERE body_key IN ({})", keys)
        return {key: sig & MASK for key, sig in rows}

    def cursors(self) -> dict[str, list[str]]:
        """The cursors the stores' watches gave each folder when a refresh last brought the index
        up to date with it (several long-lived processes each keep their own)."""
        found: dict[str, list[str]] = {}
        for folder, cursor in self.db.execute("SELECT folder, cursor FROM cursors"):
            found.setdefault(folder, []).append(cursor)
        return found

    def keep_cursors(self, cursors: dict[str, str], dropped: Iterable[str] = ()) -> None:
        """Keep each folder's cursor (inside write()), and none of the folders dropped; those of
        watches that ended go in time."""
        self.db.executemany("DELETE FROM cursors WHERE folder = ?", [(folder,) for folder in dropped])
        self.db.executemany(
            "INSERT OR REPLACE INTO cursors (folder, watch, cursor) VALUES (?, ?, ?)",
            [(folder, cursor_source(cursor), cursor) for folder, cursor in cursors.items()],
        )
        self.db.execute(
            "DELETE FROM cursors WHERE rowid NOT IN (SELECT rowid FROM cursors ORDER BY rowid DESC LIMIT 64)"
        )

    def forget_digest(self) -> None:
        """Drop the folder digest (inside write()): the next refresh that lists the folders compares
        every document (a refresh the watch told what changed does not list them to make one)."""
        self.db.execute("DELETE FROM meta WHERE key = 'digest'")

    # --- writing (inside write()) -------------------------------------------------------

    def remove(self, body_key: str) -> None:
        row = self.db.execute("SELECT id FROM docs WHERE body_key = ?", (body_key,)).fetchone()
        if row is None:
            return
        ids = [r[0] for r in self.db.execute("SELECT id FROM sections WHERE doc = ?", row)]
        self.db.executemany("DELETE FROM sections_fts WHERE rowid = ?", [(i,) for i in ids])
        self.db.execute("DELETE FROM docs_fts WHERE rowid = ?", row)
        self.db.execute("DELETE FROM sections WHERE doc = ?", row)
        self.db.execute("DELETE FROM docs WHERE id = ?", row)

    def put(self, ref: DocRef, meta: Meta, text: str, signature: int) -> None:
        """(Re-)index one document from its sidecar outline and its body text."""
        self.remove(ref.body_key)
        cursor = self.db.execute(
            "INSERT INTO docs (body_key, scope, owner, status, doc_id, title, sha256, summary,"
            " section_count, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ref.body_key,
                ref.scope,
                ref.owner,
                ref.status,
                ref.doc_id,
                meta.title,
                meta.sha256,
                meta.summary if meta.summary_sha256 == meta.sha256 else None,
                len(meta.outline),
                to_signed(signature),
            ),
        )
        doc = cursor.lastrowid
        lines = split_lines(text)
        paths = heading_paths(meta.outline)
        for order, section in enumerate(meta.outline):
            body = "".join(lines[section.start - 1 : section.end])
            path = json.dumps(paths[order], ensure_ascii=False)  # (a heading may hold " > ")
            row = self.db.execute(
                "INSERT INTO sections (doc, ord, level, title, anchor, path, first_line, last_line, text)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc,
                    order,
                    section.level,
                    section.title,
                    section.anchor,
                    path,
                    section.start,
                    section.end,
                    body,
                ),
            )
            context = " ".join([meta.title, *paths[order][:-1]])
            prose, aside = prose_of(body)
            self.db.execute(
                "INSERT INTO sections_fts (rowid, title, body, context, metadata) VALUES (?, ?, ?, ?, ?)",
                (
                    row.lastrowid,
                    index_text(section.title),
                    index_text(prose),
                    index_text(context),
                    index_text(aside),
                ),
            )
        self.db.execute(
            "INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)",
            (doc, index_text(meta.title), index_text(prose_of(text)[0])),
        )

    # --- reading ------------------------------------------------------------------------

    def docs(self) -> list[IndexedDoc]:
        rows = self.db.execute(
            "SELECT scope, owner, doc_id, status, title, sha256, summary, section_count FROM docs"
            " ORDER BY scope, owner, doc_id"
        )
        return [IndexedDoc(DocRef(s, o, d, st), t, h, su, n) for s, o, d, st, t, h, su, n in rows]

    def _rank(
        self, expression: str, where: str, params: list[object], limit: int, *, selective: bool
    ) -> list[tuple[int, float]]:
        """(section id, bm25 score) of the best matches among the allowed documents.

        A task allows a few documents: filter while ranking. Otherwise most documents are
        allowed, so rank the FTS table alone (joining every match to its document costs more
        than the search) and filter the best candidates, widening until enough are left.
        """
        join = " FROM sections_fts JOIN sections s ON s.id = sections_fts.rowid JOIN docs d ON d.id = s.doc"
        if selective:
            return self.db.execute(
                f"SELECT s.id, bm25(sections_fts, {_SECTION_WEIGHTS}) AS score {join}"
                f" WHERE sections_fts MATCH ? AND {where} ORDER BY score LIMIT ?",
                (expression, *params, limit),
            ).fetchall()
        window = max(limit * 4, 50)
        while True:
            candidates = self.db.execute(
                f"SELECT rowid, bm25(sections_fts, {_SECTION_WEIGHTS}) AS score FROM sections_fts"
                " WHERE sections_fts MATCH ? ORDER BY score LIMIT ?",
                (expression, window),
            ).fetchall()
            ids = [section for section, _ in candidates]
            allowed: set[int] = set()
            for start in range(0, len(ids), 500):  # SQLite caps the number of parameters
                chunk = ids[start : start + 500]
                allowed.update(
                    row[0]
                    for row in self.db.execute(
                        "SELECT s.id FROM sections s JOIN docs d ON d.id = s.doc"
                        f" WHERE s.id IN ({','.join('?' * len(chunk))}) AND {where}",
                        [*chunk, *params],
                    )
                )
            ranked = [(section, score) for section, score in candidates if section in allowed][:limit]
            if len(ranked) == limit or len(candidates) < window:
                return ranked
            window *= 4

    def _doc_places(self, expression: str, sections: list[int]) -> tuple[dict[int, int], dict[int, int]]:
        """(section -> its document, document -> its place by BM25 over its whole text)."""
        rows = self.db.execute(f"SELECT id, doc FROM sections WHERE id IN ({_marks(sections)})", sections)
        doc_of = dict(rows)
        docs = sorted(set(doc_of.values()))
        score = "SELECT rowid, bm25(docs_fts, 3.0, 1.0) AS score FROM docs_fts WHERE docs_fts MATCH ?"
        if len(docs) <= _FEW_DOCS:
            doc_scores = dict(self.db.execute(f"{score} AND rowid IN ({_marks(docs)})", [expression, *docs]))
        else:  # (FTS5 scores every match of the best ones faster than it looks up each of many)
            best = max(200, 4 * len(docs))
            doc_scores = dict(self.db.execute(f"{score} ORDER BY score LIMIT ?", [expression, best]))
        by_score = sorted(docs, key=lambda doc: doc_scores.get(doc, 0.0))
        return doc_of, {doc: place for place, doc in enumerate(by_score)}

    def _stems(self, texts: list[str]) -> list[tuple[str, ...]]:
        """Each text's tokens as the index stems them, read back from a scratch FTS5 table in this
        connection's temp schema (nothing is written to the cache file)."""
        if self._scratch is not self.db:
            self.db.execute(f"CREATE VIRTUAL TABLE temp.query_text USING fts5(text, tokenize='{_TOKENIZE}')")
            vocabulary = "fts5vocab(temp, query_text, instance)"
            self.db.execute(f"CREATE VIRTUAL TABLE temp.query_tokens USING {vocabulary}")
            self._scratch = self.db
        self.db.execute("DELETE FROM temp.query_text")
        self.db.executemany("INSERT INTO temp.query_text (rowid, text) VALUES (?, ?)", enumerate(texts, 1))
        found: dict[int, list[tuple[int, str]]] = {}
        for row, offset, term in self.db.execute("SELECT doc, offset, term FROM temp.query_tokens"):
            found.setdefault(row, []).append((offset, term))
        return [tuple(term for _, term in sorted(found.get(row, []))) for row in range(1, len(texts) + 1)]

    def _structure(self, sections: list[int], query: Query) -> tuple[dict[int, ranking.Evidence], float]:
        """What each section's heading and text hold of the query's phrases (ranking.evidence),
        and what the asked phrases the index holds weigh together."""
        weighed = [(phrase, True) for phrase in query.focus] + [(phrase, False) for phrase in query.context]
        denials = _DENIALS.split() if query.negated else []
        stems = self._stems([phrase.strip('"') for phrase, _ in weighed] + denials)
        phrase_stems, denial_stems = stems[: len(weighed)], {s[0] for s in stems[len(weighed) :] if s}
        terms = sorted({stem for group in stems for stem in group})
        counts = {
            term: (rows, instances)
            for term, rows, instances in self.db.execute(
                f"SELECT term, doc, cnt FROM section_terms WHERE term IN ({_marks(terms)})", terms
            )
        }
        total = self.db.execute("SELECT coalesce(sum(section_count), 0) FROM docs").fetchone()[0]
        phrases: list[ranking.Phrase] = []
        for group, (_, asked) in zip(phrase_stems, weighed, strict=True):
            df = min((counts.get(stem, (0, 0))[0] for stem in group), default=0)
            if df:  # (a phrase the index does not hold can be found nowhere)
                weight = ranking.idf(df, total) * (1.0 if asked else ranking.CONTEXT_WEIGHT)
                phrases.append(ranking.Phrase(group, weight, asked))
        wanted = [
            term
            for term in terms
            if 0 < counts.get(term, (0, 0))[1] <= (_MAX_DENIALS if term in denial_stems else _MAX_INSTANCES)
        ]
        columns: dict[int, dict[str, dict[str, list[int]]]] = {section: {} for section in sections}
        if phrases and wanted:
            rows = self.db.execute(
                "SELECT doc, col, term, group_concat(offset) FROM section_tokens"
                f" WHERE term IN ({_marks(wanted)}) AND col IN ('title', 'body')"
                f" AND doc IN ({_marks(sections)}) GROUP BY doc, col, term",
                [*wanted, *sections],
            )
            for section, column, term, offsets in rows:
                columns[section].setdefault(column, {})[term] = [int(offset) for offset in offsets.split(",")]
        reach = ranking.reach(phrases, columns.values())
        count = sum(phrase.asked for phrase in phrases)
        denial_weight = reach / count if count and denial_stems else 0.0  # (an asked word's, on average)
        found = {}
        for section, title, text in self.db.execute(
            f"SELECT id, title, text FROM sections WHERE id IN ({_marks(sections)})", sections
        ):
            words = sum(1 for token in tokens(title) if is_cjk(token) or token not in STOPWORDS)
            places = ranking.passages(prose_of(text)[0]) if _HAS_PASSAGES.search(text) else []
            found[section] = ranking.evidence(
                columns[section], phrases, words, places, denial_stems, denial_weight
            )
        return found, reach

    def _fused(self, query: Query, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """ranked (section id, bm25) reordered by what their structure adds to their BM25 (read for
        the best _STRUCTURE_POOL) and by reciprocal-rank fusion with their document's place
        (ranking.fuse); the score kept is the fused one, negated as bm25's (lower is better)."""
        assert query.expression is not None
        sections = [section for section, _ in ranked]
        doc_of, doc_place = self._doc_places(query.expression, sections)
        found, reach = self._structure(sections[:_STRUCTURE_POOL], query)
        places = {section: doc_place[doc_of[section]] for section in sections}
        fused = ranking.fuse(ranked, places, found, reach, query.negated)
        return [(section, -score) for section, score in fused]

    def search(self, query: Query, usable: Usable, limit: int) -> list[Hit]:
        """Sections matching the query's FTS5 expression within the usable documents, best first.

        The WHERE clause is `Usable.admits` (access.py) in SQL, over the same fields."""
        where = [
            "d.status = ?",
            "(d.scope = 'personal' AND d.owner = ?" + (" OR d.scope = 'system')" if usable.system else ")"),
        ]
        params: list[object] = [usable.status, usable.user]
        if usable.body_keys is not None:
            if not usable.body_keys:
                return []
            keys = sorted(usable.body_keys)
            where.append(f"d.body_key IN ({','.join('?' * len(keys))})")
            params.extend(keys)
        if query.expression is None:
            return []
        pool = max(limit * 4, 50)  # the candidates fusion reorders
        selective = usable.body_keys is not None
        expression = query.expression
        if query.context and query.focus and not query.phrases:
            # A follow-up: its sections are ranked by the question asked, the sentences before it
            # at a third of its weight (FTS5's BM25 sums over the expression's phrases, so a
            # phrase written three times weighs three times); its documents by all of them alike.
            expression = " OR ".join(query.focus * _ASKED_WEIGHT + query.context)
        ranked = self._rank(expression, " AND ".join(where), params, pool, selective=selective)
        if not ranked:
            return []
        ranked = self._fused(query, ranked)[:limit]
        details = {
            row[0]: row[1:]
            for row in self.db.execute(
                "SELECT s.id, d.scope, d.owner, d.doc_id, d.status, d.title, s.anchor, s.title, s.path,"
                " s.first_line, s.last_line, s.text FROM sections s JOIN docs d ON d.id = s.doc"
                f" WHERE s.id IN ({','.join('?' * len(ranked))})",
                [section for section, _ in ranked],
            )
        }
        hits = []
        for section, score in ranked:
            sc, ow, di, st, t, a, stt, pa, b, e, tx = details[section]
            hits.append(
                Hit(DocRef(sc, ow, di, st), t, a, stt, json.loads(pa), b, e, tx, -score)
            )
        return hits
