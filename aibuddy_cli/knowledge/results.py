"""The answers of the knowledge operations, each with the one JSON shape every front end gives.

The service returns plain values (hits, outcomes, references) that its parts and the knowledge
tools compose; a front end wraps them in one of these types and prints `to_json()` (`--json`),
so the CLI and any other front end give the same document by construction.
`tests/test_json_contract.py` pins the keys.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .documents import DocRef, Meta
from .imports import ImportOutcome
from .index import IndexedDoc
from .retrieval import MapEntry, SearchHit
from .summaries import SummaryOutcome

IMPORT_STATUSES = ("imported", "duplicate", "skipped", "failed")


class DocumentList(NamedTuple):
    """`kb list`: the documents the user may see."""

    user: str
    documents: list[IndexedDoc]

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "documents": [d.to_json() for d in self.documents]}


class DocumentInfo(NamedTuple):
    """`kb show`: a document's sidecar."""

    ref: DocRef
    meta: Meta

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.ref.qualified, "status": self.ref.status, **self.meta.to_json()}


class DocumentOutline(NamedTuple):
    """`kb outline` and the read_doc tool: a usable document's sections."""

    ref: DocRef
    meta: Meta

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.ref.qualified,
            "title": self.meta.title,
            "outline": [s.to_json() for s in self.meta.outline],
        }


class TaskMap(NamedTuple):
    """`kb map`: the task's usable documents, and the attached ones it cannot use (and why)."""

    task: str
    documents: list[MapEntry]
    unavailable: list[dict[str, str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "documents": [e.to_json() for e in self.documents],
            "unavailable": self.unavailable,
        }


class SearchResults(NamedTuple):
    """`kb search`: ranked section hits."""

    query: str
    task: str | None
    hits: list[SearchHit]

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "task": self.task, "hits": [h.to_json() for h in self.hits]}


class ImportReport(NamedTuple):
    """`kb import`: each file's outcome, and how many ended which way."""

    outcomes: list[ImportOutcome]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(IMPORT_STATUSES, 0)
        for outcome in self.outcomes:
            counts[outcome.status] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {"files": [outcome.to_json() for outcome in self.outcomes], **self.counts()}


class Reviewed(NamedTuple):
    """`kb publish` / `kb reject`: the documents the review moved."""

    action: str  # "published" or "rejected"
    refs: list[DocRef]

    @property
    def names(self) -> list[str]:
        return [ref.qualified for ref in self.refs]

    def to_json(self) -> dict[str, Any]:
        return {self.action: self.names}


class BodyChange(NamedTuple):
    """`kb reingest` / `kb edit`: the document, its status, and whether its body changed."""

    ref: DocRef
    changed: bool

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.ref.qualified, "status": self.ref.status, "changed": self.changed}


class SummaryReport(NamedTuple):
    """`kb summarize`: what became of each document's summary."""

    results: list[SummaryOutcome]

    def to_json(self) -> dict[str, Any]:
        return {"results": [r.to_json() for r in self.results]}
