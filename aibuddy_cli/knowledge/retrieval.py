"""Finding and reading documents: the lists, one document, a task's document map, section-level
search and bounded section pages. What may be used is `Access.usable`'s to say."""

from __future__ import annotations

import unicodedata
from typing import NamedTuple, Protocol, TypedDict

from ..errors import Conflict, InvalidInput, NotAllowed, NotFound, Option
from ..store.cache_db import rebuild_if_corrupt
from .access import Access
from .documents import DocRef, Meta, sha256
from .index import Hit, IndexedDoc, KnowledgeIndex
from .outline import Section, children, heading_path, split_lines
from .reader import cursor_for, offset_from, page
from .search import best_line, contains_phrases, parse_query
from .state import KnowledgeState
from .sync import Sync
from .usable import Usable

MAX_HITS = 1000


class AttachedDocuments(Protocol):
    """A task as retrieval sees it: the documents attached to it."""

    @property
    def attached(self) -> list[str]: ...


class TaskDocuments(Protocol):
    """What retrieval needs of the tasks: a task's attached documents, and those it works with now
    (and the message that fixed them); NotFound for no such task. `TaskService` is one, passed
    in by the session: the knowledge package does not import the tasks package."""

    def get(self, task_id: str) -> AttachedDocuments: ...

    def attached_in_use(self, task_id: str) -> tuple[list[str], int | None]: ...


class SearchHitJson(TypedDict):
    doc: str
    title: str
    anchor: str
    section: str
    path: list[str]
    lines: list[int]  # [first, last]
    snippet_line: int
    snippet: str
    score: float


class SearchHit(NamedTuple):
    hit: Hit
    snippet_line: int
    snippet: str

    def to_json(self) -> SearchHitJson:
        hit = self.hit
        return {
            "doc": hit.ref.qualified,
            "title": hit.title,
            "anchor": hit.anchor,
            "section": hit.section_title,
            "path": hit.path,
            "lines": [hit.start, hit.end],
            "snippet_line": self.snippet_line,
            "snippet": self.snippet,
            "score": round(hit.score, 4),
        }


class ChildJson(TypedDict):
    anchor: str
    title: str
    size: int


class SectionPageJson(TypedDict):
    doc: str
    title: str
    anchor: str
    section: str
    path: list[str]
    lines: list[int]  # [first, last] of the section
    offset: int
    text: str
    next_cursor: str | None
    children: list[ChildJson]


class SectionPage(NamedTuple):
    ref: DocRef
    title: str
    section: Section
    path: list[str]
    text: str
    offset: int
    next_cursor: str | None
    children: list[Section]

    def to_json(self) -> SectionPageJson:
        return {
            "doc": self.ref.qualified,
            "title": self.title,
            "anchor": self.section.anchor,
            "section": self.section.title,
            "path": self.path,
            "lines": [self.section.start, self.section.end],
            "offset": self.offset,
            "text": self.text,
            "next_cursor": self.next_cursor,
            "children": [{"anchor": c.anchor, "title": c.title, "size": c.size} for c in self.children],
        }


class MapEntryJson(TypedDict):
    doc: str
    title: str
    scope: str
    summary: str | None
    sections: int


class UnavailableJson(TypedDict):
    """An attached document a task cannot use, and why."""

    doc: str
    reason: str


class MapEntry(NamedTuple):
    ref: DocRef
    title: str
    summary: str | None
    section_count: int

    def to_json(self) -> MapEntryJson:
        return {
            "doc": self.ref.qualified,
            "title": self.title,
            "scope": self.ref.scope,
            "summary": self.summary,
            "sections": self.section_count,
        }


