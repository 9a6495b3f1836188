"""What the parts of the knowledge service share: one vault as one user sees it, one store, one
warnings list and one handle on the search index."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..settings import Settings
from ..store.files import Store
from ..vault import Vault
from .documents import DocRef, Meta
from .index import KnowledgeIndex


@dataclass(eq=False)
class KnowledgeState:
    vault: Vault
    user: str  # validated
    store: Store
    settings: Settings
    # What the operations found on the way (edited documents, new files, model failures, …), for
    # the caller to report. Appended to, never rebound by the parts: callers hold on to it.
    warnings: list[str] = field(default_factory=list)
    index: KnowledgeIndex | None = None  # opened on first use

    def open_index(self) -> KnowledgeIndex:
        """The search index handle, as it is (`Sync.index` is the one brought up to date)."""
        if self.index is None:
            self.index = KnowledgeIndex(self.vault.knowledge_index_path())
        return self.index

    def close(self) -> None:
        """Close the index's SQLite handle; the next use opens it again."""
        if self.index is not None:
            self.index.close()

    def lock(self):  # noqa: ANN201 - a context manager from the store
        """The one lock of every write to the knowledge folders."""
        return self.store.lock("knowledge")

    def meta(self, ref: DocRef) -> Meta:
        """ref's sidecar (NotFound without one, InvalidInput when it is unreadable)."""
        data, _ = self.store.read(ref.sidecar_key)
        return Meta.decode(data, ref.sidecar_key)
