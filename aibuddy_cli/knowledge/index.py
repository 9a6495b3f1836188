"""The derived knowledge search index: documents, their sections, and an FTS5 table over sections.

A cache under .aibuddy/: every use compares the knowledge folders with it (a digest of every
body's and sidecar's stat) and re-indexes only what changed; deleting it loses nothing.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from ..cache_db import MASK, CacheDB, to_signed
from ..text import index_text
from .documents import DocRef, Meta
from .outline import heading_paths, split_lines

if TYPE_CHECKING:
    from .usable import Usable

SCHEMA_VERSION = 5  # 5: a section's path kept as a JSON list

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
)
"""

# bm25 column weights of a section: its heading, its text, its context (the document's title and
# the headings above it: "Retries" under "Payments > Failures" is about failed payments) and its
# metadata (front matter, link targets: found, but below any prose that matches).
_SECTION_WEIGHTS = "3.0, 1.0, 1.0, 0.2"
# Sections are ranked by reciprocal-rank fusion of their own BM25 rank and their document's (the
# whole text's), the usual k: a section of the document that answers the question as a whole
# outranks a section elsewhere that shares more words with it (a glossary, another overview).
_FUSION_K = 60


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


class KnowledgeIndex(CacheDB):
    schema = _SCHEMA
    version = SCHEMA_VERSION
    tables = ("meta", "docs", "sections", "sections_fts", "docs_fts")

    def holds(self, body_key: str) -> bool:
        return self.db.execute("SELECT 1 FROM docs WHERE body_key = ?", (body_key,)).fetchone() is not None

    def signatures(self) -> dict[str, int]:
        return {key: sig & MASK for key, sig in self.db.execute("SELECT body_key, signature FROM docs")}

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

    def _fused(self, expression: str, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """ranked (section id, bm25) reordered by reciprocal-rank fusion with the BM25 rank of
        each section's document over its whole text; the score kept is the fused one, negated as
        bm25's (lower is better)."""
        ids = [section for section, _ in ranked]
        doc_of = dict(
            self.db.execute(f"SELECT id, doc FROM sections WHERE id IN ({','.join('?' * len(ids))})", ids)
        )
        docs = sorted(set(doc_of.values()))
        doc_scores = dict(
            self.db.execute(
                "SELECT rowid, bm25(docs_fts, 3.0, 1.0) FROM docs_fts WHERE docs_fts MATCH ?"
                f" AND rowid IN ({','.join('?' * len(docs))})",
                [expression, *docs],
            )
        )
        by_score = sorted(docs, key=lambda doc: doc_scores.get(doc, 0.0))
        doc_rank = {doc: place for place, doc in enumerate(by_score)}
        fused = [
            (section, -(1 / (_FUSION_K + place) + 1 / (_FUSION_K + doc_rank[doc_of[section]])))
            for place, (section, _) in enumerate(ranked)
        ]
        return sorted(fused, key=lambda item: item[1])

    def search(self, expression: str, usable: Usable, limit: int) -> list[Hit]:
        """Sections matching the FTS5 expression within the usable documents, best first.

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
        pool = max(limit * 4, 50)  # the candidates fusion reorders
        ranked = self._rank(
            expression, " AND ".join(where), params, pool, selective=usable.body_keys is not None
        )
        if not ranked:
            return []
        ranked = self._fused(expression, ranked)[:limit]
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
