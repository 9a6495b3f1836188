"""Keeping sidecars and the search index in line with the knowledge folders.

What every read does first, what `kb watch` runs on each change and what background work calls:
a body edited, added or removed behind the tool's back is noticed by content hash, gets a fresh
sidecar, and if it was published goes back to pending, so it is never served as reviewed.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..build_progress import steps
from ..clock import utc_now
from ..errors import InvalidInput, NotFound
from ..store.cache_db import files_digest, rebuild_if_corrupt
from ..store.files import Entry
from ..vault import validate_user_name
from .access import Access
from .documents import (
    BODY_SUFFIX,
    SIDECAR_SUFFIX,
    DocRef,
    Meta,
    doc_folders,
    refusal,
    sha256,
    validate_doc_id,
)
from .index import KnowledgeIndex
from .outline import document_title, parse_outline
from .state import KnowledgeState

Indexable = tuple[DocRef, Meta, str, int]  # document, sidecar, body text, signature of its files


def derive_meta(
    ref: DocRef, text: str, digest: str, old: Meta | None, *, importer: str, source: str | None = None
) -> Meta:
    """A sidecar for a new or changed body: fresh outline, no summary, not reviewed. `source` is
    the file it was imported from (None when found in the folder or kept from `old`)."""
    outline = parse_outline(text, ref.doc_id)
    if ref.scope == "personal":
        owner: str | None = ref.owner
    elif old is not None:
        owner = old.owner
    else:  # a new proposal is its importer's; a file dropped into the folder has no known proposer
        owner = importer if source is not None else None
    return Meta(
        title=document_title(outline, ref.doc_id),
        owner=owner,
        scope=ref.scope,
        sha256=digest,
        imported_at=utc_now(),
        source=source if source is not None else (old.source if old else None),
        outline=outline,
    )


class Sync:
    def __init__(self, state: KnowledgeState, access: Access) -> None:
        self.state = state
        self.access = access

    @property
    def cache(self) -> KnowledgeIndex | None:
        """The index handle, for `rebuild_if_corrupt`."""
        return self.state.index

    def index(self) -> KnowledgeIndex:
        """The search index, after reconciling every changed document (see `refresh`)."""
        self.refresh()
        return self.state.open_index()

    @rebuild_if_corrupt("cache")
    def refresh(self) -> None:
        """Notice documents changed behind the tool's back and bring sidecars and index in line.

        A body whose sha256 no longer matches its sidecar gets a fresh outline and no summary,
        and if it was ready it goes back to pending: it is never served as reviewed. A Markdown
        file dropped into a pending/ folder gets its sidecar.

        Where the vault's watch process (store/watch_client.py) tells what changed in every folder
        since the index last saw it, only those documents are looked at; else every folder is
        listed (a stat per file) and compared with the index by its digest.
        """
        index = self.state.open_index()
        store = self.state.store
        folders = doc_folders(self._personal_owners())
        kept = index.cursors()
        answers = [store.changes(folder, kept.get(folder, ())) for *_, folder in folders]
        pairs = list(zip(folders, answers, strict=True))
        cursors = {folder: answer.cursor for (*_, folder), answer in pairs if answer.cursor}
        # A watch answers: a folder it cannot watch because it does not exist holds nothing, unless
        # the index saw it (it kept its cursor): then it was removed, and so were its documents,
        # as with a folder no longer listed at all (a user's), which only a walk tells.
        if cursors and not set(kept) - {folder for *_, folder in folders}:
            told = [answer.names if answer.cursor else self._nothing(f, kept) for (*_, f), answer in pairs]
            if all(names is not None for names in told):
                changed_names = [names or frozenset() for names in told]
                self._refresh_changed(index, folders, changed_names, kept, cursors)
                return
        listing = [
            (scope, owner, status, store.scan(folder, (BODY_SUFFIX, SIDECAR_SUFFIX)))
            for scope, owner, status, folder in folders
        ]
        listed = {folder for *_, folder in folders}
        folder_digest = files_digest(entry for *_, entries in listing for entry in entries)
        # The cursors of folders no longer listed, or (where a watch answers) not watched now
        # (removed since), go: such a folder is walked until a watch vouches for it again.
        dropped = {folder for folder in kept if folder not in cursors if cursors or folder not in listed}
        if folder_digest == index.stored_digest():
            _keep_moved_cursors(index, kept, cursors, dropped)
            return
        bodies, sidecars = self._classify(listing)
        known = index.signatures()
        changed = [
            ref
            for key, (ref, entry) in bodies.items()
            if known.get(key) != files_digest([entry, sidecars.get(ref.sidecar_key)])
        ]
        removed = [key for key in known if key not in bodies]
        self._apply(index, changed, removed, folder_digest, cursors, dropped)

    def _refresh_changed(
        self,
        index: KnowledgeIndex,
        folders: list[tuple[str, str | None, str, str]],
        names: list[frozenset[str]],
        kept: dict[str, list[str]],
        cursors: dict[str, str],
    ) -> None:
        """refresh, told by the watch the names of the files changed in each folder since the
        index last saw it (kept: the cursors it had then): the documents of those names alone are
        compared with the index."""
        refs: dict[str, DocRef] = {}
        for (scope, owner, status, _), changed_names in zip(folders, names, strict=True):
            for name in changed_names:
                suffix = next((end for end in (BODY_SUFFIX, SIDECAR_SUFFIX) if name.endswith(end)), None)
                if suffix is None:
                    continue
                ref = DocRef(scope, owner, name[: -len(suffix)], status)
                try:
                    validate_doc_id(ref.doc_id)
                except InvalidInput:
                    if suffix == BODY_SUFFIX and self.access.allows(ref):
                        warning = f"{ref.body_key}: not a valid document id; rename the file"
                        self.state.warnings.append(warning)
                    continue
                refs[ref.body_key] = ref
        if not refs:
            _keep_moved_cursors(index, kept, cursors)
            return
        known = index.signatures(sorted(refs))
        changed: list[DocRef] = []
        removed: list[str] = []
        for key, ref in refs.items():
            body = self._stat(ref.body_key)
            if body is None:
                if key in known:
                    removed.append(key)
                continue
            if known.get(key) != files_digest([body, self._stat(ref.sidecar_key)]):
                changed.append(ref)
        self._apply(index, changed, removed, None, cursors)

    def _nothing(self, folder: str, kept: dict[str, list[str]]) -> frozenset[str] | None:
        """No changes, for a folder that does not exist and never did for the index; else None."""
        parent, _, name = folder.rpartition("/")
        return None if folder in kept or name in self.state.store.folders(parent) else frozenset()

    def _stat(self, key: str) -> Entry | None:
        try:
            return self.state.store.stat(key)
        except NotFound:
            return None

    def _apply(
        self,
        index: KnowledgeIndex,
        changed: list[DocRef],
        removed: list[str],
        folder_digest: int | None,
        cursors: dict[str, str],
        dropped: Iterable[str] = (),
    ) -> None:
        """Reconcile the changed documents and write the index: the removed ones out, the
        changed ones in, the folders' digest (None: dropped, when the folders were not listed to
        make one) and the watch's cursors."""
        indexed: list[Indexable] = []
        if changed:
            with self.state.lock():
                for ref in steps("knowledge index: reading documents", changed):
                    outcome = self._reconcile(ref)
                    if outcome is None or outcome[0] != ref:  # not indexable, or moved
                        removed.append(ref.body_key)
                    if outcome is not None:
                        indexed.append(outcome)
        with index.write():
            for key in removed:
                index.remove(key)
            for ref, meta, text, signature in steps("knowledge index: indexing", indexed):
                index.put(ref, meta, text, signature)
            # The listing this refresh started from: if a file changed since (or this refresh
            # moved one), the next refresh sees a different digest and compares again.
            if folder_digest is not None:
                index.set_digest(folder_digest)
            elif removed or indexed:
                index.forget_digest()
            index.keep_cursors(cursors, dropped)

    def _classify(
        self, listing: list[tuple[str, str | None, str, list[Entry]]]
    ) -> tuple[dict[str, tuple[DocRef, Entry]], dict[str, Entry]]:
        """Bodies (by key, with their reference) and the sidecars that belong to a body."""
        bodies: dict[str, tuple[DocRef, Entry]] = {}
        sidecars: dict[str, Entry] = {}
        for scope, owner, status, entries in listing:
            for entry in entries:
                if entry.key.endswith(SIDECAR_SUFFIX):
                    sidecars[entry.key] = entry
                    continue
                ref = DocRef(scope, owner, entry.name[: -len(BODY_SUFFIX)], status)
                try:
                    validate_doc_id(ref.doc_id)
                except InvalidInput:
                    if self.access.allows(ref):
                        self.state.warnings.append(f"{entry.key}: not a valid document id; rename the file")
                    continue
                bodies[entry.key] = (ref, entry)
        sidecars = {
            key: e for key, e in sidecars.items() if key[: -len(SIDECAR_SUFFIX)] + BODY_SUFFIX in bodies
        }
        return bodies, sidecars

    def _personal_owners(self) -> list[str]:
        owners = []
        for name in self.state.store.folders("knowledge/personal"):
            try:
                owners.append(validate_user_name(name))
            except InvalidInput:
                self.state.warnings.append(f"knowledge/personal/{name}: not a valid user name; ignored")
        return owners

    def _warn(self, ref: DocRef, message: str) -> None:
        """Report what refreshing found, to those who may know the document exists only."""
        if self.access.may_know(ref):
            self.state.warnings.append(message)

    def _reconcile(self, ref: DocRef) -> Indexable | None:
        """Check one changed document against its sidecar; rebuild what is stale.

        None means "do not index it": a body that cannot be read as text is reported, and if it
        was published it goes back to pending all the same, so it is never served as reviewed.
        """
        store = self.state.store
        try:
            data, body_entry = store.read(ref.body_key)
        except NotFound:
            return None
        except (InvalidInput, OSError) as exc:
            self._warn(ref, f"{ref.qualified}: {getattr(exc, 'message', None) or exc}; not indexed")
            return None
        old: Meta | None = None
        try:
            old = self.state.meta(ref)
        except NotFound:
            pass
        except InvalidInput as exc:
            self._warn(ref, f"{exc.message}; rebuilt")
        content_sha = sha256(data)
        problem = refusal(data)
        if problem is not None:
            self._warn(ref, f"{ref.qualified}: {problem}; not indexed")
            if ref.status == "ready":
                self._unpublish(ref, old)
            return None
        text = data.decode("utf-8")
        if old is not None and old.sha256 == content_sha:
            sidecar_entry = store.stat(ref.sidecar_key)
            return ref, old, text, files_digest([body_entry, sidecar_entry])
        meta = derive_meta(ref, text, content_sha, old, importer=self.state.user)
        if ref.status == "ready":
            pending = self._unpublish(ref, old, meta)
            if pending is None:
                return None
            ref = pending
        else:
            store.write(ref.sidecar_key, meta.encode())
            what = "edited: outline rebuilt, summary cleared" if old else "found without a sidecar: added"
            self._warn(ref, f"{ref.qualified} {what}")
        signature = files_digest([store.stat(ref.body_key), store.stat(ref.sidecar_key)])
        return ref, meta, text, signature

    def _unpublish(self, ref: DocRef, old: Meta | None, meta: Meta | None = None) -> DocRef | None:
        """Move a published document whose body changed behind the tool's back to pending."""
        store = self.state.store
        pending = ref.moved("pending")
        if store.exists(pending.body_key):
            if self.access.may_know(pending):
                self._warn(
                    ref,
                    f"{ref.qualified} changed since review and a pending version exists: not served "
                    "until one of them is published",
                )
            else:  # a proposal this user may not know of
                self._warn(ref, f"{ref.qualified} changed since review: not served until published again")
            return None
        if meta is not None:
            store.write(pending.sidecar_key, meta.encode())
        store.move(ref.body_key, pending.body_key)
        if old is not None:
            if meta is None:
                store.move(ref.sidecar_key, pending.sidecar_key)
            else:
                store.delete(ref.sidecar_key)
        self._warn(ref, f"{ref.qualified} changed since it was reviewed: returned to pending")
        return pending


def _keep_moved_cursors(
    index: KnowledgeIndex, kept: dict[str, list[str]], cursors: dict[str, str], dropped: Iterable[str] = ()
) -> None:
    """A refresh that found nothing to change: the watch's cursors kept (and the dropped folders'
    forgotten) when they differ from what the index had (kept), else nothing written."""
    dropped = list(dropped)
    if dropped or any(cursor not in kept.get(folder, ()) for folder, cursor in cursors.items()):
        with index.write():
            index.keep_cursors(cursors, dropped)
