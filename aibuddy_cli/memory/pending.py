"""Changes that wait for a person: with `[extraction] review = true`, what automatic extraction
and consolidation would write to memory (a new record, an update of one automatic memory wrote)
is kept as a proposal instead, until a person accepts it (as it is, or edited), or rejects it:
`aibuddy memory pending / accept / reject`, and the page of `aibuddy ui`.

A proposal is a file, `memory/<user>/.pending/<id>.json` (hidden: no scan of records lists it),
in the user's own memory folder, so it goes where their memory goes (a team vault's personal
vault) and no one else sees it. What it holds is redacted as an automatic write is: a credential
never enters the vault by this path either. One proposal waits per record: a newer one for the
same record replaces it.

Accepting applies it through the same writes automatic memory makes (`create_auto`,
`update_auto`), so the same rules hold: a record a person wrote is never changed. An update is
refused when the record changed since it was proposed (the person reviews it again), and a
proposal a person edited before accepting is theirs: the record becomes `manual`.
"""

from __future__ import annotations

import json
import secrets
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..clock import utc_now
from ..errors import Conflict, InvalidInput, NotFound
from ..names import validate_record_name

if TYPE_CHECKING:
    from .records import MemoryRecord
    from .service import MemoryService

PENDING_FOLDER = ".pending"
Action = Literal["create", "update", "contact"]


class Proposal(NamedTuple):
    """A change automatic memory proposes: `id`, what it does to which record, and (an update)
    the record it was proposed over: its `updated`, description and body (the diff's left side)."""

    id: str
    action: Action
    name: str
    type: str
    description: str
    body: str
    proposed: str  # when (UTC)
    reason: str = ""  # what automatic memory said of it ("similar to tea (0.82)")
    base: str | None = None  # the record's `updated` when proposed (an update; None: a new record)
    base_description: str | None = None
    base_body: str | None = None
    # A contact (consolidation's, for the personal `contacts` table): the columns it sets, and
    # what they held when proposed (None: a new contact). `name` is then the contact's name.
    values: dict[str, str] | None = None
    base_values: dict[str, Any] | None = None


class PendingList(NamedTuple):
    """`memory pending`: the changes waiting for the user, oldest first."""

    user: str
    proposals: list[Proposal]


class Accepted(NamedTuple):
    """`memory accept`: the proposal applied, and the record (or the contact's row) as it is now."""

    id: str
    action: Action
    edited: bool  # the person changed it before accepting: the record is theirs (manual)
    record: MemoryRecord | None
    contact: dict[str, Any] | None = None


class Rejected(NamedTuple):
    """`memory reject`: the proposal dropped; nothing else changed."""

    id: str
    name: str


