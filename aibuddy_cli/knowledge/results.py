"""The answers of the knowledge operations, each with the one JSON shape every front end gives.

The service returns plain values (hits, outcomes, references) that its parts and the knowledge
tools compose; a front end wraps them in one of these types and prints `to_json()` (`--json`),
so the CLI and any other front end give the same document by construction.
`tests/operations/test_json_contract.py` pins the keys.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, TypedDict

from ..jsonvalues import to_json
from .documents import DocRef, Meta, MetaJson
from .imports import ImportOutcome
from .index import IndexedDoc
from .outline import Section
from .retrieval import MapEntry, SearchHit, UnavailableJson
from .summaries import SummaryOutcome

IMPORT_STATUSES = ("imported", "duplicate", "skipped", "failed")


class DocumentList(NamedTuple):
    """`kb list`: the documents the user may see."""

    user: str
    documents: list[IndexedDoc]


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
    outline: list[Section]


class DocumentOutline(NamedTuple):
    """`kb outline` and the read_doc tool: a usable document's sections."""

    ref: DocRef
    meta: Meta

    def to_json(self) -> DocumentOutlineJson:
        return {
            "doc": self.ref.qualified,
            "title": self.meta.title,
            "outline": [to_json(s) for s in self.meta.outline],
        }


class TaskMap(NamedTuple):
    """`kb map`: the task's usable documents, and the attached ones it cannot use (and why)."""

    task: str
    documents: list[MapEntry]
    unavailable: list[UnavailableJson]


class SearchResults(NamedTuple):
    """`kb search`: ranked section hits."""

    query: str
    task: str | None
    hits: list[SearchHit]


class ImportReportJson(TypedDict):
    files: list[ImportOutcome]
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
            "files": [to_json(outcome) for outcome in self.outcomes],
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


class SummaryReport(NamedTuple):
    """`kb summarize`: what became of each document's summary."""

    results: list[SummaryOutcome]