class Retrieval:
    def __init__(self, state: KnowledgeState, access: Access, sync: Sync, tasks: TaskDocuments) -> None:
        self.state = state
        self.access = access
        self.sync = sync
        self.tasks = tasks

    @property
    def cache(self) -> KnowledgeIndex | None:
        """The index handle, for `rebuild_if_corrupt`."""
        return self.state.index

    def _usable(self, task: str | None, status: str) -> Usable:
        """What a retrieval with this task (or the management view in status) may use."""
        attached = self.tasks.attached_in_use(task)[0] if task is not None else []
        return self.access.usable(status, task, attached)

    # --- outside a task: the user's documents ---------------------------------------------

    @rebuild_if_corrupt("cache")
    def documents(self, status: str = "all") -> list[IndexedDoc]:
        """Documents the user may know of, by status (pending, ready or all)."""
        if status not in ("pending", "ready", "all"):
            raise InvalidInput(f"invalid status {status!r}: use pending, ready or all")
        return self.access.known(doc for doc in self.sync.index().docs() if status in ("all", doc.ref.status))

    def _readable(self, spec: str) -> tuple[DocRef, Meta]:
        """A document and its sidecar, if the user may look at it outside a task: published
        documents they may see; pending ones only if they review them or proposed them. `resolve`
        finds no other: to this user they are missing."""
        ref = self.access.resolve(spec, prefer="pending")
        return ref, self.state.meta(ref)

    def show(self, spec: str) -> tuple[DocRef, Meta]:
        self.sync.refresh()
        return self._readable(spec)

    def body(self, spec: str) -> tuple[DocRef, bytes]:
        ref, _ = self._readable(spec)
        return ref, self.state.store.read(ref.body_key)[0]

    # --- what a retrieval may use -----------------------------------------------------------

    def allowed(self, task: str | None = None, status: str = "ready") -> list[IndexedDoc]:
        """The documents a retrieval may use.

        With a task: ready, visible to the user and attached to the task; nothing else. Without
        one, the user's management view: ready documents they may see, or with status "pending"
        the pending documents they may review.
        """
        if task is None and status not in ("ready", "pending"):
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        usable = self._usable(task, status)
        return [doc for doc in self.sync.index().docs() if usable.admits(doc.ref)]

    def _usable_doc(self, spec: str, task: str | None, status: str) -> DocRef:
        """The document, if a retrieval with this task (or management view) may use it."""
        if status not in ("ready", "pending"):
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        index = self.sync.index()  # (refreshed)
        ref = self.access.resolve(spec, prefer=status)  # (both may exist: a published one's new version)
        self.access.check(ref, self._usable(task, status))
        if not index.holds(ref.body_key):  # the refresh left it out (see its warning)
            raise NotAllowed(
                f"{ref.qualified} changed since its review while a pending version exists: not served "
                "until one of them is published"
            )
        return ref

    def outline(self, spec: str, task: str | None = None, status: str = "ready") -> tuple[DocRef, Meta]:
        """read_doc: the document's outline, if the document is usable here."""
        ref = self._usable_doc(spec, task, status)
        return ref, self.state.meta(ref)

    def map(self, task: str) -> tuple[list[MapEntry], list[UnavailableJson]]:
        """The document map of a task, and the attached documents that cannot be used, and why."""
        attached, since = self.tasks.attached_in_use(task)
        usable = self.access.usable("ready", task, attached)
        by_ref = {doc.ref.qualified: doc for doc in self.sync.index().docs() if usable.admits(doc.ref)}
        entries: list[MapEntry] = []
        unavailable: list[UnavailableJson] = [
            {"doc": ref, "reason": f"attached after message {since}; used from the next message on"}
            for ref in self.tasks.get(task).attached
            if ref not in attached
        ]
        for qualified in attached:
            doc = by_ref.get(qualified)
            if doc is not None:
                entries.append(MapEntry(doc.ref, doc.title, doc.summary, doc.section_count))
                continue
            try:
                self.access.check(self.access.resolve(qualified), usable)
                reason = "not available"
            except (NotFound, NotAllowed, InvalidInput, Conflict) as exc:
                reason = exc.message
            unavailable.append({"doc": qualified, "reason": reason})
        return entries, unavailable

    # --- search and read ----------------------------------------------------------------

    @rebuild_if_corrupt("cache")
    def search(
        self, query: str, *, task: str | None = None, limit: int = 10, status: str = "ready"
    ) -> list[SearchHit]:
        """search_docs: at most one hit per section, ranked; quoted phrases must occur as written."""
        if not 1 <= limit <= MAX_HITS:
            raise InvalidInput(Option("limit"), f" must be from 1 to {MAX_HITS}")
        parsed = parse_query(query)
        if parsed.expression is None:
            raise InvalidInput("the query has no searchable words")
        if status not in ("ready", "pending"):
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        index = self.sync.index()
        usable = self._usable(task, status)
        if not parsed.phrases:
            hits = index.search(parsed, usable, limit)
        else:
            # FTS5 matches a phrase's words in order; whether it occurs as written is checked
            # here, widening the window until enough hits pass or the matches run out.
            window = max(limit * 20, 200)
            while True:
                found = index.search(parsed, usable, window)
                hits = [hit for hit in found if contains_phrases(hit.text, parsed.phrases)][:limit]
                if len(hits) == limit or len(found) < window:
                    break
                window *= 4
        return [SearchHit(hit, *best_line(hit.text, hit.start, parsed)) for hit in hits]

    def read(
        self,
        spec: str,
        anchor: str,
        *,
        cursor: str | None = None,
        max_chars: int | None = None,
        task: str | None = None,
        status: str = "ready",
    ) -> SectionPage:
        """read_section: one bounded page of a section's own text, its children, the next cursor."""
        ref = self._usable_doc(spec, task, status)
        meta = self.state.meta(ref)
        position = find_section(ref, meta, anchor)
        section = meta.outline[position]
        anchor = section.anchor  # as the document spells it: cursors name it so
        data, _ = self.state.store.read(ref.body_key)
        if sha256(data) != meta.sha256:
            raise Conflict(f"{ref.qualified} changed while being read; try again")
        lines = split_lines(data.decode("utf-8"))
        text = "".join(lines[section.start - 1 : section.end])
        offset = 0 if cursor is None else offset_from(cursor, meta.sha256, anchor, len(text))
        chunk = page(text, offset, max_chars or self.state.vault.config.knowledge.page_chars)
        next_cursor = (
            None if chunk.next_offset is None else cursor_for(meta.sha256, anchor, chunk.next_offset)
        )
        return SectionPage(
            ref,
            meta.title,
            section,
            heading_path(meta.outline, position),
            chunk.text,
            offset,
            next_cursor,
            children(meta.outline, position),
        )


def find_section(ref: DocRef, meta: Meta, anchor: str) -> int:
    """The position of the section an anchor names: exact match first, then after Unicode
    normalisation (NFC, case-folded), so `CAFÉ`, a decomposed `café` and `Install` find `café`
    and `install`. Two anchors equal once normalised are a conflict to choose from."""
    anchors = [section.anchor for section in meta.outline]
    if anchor in anchors:
        return anchors.index(anchor)
    key = _folded(anchor)
    matches = [position for position, known in enumerate(anchors) if _folded(known) == key]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(anchors[position] for position in matches)
        raise Conflict(f"{anchor!r} matches several sections of {ref.qualified}: use one of {names}")
    import difflib

    folded = {_folded(known): known for known in reversed(anchors)}
    close = [folded[f] for f in difflib.get_close_matches(key, list(folded), n=3, cutoff=0.4)]
    hint = f"; closest: {', '.join(close)}" if close else ""
    raise NotFound(f"no section {anchor!r} in {ref.qualified}{hint}")


def _folded(text: str) -> str:
    """text for caseless matching: NFC, case-folded."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
