"""The review of pending documents: publication (pending → ready) and rejection. Who may review
what is `Access.require_reviewer`'s to say."""

from __future__ import annotations

from ..clock import utc_now
from ..errors import Conflict, NotFound
from .access import Access
from .documents import DocRef
from .state import KnowledgeState
from .sync import Sync


class Review:
    def __init__(self, state: KnowledgeState, access: Access, sync: Sync) -> None:
        self.state = state
        self.access = access
        self.sync = sync

    def publish(self, *specs: str) -> list[DocRef]:
        """pending → ready, by an admin (system) or the owner (personal).

        Every document is checked before any moves, so a refusal publishes nothing. A pending
        version of a published document replaces it.
        """
        self.sync.refresh()
        refs = list(dict.fromkeys(self.access.resolve(spec, prefer="pending") for spec in specs))
        for ref in refs:
            self.access.require_reviewer(ref, "publish")
            if ref.status == "ready":
                raise Conflict(f"{ref.qualified} is already published")
        store = self.state.store
        published = []
        with self.state.lock():
            for ref in refs:
                meta = self.state.meta(ref)._replace(reviewed_by=self.state.user, reviewed_at=utc_now())
                ready = ref.moved("ready")
                store.write(ready.sidecar_key, meta.encode())
                store.replace(ref.body_key, ready.body_key)
                store.delete(ref.sidecar_key)
                published.append(ready)
        self.sync.refresh()
        return published

    def reject(self, *specs: str) -> list[DocRef]:
        """Remove pending documents (their source files are untouched)."""
        self.sync.refresh()
        refs = list(dict.fromkeys(self.access.resolve(spec, prefer="pending") for spec in specs))
        for ref in refs:
            self.access.require_reviewer(ref, "reject")
            if ref.status != "pending":
                raise Conflict(f"{ref.qualified} is published; only pending documents can be rejected")
        with self.state.lock():
            for ref in refs:
                self.state.store.delete(ref.body_key)
                try:
                    self.state.store.delete(ref.sidecar_key)
                except NotFound:
                    pass
        self.sync.refresh()
        return refs
