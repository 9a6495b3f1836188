"""The answers of the knowledge operations, each with the one JSON shape every front end gives.

The service returns plain values (hits, outcomes, references) that its parts and the knowledge
tools compose; a front end wraps them in one of these types and prints `to_json()` (`--json`),
so the CLI and any other front end give the same document by construction.
`tests/operations/test_json_contract.py` pins the keys.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, TypedDict

from .documents import DocRef, Meta, MetaJson
from .imports import ImportOutcome, ImportOutcomeJson
from .index import IndexedDoc, IndexedDocJson
from .outline import SectionJson
from .retrieval import MapEntry, MapEntryJson, SearchHit, SearchHitJson, UnavailableJson
from .summaries import NotSummarizedJson, SummarizedJson, SummaryOutcome

IMPORT_STATUSES = ("imported", "duplicate", "skipped", "failed")


class DocumentListJson(TypedDict):
    user: str
    documents: list[IndexedDocJson]


class DocumentList(NamedTuple):
    """`kb list`: the documents the user may see."""

    user: str
    documents: list[IndexedDoc]

    def to_json(self) -> DocumentListJson:
        return {"user": self.user, "documents": [d.to_json() for d in self.documents]}


class DocumentInfoJson(MetaJson):
    doc: str
    status: str


class DocumentInfo(NamedTuple):
    """`kb show`: a document's sidecar."""

    ref: DocRef
    meta: Meta

    def to_json(self) -> DocumentInfoJson:
        return {"doc": self.ref.qualified, "status": self.ref.status, **self.meta.to_json()}


class DocumentOutlineJson(TypedDict):
    doc: str
    title: str
    outline: list[SectionJson]


class DocumentOutline(NamedTuple):
    """`kb outline` and the read_doc tool: a usable document's sections."""

    ref: DocRef
    meta: Meta

    def to_json(self) -> DocumentOutlineJson:
        return {
            "doc": self.ref.qualified,
            "title": self.meta.title,
            "outline": [s.to_json() for s in self.meta.outline],
        }


class TaskMapJson(TypedDict):
    task: str
    documents: list[MapEntryJson]
    unavailable: list[UnavailableJson]


class TaskMap(NamedTuple):
    """`kb map`: the task's usable documents, and the attached ones it cannot use (and why)."""

    task: str
    documents: list[MapEntry]
    unavailable: list[UnavailableJson]

    def to_json(self) -> TaskMapJson:
        return {
            "task": self.task,
            "documents": [e.to_json() for e in self.documents],
            "unavailable": self.unavailable,
        }


class SearchResultsJson(TypedDict):
    query: str
    task: str | None
    hits: list[SearchHitJson]


class SearchResults(NamedTuple):
    """`kb search`: ranked section hits."""

    query: str
    task: str | None
    hits: list[SearchHit]

    def to_json(self) -> SearchResultsJson:
        return {"query": self.query, "task": self.task, "hits": [h.to_json() for h in self.hits]}


class ImportReportJson(TypedDict):
    files: list[ImportOutcomeJson]
    imported: int  # the counts of IMPORT_STATUSES, in that order
    duplicate: int
    skipped: int
    failed: int


class ImportReport(NamedTuple):
    """`kb import`: each file's outcome, and how many ended which way."""

    outcomes: list[ImportOutcome]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(IMPORT_STATUSES, 0)
        for outcome in self.outcomes:
            counts[outcome.status] += 1
        return counts

    def to_json(self) -> ImportReportJson:
        counts = self.counts()
        return {
            "files": [outcome.to_json() for outcome in self.outcomes],
            "imported": counts["imported"],
            "duplicate": counts["duplicate"],
            "skipped": counts["skipped"],
            "failed": counts["failed"],
        }


class PublishedJson(TypedDict):
    published: list[str]


class RejectedJson(TypedDict):
    rejected: list[str]


class Reviewed(NamedTuple):
    """`kb publish` / `kb reject`: the documents the review moved."""

    action: Literal["published", "rejected"]  # the document's one key
    refs: list[DocRef]

    @property
    def names(self) -> list[str]:
        return [ref.qualified for ref in self.refs]

    def to_json(self) -> PublishedJson | RejectedJson:
        if self.action == "published":
            return {"published": self.names}
        return {"rejected": self.names}


class BodyChangeJson(TypedDict):
    doc: str
    status: str
    changed: bool


class BodyChange(NamedTuple):
    """`kb reingest` / `kb edit`: the document, its status, and whether its body changed."""

    ref: DocRef
    changed: bool

    def to_json(self) -> BodyChangeJson:
        return {"doc": self.ref.qualified, "status": self.ref.status, "changed": self.changed}


class SummaryReportJson(TypedDict):
    results: list[SummarizedJson | NotSummarizedJson]


class SummaryReport(NamedTuple):
    """`kb summarize`: what became of each document's summary."""

    results: list[SummaryOutcome]

    def to_json(self) -> SummaryReportJson:
        return {"results": [r.to_json() for r in self.results]}
