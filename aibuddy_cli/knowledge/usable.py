"""`Usable`: what one retrieval may use, the rule of access.py in a form the search index applies
in SQL and `Access` in Python. Below both, so neither imports the other for it."""

from __future__ import annotations

from typing import NamedTuple

from .documents import DocRef


class Usable(NamedTuple):
    """What one retrieval may use, as `Access.usable` builds it: documents in `status`; of those,
    system documents when `system` says so and personal ones of `user`; with a task, only the
    documents whose body keys are in `body_keys` (the task's attachments)."""

    status: str
    user: str
    system: bool
    task: str | None = None
    body_keys: frozenset[str] | None = None

    def admits(self, ref: DocRef) -> bool:
        """Whether ref may be used here. Its SQL form is the WHERE clause of KnowledgeIndex.search."""
        return (
            ref.status == self.status
            and (self.system if ref.scope == "system" else ref.owner == self.user)
            and (self.body_keys is None or ref.body_key in self.body_keys)
        )

    def refusal(self, ref: DocRef) -> str | None:
        """Why `admits` says no, as the user is told; None when it says yes."""
        if self.admits(ref):
            return None
        if ref.status != self.status:
            if ref.status == "pending":
                return f"{ref.qualified} is pending review; it is not served until published"
            return f"{ref.qualified} is published; drop --status pending"
        if self.body_keys is not None and ref.body_key not in self.body_keys:
            return f"{ref.qualified} is not attached to task {self.task}"
        # Only pending documents get here: a published one `resolve` finds is one the user may use.
        return f"you may not review {ref.qualified}"
