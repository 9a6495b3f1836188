"""Knowledge documents of a vault as one user sees them: import, review, search, read.

`KnowledgeService` is the one entry point (the CLI, the fast path, tasks and the knowledge
subagent use it); it composes parts that each own one family of operations and share one
`KnowledgeState` (vault, user, store, settings, warnings, index handle):

- access.py     who may know of, use and review which documents (the visibility rule) and `resolve`
- sync.py       refresh: sidecars and the search index brought in line with the folders
- imports.py    import_paths, reingest, replace_body
- review.py     publish, reject
- retrieval.py  documents, show, body, allowed, outline, map, search, read
- summaries.py  summarize, now or in the background
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..settings import Settings
from ..store.files import Store
from ..vault import Vault, validate_user_name
from .access import Access
from .documents import DocRef, Meta
from .imports import ImportOutcome, Imports
from .index import IndexedDoc, KnowledgeIndex
from .retrieval import MapEntry, Retrieval, SearchHit, SectionPage, TaskDocuments, UnavailableJson
from .review import Review
from .state import KnowledgeState
from .summaries import Summaries, SummaryOutcome
from .sync import Sync

__all__ = ["ImportOutcome", "KnowledgeService", "MapEntry", "SearchHit", "SectionPage"]


class KnowledgeService:
    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        store: Store,
        settings: Settings,
        tasks: TaskDocuments,
        warnings: list[str],
        start_summaries: Callable[[list[str]], None] | None = None,
    ) -> None:
        """tasks: where the tasks' attached documents come from (the session's TaskService).
        warnings: the sink (a session's) for what the operations find on the way.
        start_summaries: how summaries of new bodies start without the import waiting for the
        model (default: a background `aibuddy kb summarize`)."""
        self.state = KnowledgeState(vault, validate_user_name(user), store, settings, warnings)
        self.access = Access(self.state)
        self.sync = Sync(self.state, self.access)
        self.retrieval = Retrieval(self.state, self.access, self.sync, tasks)
        self.summaries = Summaries(self.state, self.retrieval, start_summaries)
        self.imports = Imports(self.state, self.access, self.sync, self.summaries)
        self.review = Review(self.state, self.access, self.sync)

    # --- shared state ---------------------------------------------------------------------

    @property
    def vault(self) -> Vault:
        return self.state.vault

    @property
    def user(self) -> str:
        return self.state.user

    @property
    def store(self) -> Store:
        return self.state.store

    @property
    def settings(self) -> Settings:
        return self.state.settings

    @property
    def warnings(self) -> list[str]:
        """What the operations found on the way (edited documents, new files, …), to report."""
        return self.state.warnings

    def close(self) -> None:
        """Close the search index's SQLite handle (it opens again on next use)."""
        self.state.close()

    # --- who may do what ----------------------------------------------------------------

    def may_see(self, ref: DocRef) -> bool:
        return self.access.may_see(ref)

    def may_review(self, ref: DocRef) -> bool:
        return self.access.may_review(ref)

    def resolve(self, spec: str, prefer: str = "ready") -> DocRef:
        return self.access.resolve(spec, prefer)

    # --- keeping sidecars and the index current ---------------------------------------

    def index(self) -> KnowledgeIndex:
        return self.sync.index()

    def refresh(self) -> None:
        self.sync.refresh()

    # --- import and review --------------------------------------------------------------

    def import_paths(
        self,
        paths: Iterable[str],
        *,
        scope: str = "personal",
        recursive: bool = False,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> list[ImportOutcome]:
        return self.imports.import_paths(paths, scope=scope, recursive=recursive, progress=progress)

    def replace_body(self, spec: str, data: bytes, *, source: str | None = None) -> tuple[DocRef, bool]:
        return self.imports.replace_body(spec, data, source=source)

    def reingest(self, spec: str, path: str | None = None) -> tuple[DocRef, bool]:
        return self.imports.reingest(spec, path)

    def publish(self, *specs: str) -> list[DocRef]:
        return self.review.publish(*specs)

    def reject(self, *specs: str) -> list[DocRef]:
        return self.review.reject(*specs)

    # --- listing, search and read -------------------------------------------------------

    def documents(self, status: str = "all") -> list[IndexedDoc]:
        return self.retrieval.documents(status)

    def show(self, spec: str) -> tuple[DocRef, Meta]:
        return self.retrieval.show(spec)

    def body(self, spec: str) -> tuple[DocRef, bytes]:
        return self.retrieval.body(spec)

    def allowed(self, task: str | None = None, status: str = "ready") -> list[IndexedDoc]:
        return self.retrieval.allowed(task, status)

    def outline(self, spec: str, task: str | None = None, status: str = "ready") -> tuple[DocRef, Meta]:
        return self.retrieval.outline(spec, task, status)

    def map(self, task: str) -> tuple[list[MapEntry], list[UnavailableJson]]:
        return self.retrieval.map(task)

    def search(
        self, query: str, *, task: str | None = None, limit: int = 10, status: str = "ready"
    ) -> list[SearchHit]:
        return self.retrieval.search(query, task=task, limit=limit, status=status)

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
        return self.retrieval.read(
            spec, anchor, cursor=cursor, max_chars=max_chars, task=task, status=status
        )

    # --- summaries ----------------------------------------------------------------------

    def summarize(self, specs: Iterable[str]) -> list[SummaryOutcome]:
        return self.summaries.summarize(specs)

    def summarize_in_background(self, specs: Iterable[str]) -> None:
        self.summaries.summarize_in_background(specs)