class Pending:
    """The proposals of one user's memory (see the module's docstring)."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory
        self.folder = f"{memory.prefix}/{PENDING_FOLDER}"

    def _key(self, proposal_id: str) -> str:
        if not (proposal_id.isascii() and proposal_id.replace("-", "").isalnum() and len(proposal_id) <= 40):
            raise InvalidInput(f"no such proposal id: {proposal_id!r}")
        return f"{self.folder}/{proposal_id}.json"

    def propose(
        self, action: Action, name: str, *, type: str, description: str, body: str, reason: str = ""
    ) -> Proposal:
        """Keep a proposal (redacted) instead of writing it; one waits per record."""
        from ..redaction.detect import redact

        validate_record_name(name)
        current = self.memory.show(name) if action == "update" else None
        proposal = Proposal(
            id=secrets.token_hex(6),
            action=action,
            name=name,
            type=type,
            description=redact(description)[0],
            body=redact(body)[0],
            proposed=utc_now(),
            reason=reason,
            base=current.updated if current else None,
            # (redacted too: a record from before redaction existed may hold a credential)
            base_description=redact(current.description)[0] if current else None,
            base_body=redact(current.body)[0] if current else None,
        )
        self._keep(proposal)
        return proposal

    def propose_contact(
        self, name: str, values: dict[str, str], base: dict[str, Any] | None, *, reason: str = ""
    ) -> Proposal:
        """Keep a contact's new or changed columns (redacted) instead of writing them; one waits
        per contact."""
        from ..redaction.detect import redacted

        proposal = Proposal(
            id=secrets.token_hex(6),
            action="contact",
            name=name,
            type="contact",
            description=name,
            body="",
            proposed=utc_now(),
            reason=reason,
            values=redacted(values),
            base_values=None if base is None else redacted(base),
        )
        self._keep(proposal)
        return proposal

    def _keep(self, proposal: Proposal) -> None:
        with self.memory._lock():
            contact = proposal.action == "contact"
            for older in self.proposals():
                if (older.action == "contact") == contact and older.name == proposal.name:
                    self.memory.store.delete(self._key(older.id))
            text = json.dumps(proposal._asdict(), ensure_ascii=False, indent=2) + "\n"
            self.memory.store.write(self._key(proposal.id), text.encode("utf-8"), create=True)

    def drop(self, proposal_id: str) -> None:
        """The proposal removed (applied elsewhere: a contact, by the operation that holds the tables)."""
        self.memory.store.delete(self._key(self.get(proposal_id).id))

    def proposals(self) -> list[Proposal]:
        """The proposals waiting, oldest first (a file that is not one is left out)."""
        from .. import jsonvalues

        found: list[tuple[str, int, Proposal]] = []
        for entry in self.memory.store.scan(self.folder, ".json"):
            try:
                data, _ = self.memory.store.read(entry.key)
                fields = jsonvalues.loads(data)
                proposal = Proposal(**{name: fields[name] for name in Proposal._fields if name in fields})
            except (OSError, ValueError, TypeError, KeyError, InvalidInput, NotFound):
                continue
            found.append((proposal.proposed, entry.mtime_ns, proposal))  # (two in one second: by file)
        return [proposal for _, _, proposal in sorted(found, key=lambda item: item[:2])]

    def get(self, proposal_id: str) -> Proposal:
        for proposal in self.proposals():
            if proposal.id == proposal_id:
                return proposal
        self._key(proposal_id)  # a malformed id says so
        raise NotFound(f"no proposal {proposal_id!r} waits (accepted, rejected, or replaced by a newer one)")

    def accept(
        self,
        proposal_id: str,
        *,
        type: str | None = None,
        description: str | None = None,
        body: str | None = None,
    ) -> Accepted:
        """Apply the proposal, as it is or with the person's changes (then the record is theirs)."""
        proposal = self.get(proposal_id)
        if proposal.action == "contact":
            raise InvalidInput("a contact's proposal is accepted with its table (`aibuddy memory accept`)")
        chosen = proposal._replace(
            type=proposal.type if type is None else type,
            description=proposal.description if description is None else description,
            body=proposal.body if body is None else body,
        )
        from ..redaction.detect import redact

        edited = chosen[3:6] != proposal[3:6]
        memory = self.memory
        if proposal.action == "update":
            current = memory.show(proposal.name)
            now = current.updated, redact(current.description)[0], redact(current.body)[0], current.provenance
            if now != (proposal.base, proposal.base_description, proposal.base_body, "auto"):
                raise Conflict(
                    f"memory record {proposal.name!r} changed since this update was proposed: reject it, "
                    "or edit the record yourself"
                )
            if edited:
                record = memory.take_over(proposal.name, type=chosen.type, description=chosen.description,
                                          body=chosen.body)  # fmt: skip
            else:
                record = memory.update_auto(proposal.name, description=chosen.description, body=chosen.body)
        elif edited:  # a person's words: a record of theirs (manual), as `memory save` writes it
            record = memory.save(
                proposal.name, type=chosen.type, description=chosen.description, body=chosen.body
            )
        else:
            record = memory.create_auto(
                proposal.name, type=chosen.type, description=chosen.description, body=chosen.body
            )
        memory.store.delete(self._key(proposal.id))
        return Accepted(proposal.id, proposal.action, edited, record)

    def reject(self, proposal_id: str) -> Rejected:
        proposal = self.get(proposal_id)
        self.memory.store.delete(self._key(proposal.id))
        return Rejected(proposal.id, proposal.name)
