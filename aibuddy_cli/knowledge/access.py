"""Who may know of, use and review which knowledge documents: decided here and nowhere else.

The rule: a personal document is its owner's alone; a system document is everyone's once
published and its reviewers' (the admins) while pending. A retrieval with a task uses only
published documents the rule allows that are attached to the task. A document the rule does
not allow is missing to the user (the same error, the same message as one that does not exist),
except a pending system document to the user who proposed it.

`Access.usable` turns the rule into a `Usable` (usable.py), the one description of what a retrieval may use:
`Usable.admits` applies it to one document in Python (`Usable.refusal` says why not),
`KnowledgeIndex.search` applies the same fields in SQL while ranking.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import Conflict, InvalidInput, NotAllowed, NotFound
from .documents import DocRef
from .usable import Usable

if TYPE_CHECKING:
    from .index import IndexedDoc
    from .state import KnowledgeState


def missing(spec: str) -> NotFound:
    """The one error for a document that does not exist and for one this user may not know of."""
    return NotFound(f"no document {spec!r}")


class Access:
    def __init__(self, state: KnowledgeState) -> None:
        self.state = state
        self._by_status: dict[str, Usable] = {}  # `usable(status)` without a task, made once

    @property
    def is_admin(self) -> bool:
        return self.state.user in self.state.vault.config.admins

    def usable(self, status: str, task: str | None = None, attached: Iterable[str] = ()) -> Usable:
        """What a retrieval may use. With a task: published documents attached to it (`attached`,
        qualified references; `status` does not apply). Without: the management view, published
        documents the user may see, or with status "pending" the pending ones they may review."""
        if task is not None:
            status = "ready"
        # The rule for system documents; personal ones are their owner's (Usable.admits, the SQL).
        system = status == "ready" or self.is_admin
        keys = None if task is None else frozenset(self._body_keys(attached, status))
        return Usable(status, self.state.user, system, task, keys)

    def _body_keys(self, attached: Iterable[str], status: str) -> list[str]:
        """The body keys of qualified references as a task records them; anything else (a hand
        edit) names no document."""
        keys = []
        for qualified in attached:
            try:
                refs = DocRef.parse(qualified, self.state.user, status)
            except InvalidInput:
                continue
            keys += [ref.body_key for ref in refs if ref.qualified == qualified]
        return keys

    def allows(self, ref: DocRef) -> bool:
        """Whether the user may use ref where it is, tasks aside."""
        usable = self._by_status.get(ref.status)
        if usable is None:
            usable = self._by_status[ref.status] = self.usable(ref.status)
        return usable.admits(ref)

    def may_see(self, ref: DocRef) -> bool:
        """Whether the user may use ref once published: system documents and their own."""
        return self.allows(ref.moved("ready"))

    def may_review(self, ref: DocRef) -> bool:
        """Whether the user may publish, reject or change ref: admins for system documents, the
        owner for personal ones."""
        return self.allows(ref.moved("pending"))

    def may_know(self, ref: DocRef) -> bool:
        """Whether the user may learn that ref exists: what the rule allows, and a pending system
        document they proposed. To anyone else it is missing (exit 3, `missing`), never "not
        allowed"."""
        return self.allows(ref) or (ref.scope == "system" and self._proposer(ref) == self.state.user)

    def _proposer(self, ref: DocRef) -> str | None:
        """Who proposed a document, from its sidecar (None when it has none or it is unreadable)."""
        try:
            return self.state.meta(ref).owner
        except (NotFound, InvalidInput):
            return None

    def known(self, docs: Iterable[IndexedDoc]) -> list[IndexedDoc]:
        """The documents the user may know of."""
        return [doc for doc in docs if self.may_know(doc.ref)]

    def check(self, ref: DocRef, usable: Usable) -> None:
        """NotAllowed saying why ref may not be used here; ref comes from `resolve`, so the user
        may know it exists."""
        reason = usable.refusal(ref)
        if reason is not None:
            raise NotAllowed(reason)

    def require_reviewer(self, ref: DocRef, action: str) -> None:
        if not self.may_know(ref):
            raise missing(ref.qualified)
        if not self.may_review(ref):
            who = "an admin (admins in aibuddy.toml)" if ref.scope == "system" else f"its owner {ref.owner}"
            raise NotAllowed(f"only {who} may {action} {ref.qualified}")

    def resolve(self, spec: str, prefer: str = "ready") -> DocRef:
        """The document a reference names (see `DocRef.parse`): a bare ID must be unique among the
        system documents and the user's own. When a document has both a published and a pending
        version, `prefer` says which one is meant. Only documents the user may know of are found."""
        found = []
        order = ("ready", "pending") if prefer == "ready" else ("pending", "ready")
        for candidate in DocRef.parse(spec, self.state.user):
            if not self.may_see(candidate):
                continue  # another user's folder is never looked at: missing, whatever it holds
            for status in order:
                ref = candidate.moved(status)
                if self.state.store.exists(ref.body_key) and self.may_know(ref):
                    found.append(ref)
                    break
        if not found:
            raise missing(spec)
        if len(found) > 1:
            raise Conflict(f"{spec!r} is ambiguous: use one of {', '.join(r.qualified for r in found)}")
        return found[0]
