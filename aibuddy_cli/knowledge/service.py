"""Knowledge documents of a vault as one user sees them: import, review, search, read.

Visibility is decided here and nowhere else: a document is used for a task only when it is
ready, the user may see it (system, or personal and owned) and it is attached to the task.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..cache_db import files_digest, rebuild_if_corrupt
from ..clock import utc_now
from ..errors import (
    Conflict,
    InvalidInput,
    ModelError,
    ModelUnavailable,
    NotAllowed,
    NotFound,
    UsageError,
)
from ..storage import Entry, FileStore, Store
from ..tasks.service import TaskService
from ..vault import Vault, validate_user_name
from .documents import (
    BODY_SUFFIX,
    MAX_DOCUMENT_BYTES,
    SCOPES,
    SIDECAR_SUFFIX,
    DocRef,
    Meta,
    check_importable,
    doc_folders,
    doc_id_from_name,
    fit_doc_id,
    normal_doc_id,
    refusal,
    sha256,
    validate_doc_id,
)
from .index import Hit, IndexedDoc, KnowledgeIndex, SearchScope
from .outline import Section, children, document_title, heading_path, parse_outline, split_lines
from .reader import cursor_for, offset_from, page
from .search import best_line, contains_phrases, parse_query

IMPORTABLE_SUFFIXES = (".md", ".markdown", ".txt")
SUMMARY_LOG = ".aibuddy/logs/summaries.jsonl"
MAX_HITS = 1000


class ImportOutcome(NamedTuple):
    source: str
    status: str  # imported | duplicate | failed | skipped
    doc: str | None = None  # qualified reference
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


class SearchHit(NamedTuple):
    hit: Hit
    snippet_line: int
    snippet: str

    def to_json(self) -> dict[str, Any]:
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


class SectionPage(NamedTuple):
    ref: DocRef
    title: str
    section: Section
    path: list[str]
    text: str
    offset: int
    next_cursor: str | None
    children: list[Section]

    def to_json(self) -> dict[str, Any]:
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


class MapEntry(NamedTuple):
    ref: DocRef
    title: str
    summary: str | None
    section_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.ref.qualified,
            "title": self.title,
            "scope": self.ref.scope,
            "summary": self.summary,
            "sections": self.section_count,
        }


class KnowledgeService:
    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        store: Store | None = None,
        environ: Mapping[str, str] | None = None,
        start_summaries: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.vault = vault
        self.user = validate_user_name(user)
        self.store: Store = store or FileStore(vault.root, vault.locks_dir())
        self.environ = os.environ if environ is None else environ
        # How summaries of new bodies start without the import waiting for the model.
        self.start_summaries = start_summaries or self._spawn_summaries
        self.warnings: list[str] = []  # what refreshing found (edited documents, new files, …)
        self._index: KnowledgeIndex | None = None

    # --- who may do what ----------------------------------------------------------------

    def may_see(self, ref: DocRef) -> bool:
        return ref.scope == "system" or ref.owner == self.user

    def may_review(self, ref: DocRef) -> bool:
        if ref.scope == "system":
            return self.user in self.vault.config.admins
        return ref.owner == self.user

    def _proposer(self, ref: DocRef) -> str | None:
        """Who proposed a document, from its sidecar (None when it has none or it is unreadable)."""
        try:
            return self._meta(ref).owner
        except (NotFound, InvalidInput):
            return None

    def _exists_for_user(self, ref: DocRef) -> bool:
        """Whether the user may learn that ref exists: a system document once published, a pending
        one only for admins and its proposer, a personal one only for its owner. To anyone else
        it is missing (exit 3, the message of a missing document), never "not allowed"."""
        if ref.scope == "personal":
            return ref.owner == self.user
        if ref.status == "ready" or self.user in self.vault.config.admins:
            return True
        return self._proposer(ref) == self.user

    def _visible_docs(self, docs: Iterable[IndexedDoc]) -> list[IndexedDoc]:
        return [doc for doc in docs if self._exists_for_user(doc.ref)]

    def _require_reviewer(self, ref: DocRef, action: str) -> None:
        if not self._exists_for_user(ref):
            raise _missing(ref.qualified)
        if not self.may_review(ref):
            who = "an admin (admins in aibuddy.toml)" if ref.scope == "system" else f"its owner {ref.owner}"
            raise NotAllowed(f"only {who} may {action} {ref.qualified}")

    def _lock(self):  # noqa: ANN202 - a context manager from the store
        return self.store.lock("knowledge")

    # --- naming documents ---------------------------------------------------------------

    def resolve(self, spec: str, prefer: str = "ready") -> DocRef:
        """system/<id>, personal/<id> (own), personal/<owner>/<id>, or a bare <id> that is unique
        among the system documents and the user's own. When a document has both a published and
        a pending version, `prefer` says which one is meant."""
        parts = spec.split("/")
        parts[-1] = normal_doc_id(parts[-1])
        if len(parts) == 1:
            candidates = [("system", None, parts[0]), ("personal", self.user, parts[0])]
        elif len(parts) == 2 and parts[0] in SCOPES:
            candidates = [(parts[0], None if parts[0] == "system" else self.user, parts[1])]
        elif len(parts) == 3 and parts[0] == "personal":
            candidates = [("personal", validate_user_name(parts[1]), parts[2])]
        else:
            raise InvalidInput(f"invalid document reference {spec!r}: use ID, system/ID or personal/ID")
        found = []
        order = ("ready", "pending") if prefer == "ready" else ("pending", "ready")
        for scope, owner, doc_id in candidates:
            validate_doc_id(doc_id)
            if scope == "personal" and owner != self.user:
                continue  # another user's folder is never looked at: missing, whatever it holds
            for status in order:
                ref = DocRef(scope, owner, doc_id, status)
                if self.store.exists(ref.body_key) and self._exists_for_user(ref):
                    found.append(ref)
                    break
        if not found:
            raise _missing(spec)
        if len(found) > 1:
            raise Conflict(f"{spec!r} is ambiguous: use one of {', '.join(r.qualified for r in found)}")
        return found[0]

    def _meta(self, ref: DocRef) -> Meta:
        data, _ = self.store.read(ref.sidecar_key)
        return Meta.decode(data, ref.sidecar_key)

    # --- keeping sidecars and the index current ---------------------------------------

    def index(self) -> KnowledgeIndex:
        """The search index, after reconciling every changed document (see `refresh`)."""
        if self._index is None:
            self._index = KnowledgeIndex(self.vault.knowledge_index_path())
        self.refresh()
        return self._index

    @rebuild_if_corrupt("_index")
    def refresh(self) -> None:
        """Notice documents changed behind the tool's back and bring sidecars and index in line.

        A body whose sha256 no longer matches its sidecar gets a fresh outline and no summary,
        and if it was ready it goes back to pending: it is never served as reviewed. A Markdown
        file dropped into a pending/ folder gets its sidecar.
        """
        if self._index is None:
            self._index = KnowledgeIndex(self.vault.knowledge_index_path())
        index = self._index
        listing = [
            (scope, owner, status, self.store.scan(folder, (BODY_SUFFIX, SIDECAR_SUFFIX)))
            for scope, owner, status, folder in doc_folders(self._personal_owners())
        ]
        folder_digest = files_digest(entry for *_, entries in listing for entry in entries)
        if folder_digest == index.stored_digest():
            return
        bodies, sidecars = self._classify(listing)
        known = index.signatures()
        changed = [
            ref
            for key, (ref, entry) in bodies.items()
            if known.get(key) != files_digest([entry, sidecars.get(ref.sidecar_key)])
        ]
        removed = [key for key in known if key not in bodies]
        indexed: list[tuple[DocRef, Meta, str, int]] = []
        if changed:
            with self._lock():
                for ref in changed:
                    outcome = self._reconcile(ref)
                    if outcome is None or outcome[0] != ref:  # not indexable, or moved
                        removed.append(ref.body_key)
                    if outcome is not None:
                        indexed.append(outcome)
        with index.write():
            for key in removed:
                index.remove(key)
            for ref, meta, text, signature in indexed:
                index.put(ref, meta, text, signature)
            # The listing this refresh started from: if a file changed since (or this refresh
            # moved one), the next refresh sees a different digest and compares again.
            index.set_digest(folder_digest)

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
                doc_id = entry.name[: -len(BODY_SUFFIX)]
                try:
                    validate_doc_id(doc_id)
                except InvalidInput:
                    admin = self.user in self.vault.config.admins
                    if (scope == "system" and (status == "ready" or admin)) or owner == self.user:
                        self.warnings.append(f"{entry.key}: not a valid document id; rename the file")
                    continue
                bodies[entry.key] = (DocRef(scope, owner, doc_id, status), entry)
        sidecars = {
            key: e for key, e in sidecars.items() if key[: -len(SIDECAR_SUFFIX)] + BODY_SUFFIX in bodies
        }
        return bodies, sidecars

    def _personal_owners(self) -> list[str]:
        owners = []
        for name in self.store.folders("knowledge/personal"):
            try:
                owners.append(validate_user_name(name))
            except InvalidInput:
                self.warnings.append(f"knowledge/personal/{name}: not a valid user name; ignored")
        return owners

    def _warn(self, ref: DocRef, message: str) -> None:
        """Report what refreshing found, to those who may know the document exists only."""
        if self._exists_for_user(ref):
            self.warnings.append(message)

    def _reconcile(self, ref: DocRef) -> tuple[DocRef, Meta, str, int] | None:
        """Check one changed document against its sidecar; rebuild what is stale.

        None means "do not index it": a body that cannot be read as text is reported, and if it
        was published it goes back to pending all the same, so it is never served as reviewed.
        """
        try:
            data, body_entry = self.store.read(ref.body_key)
        except NotFound:
            return None
        except (InvalidInput, OSError) as exc:
            self._warn(ref, f"{ref.qualified}: {getattr(exc, 'message', None) or exc}; not indexed")
            return None
        old: Meta | None = None
        try:
            old = self._meta(ref)
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
            sidecar_entry = self.store.stat(ref.sidecar_key)
            return ref, old, text, files_digest([body_entry, sidecar_entry])
        meta = self._derive(ref, text, content_sha, old)
        if ref.status == "ready":
            pending = self._unpublish(ref, old, meta)
            if pending is None:
                return None
            ref = pending
        else:
            self.store.write(ref.sidecar_key, meta.encode())
            what = "edited: outline rebuilt, summary cleared" if old else "found without a sidecar: added"
            self._warn(ref, f"{ref.qualified} {what}")
        signature = files_digest([self.store.stat(ref.body_key), self.store.stat(ref.sidecar_key)])
        return ref, meta, text, signature

    def _unpublish(self, ref: DocRef, old: Meta | None, meta: Meta | None = None) -> DocRef | None:
        """Move a published document whose body changed behind the tool's back to pending."""
        pending = ref.moved("pending")
        if self.store.exists(pending.body_key):
            if self._exists_for_user(pending):
                self._warn(
                    ref,
                    f"{ref.qualified} changed since review and a pending version exists: not served "
                    "until one of them is published",
                )
            else:  # a proposal this user may not know of
                self._warn(ref, f"{ref.qualified} changed since review: not served until published again")
            return None
        if meta is not None:
            self.store.write(pending.sidecar_key, meta.encode())
        self.store.move(ref.body_key, pending.body_key)
        if old is not None:
            if meta is None:
                self.store.move(ref.sidecar_key, pending.sidecar_key)
            else:
                self.store.delete(ref.sidecar_key)
        self._warn(ref, f"{ref.qualified} changed since it was reviewed: returned to pending")
        return pending

    def _derive(
        self, ref: DocRef, text: str, digest: str, old: Meta | None, source: str | None = None
    ) -> Meta:
        """A sidecar for a new or changed body: fresh outline, no summary, not reviewed."""
        outline = parse_outline(text, ref.doc_id)
        if ref.scope == "personal":
            owner: str | None = ref.owner
        elif old is not None:
            owner = old.owner
        else:  # a new proposal is its importer's; a file dropped into the folder has no known proposer
            owner = self.user if source is not None else None
        return Meta(
            title=document_title(outline, ref.doc_id),
            owner=owner,
            scope=ref.scope,
            sha256=digest,
            imported_at=utc_now(),
            source=source if source is not None else (old.source if old else None),
            outline=outline,
        )

    # --- import -------------------------------------------------------------------------

    def import_paths(
        self,
        paths: Iterable[str],
        *,
        scope: str = "personal",
        recursive: bool = False,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> list[ImportOutcome]:
        """Import Markdown / UTF-8 text files into pending/. One failure never stops the rest."""
        if scope not in SCOPES:
            raise InvalidInput(f"invalid scope {scope!r}: use system or personal")
        candidates, outcomes = self._collect(paths, recursive)
        index = self.index()
        known = {doc.sha256: doc.ref for doc in self._visible_docs(index.docs())}
        owner = self.user if scope == "personal" else None
        total = len(candidates)
        with self._lock():
            for number, path in enumerate(candidates, 1):
                if progress is not None:
                    progress(number, total, str(path))
                outcomes.append(self._import_one(path, scope, owner, known))
        self.refresh()
        self._summarize_later([o.doc for o in outcomes if o.status == "imported" and o.doc])
        return outcomes

    def _collect(self, paths: Iterable[str], recursive: bool) -> tuple[list[Path], list[ImportOutcome]]:
        """The files to import, and outcomes for what cannot even be tried."""
        files: list[Path] = []
        outcomes: list[ImportOutcome] = []
        for raw in paths:
            path = Path(raw)
            try:
                mode = path.stat().st_mode
            except FileNotFoundError:
                outcomes.append(ImportOutcome(raw, "failed", message="no such file"))
                continue
            except OSError as exc:
                outcomes.append(ImportOutcome(raw, "failed", message=exc.strerror or str(exc)))
                continue
            if stat.S_ISDIR(mode):
                if not recursive:
                    outcomes.append(ImportOutcome(raw, "failed", message="a folder: use --recursive"))
                    continue
                files.extend(self._walk(path, outcomes))
            elif stat.S_ISREG(mode):
                files.append(path)
            else:  # reading a FIFO would wait for a writer, a device may never end
                outcomes.append(ImportOutcome(raw, "failed", message=_not_regular(mode)))
        return files, outcomes

    def _walk(self, folder: Path, outcomes: list[ImportOutcome]) -> list[Path]:
        """Markdown and text files under folder; a symlink that leads outside it is refused."""
        root = folder.resolve()
        found: list[Path] = []
        for current, dirnames, filenames in os.walk(folder, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for link in [d for d in dirnames if (Path(current) / d).is_symlink()]:
                dirnames.remove(link)
                outcomes.append(
                    ImportOutcome(str(Path(current) / link), "skipped", message="a linked folder")
                )
            for name in sorted(filenames):
                path = Path(current) / name
                if name.startswith("."):
                    continue
                if not name.lower().endswith(IMPORTABLE_SUFFIXES):
                    outcomes.append(
                        ImportOutcome(str(path), "skipped", message="not a Markdown or text file")
                    )
                    continue
                if path.is_symlink() and not path.resolve().is_relative_to(root):
                    outcomes.append(
                        ImportOutcome(str(path), "failed", message="a symlink that leads outside the folder")
                    )
                    continue
                if not path.is_file():  # a FIFO or device would block the import
                    outcomes.append(ImportOutcome(str(path), "skipped", message="not a regular file"))
                    continue
                found.append(path)
        return found

    def _import_one(
        self, path: Path, scope: str, owner: str | None, known: dict[str, DocRef]
    ) -> ImportOutcome:
        source = str(path)
        try:
            data = read_regular_file(path)
        except InvalidInput as exc:
            return ImportOutcome(source, "failed", message=exc.message)
        except OSError as exc:
            return ImportOutcome(source, "failed", message=exc.strerror or str(exc))
        problem = refusal(data)
        if problem is not None:
            return ImportOutcome(source, "failed", message=problem)
        text = data.decode("utf-8")
        digest = sha256(data)
        if digest in known:
            return ImportOutcome(
                source, "duplicate", known[digest].qualified, f"same content as {known[digest].qualified}"
            )
        base = doc_id_from_name(path.stem, data)
        doc_id, suffix = base, 1
        while any(
            self.store.exists(DocRef(scope, owner, doc_id, status).body_key)
            for status in ("pending", "ready")
        ):
            suffix += 1
            doc_id = fit_doc_id(base, f"-{suffix}")
        ref = DocRef(scope, owner, doc_id, "pending")
        meta = self._derive(ref, text, digest, None, source=str(path.resolve()))
        self.store.write(ref.sidecar_key, meta.encode())
        self.store.write(ref.body_key, data, create=True)
        known[digest] = ref
        return ImportOutcome(source, "imported", ref.qualified)

    # --- review -------------------------------------------------------------------------

    def publish(self, *specs: str) -> list[DocRef]:
        """pending → ready, by an admin (system) or the owner (personal).

        Every document is checked before any moves, so a refusal publishes nothing. A pending
        version of a published document replaces it.
        """
        self.refresh()
        refs = list(dict.fromkeys(self.resolve(spec, prefer="pending") for spec in specs))
        for ref in refs:
            self._require_reviewer(ref, "publish")
            if ref.status == "ready":
                raise Conflict(f"{ref.qualified} is already published")
        published = []
        with self._lock():
            for ref in refs:
                meta = self._meta(ref)._replace(reviewed_by=self.user, reviewed_at=utc_now())
                ready = ref.moved("ready")
                self.store.write(ready.sidecar_key, meta.encode())
                self.store.replace(ref.body_key, ready.body_key)
                self.store.delete(ref.sidecar_key)
                published.append(ready)
        self.refresh()
        return published

    def reject(self, *specs: str) -> list[DocRef]:
        """Remove pending documents (their source files are untouched)."""
        self.refresh()
        refs = list(dict.fromkeys(self.resolve(spec, prefer="pending") for spec in specs))
        for ref in refs:
            self._require_reviewer(ref, "reject")
            if ref.status != "pending":
                raise Conflict(f"{ref.qualified} is published; only pending documents can be rejected")
        with self._lock():
            for ref in refs:
                self.store.delete(ref.body_key)
                try:
                    self.store.delete(ref.sidecar_key)
                except NotFound:
                    pass
        self.refresh()
        return refs

    def replace_body(self, spec: str, data: bytes, *, source: str | None = None) -> tuple[DocRef, bool]:
        """A new body (re-ingest or edit): outline rebuilt, summary cleared, back to pending.

        Returns the document and whether anything changed (identical content changes nothing).
        """
        self.refresh()
        ref = self.resolve(spec, prefer="pending")
        self._require_reviewer(ref, "change")
        text = check_importable(data, source or ref.body_key)
        digest = sha256(data)
        with self._lock():
            old = self._meta(ref)
            if old.sha256 == digest:
                return ref, False
            pending = ref.moved("pending")
            meta = self._derive(pending, text, digest, old, source=source)
            self.store.write(pending.sidecar_key, meta.encode())
            self.store.write(pending.body_key, data)
            if ref.status == "ready":
                self.store.delete(ref.body_key)
                self.store.delete(ref.sidecar_key)
        self.refresh()
        self._summarize_later([pending.qualified])
        return pending, True

    def reingest(self, spec: str, path: str | None = None) -> tuple[DocRef, bool]:
        """Read the document again from PATH, or from the file it was imported from."""
        ref = self.resolve(spec, prefer="pending")
        self._require_reviewer(ref, "re-ingest")
        source = path or self._meta(ref).source
        if not source:
            raise UsageError(f"{ref.qualified} has no recorded source; give the PATH to read")
        try:
            data = read_regular_file(Path(source))
        except FileNotFoundError:
            raise NotFound(f"source file {source} not found") from None
        except InvalidInput as exc:
            raise InvalidInput(f"{source}: {exc.message}") from None
        return self.replace_body(spec, data, source=str(Path(source).resolve()))

    def _readable(self, spec: str) -> tuple[DocRef, Meta]:
        """A document and its sidecar, if the user may look at it outside a task: published
        documents they may see; pending ones only if they review them or proposed them. `resolve`
        finds no other: to this user they are missing."""
        ref = self.resolve(spec, prefer="pending")
        return ref, self._meta(ref)

    def body(self, spec: str) -> tuple[DocRef, bytes]:
        ref, _ = self._readable(spec)
        return ref, self.store.read(ref.body_key)[0]

    # --- listing and visibility ---------------------------------------------------------

    @rebuild_if_corrupt("_index")
    def documents(self, status: str = "all") -> list[IndexedDoc]:
        """Documents the user may see, by status (pending, ready or all)."""
        if status not in ("pending", "ready", "all"):
            raise InvalidInput(f"invalid status {status!r}: use pending, ready or all")
        return self._visible_docs(doc for doc in self.index().docs() if status in ("all", doc.ref.status))

    def show(self, spec: str) -> tuple[DocRef, Meta]:
        self.refresh()
        return self._readable(spec)

    def allowed(self, task: str | None = None, status: str = "ready") -> list[IndexedDoc]:
        """The documents a retrieval may use.

        With a task: ready, visible to the user and attached to the task; nothing else. Without
        one, the user's management view: ready documents they may see, or with status "pending"
        the pending documents they may review.
        """
        if task is not None:
            attached = self._attached(task)
            return [
                doc
                for doc in self.index().docs()
                if doc.ref.status == "ready" and self.may_see(doc.ref) and doc.ref.qualified in attached
            ]
        if status == "pending":
            return [
                doc for doc in self.index().docs() if doc.ref.status == "pending" and self.may_review(doc.ref)
            ]
        if status != "ready":
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        return [doc for doc in self.index().docs() if doc.ref.status == "ready" and self.may_see(doc.ref)]

    def _attached(self, task: str) -> set[str]:
        return set(TaskService(self.vault, self.user, store=self.store).attached_in_use(task)[0])

    def _usable(self, spec: str, task: str | None, status: str) -> DocRef:
        """The document, if a retrieval with this task (or management view) may use it."""
        if status not in ("ready", "pending"):
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        self.refresh()
        ref = self.resolve(spec)
        self._check_usable(ref, task, status, self._attached(task) if task is not None else set())
        return ref

    def _check_usable(self, ref: DocRef, task: str | None, status: str, attached: set[str]) -> None:
        """Raise NotAllowed saying why ref may not be used (attached: the task's documents); ref
        comes from `resolve`, so the user may know it exists."""
        wanted = "ready" if task is not None else status
        if ref.status != wanted:
            if ref.status == "pending":
                raise NotAllowed(f"{ref.qualified} is pending review; it is not served until published")
            raise NotAllowed(f"{ref.qualified} is published; drop --status pending")
        if task is not None and ref.qualified not in attached:
            raise NotAllowed(f"{ref.qualified} is not attached to task {task}")
        if status == "pending" and task is None and not self.may_review(ref):
            raise NotAllowed(f"you may not review {ref.qualified}")

    def outline(self, spec: str, task: str | None = None, status: str = "ready") -> tuple[DocRef, Meta]:
        """read_doc: the document's outline, if the document is usable here."""
        ref = self._usable(spec, task, status)
        return ref, self._meta(ref)

    def map(self, task: str) -> tuple[list[MapEntry], list[dict[str, str]]]:
        """The document map of a task, and the attached documents that cannot be used, and why."""
        usable = {doc.ref.qualified: doc for doc in self.allowed(task)}  # refreshes the index once
        tasks = TaskService(self.vault, self.user, store=self.store)
        attached, since = tasks.attached_in_use(task)
        entries: list[MapEntry] = []
        unavailable: list[dict[str, str]] = [
            {"doc": ref, "reason": f"attached after message {since}; used from the next message on"}
            for ref in tasks.get(task).attached
            if ref not in attached
        ]
        for qualified in attached:
            doc = usable.get(qualified)
            if doc is not None:
                entries.append(MapEntry(doc.ref, doc.title, doc.summary, doc.section_count))
                continue
            try:
                self._check_usable(self.resolve(qualified), task, "ready", set(attached))
                reason = "not available"
            except (NotFound, NotAllowed, InvalidInput, Conflict) as exc:
                reason = exc.message
            unavailable.append({"doc": qualified, "reason": reason})
        return entries, unavailable

    # --- search and read ----------------------------------------------------------------

    @rebuild_if_corrupt("_index")
    def search(
        self, query: str, *, task: str | None = None, limit: int = 10, status: str = "ready"
    ) -> list[SearchHit]:
        """search_docs: at most one hit per section, ranked; quoted phrases must occur as written."""
        if not 1 <= limit <= MAX_HITS:
            raise InvalidInput(f"--limit must be from 1 to {MAX_HITS}")
        parsed = parse_query(query)
        if parsed.expression is None:
            raise InvalidInput("the query has no searchable words")
        if status not in ("ready", "pending"):
            raise InvalidInput(f"invalid status {status!r}: use ready or pending")
        index = self.index()
        if task is not None:
            scope = SearchScope("ready", self.user, True, sorted(self._attached(task)))
        elif status == "pending":
            scope = SearchScope("pending", self.user, self.user in self.vault.config.admins, None)
        else:
            scope = SearchScope("ready", self.user, True, None)
        if not parsed.phrases:
            hits = index.search(parsed.expression, scope, limit)
        else:
            # FTS5 matches a phrase's words in order; whether it occurs as written is checked
            # here, widening the window until enough hits pass or the matches run out.
            window = max(limit * 20, 200)
            while True:
                found = index.search(parsed.expression, scope, window)
                hits = [hit for hit in found if contains_phrases(hit.text, parsed.phrases)][:limit]
                if len(hits) == limit or len(found) < window:
                    break
                window *= 4
        return [SearchHit(hit, *best_line(hit.text, hit.start, parsed)) for hit in hits]

    def _section(self, ref: DocRef, meta: Meta, anchor: str) -> int:
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
        ref = self._usable(spec, task, status)
        meta = self._meta(ref)
        position = self._section(ref, meta, anchor)
        section = meta.outline[position]
        anchor = section.anchor  # as the document spells it: cursors name it so
        data, _ = self.store.read(ref.body_key)
        if sha256(data) != meta.sha256:
            raise Conflict(f"{ref.qualified} changed while being read; try again")
        lines = split_lines(data.decode("utf-8"))
        text = "".join(lines[section.start - 1 : section.end])
        offset = 0 if cursor is None else offset_from(cursor, meta.sha256, anchor, len(text))
        chunk = page(text, offset, max_chars or self.vault.config.knowledge.page_chars)
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

    # --- summaries ----------------------------------------------------------------------

    def summarize(self, specs: Iterable[str]) -> list[dict[str, Any]]:
        """Summaries through the summary model role. A failure leaves the document as it was."""
        from ..models import complete_text, model_settings

        role = model_settings("summary", self.vault.config.models, self.environ)
        if not role.configured:
            raise ModelUnavailable("no model is configured for the summary role (AIBUDDY_MODEL_SUMMARY)")
        results = []
        for spec in specs:
            ref, meta = self.show(spec)
            body = self.store.read(ref.body_key)[0].decode("utf-8")
            prompt = [
                {"role": "system", "content": SUMMARY_PROMPT},
                {"role": "user", "content": f"Title: {meta.title}\n\n{body[:12000]}"},
            ]
            try:
                summary = " ".join(complete_text(role, prompt).split())[:1000]
            except ModelError as exc:
                self.warnings.append(f"{ref.qualified}: {exc}; summary left as it was")
                results.append({"doc": ref.qualified, "summarized": False, "reason": str(exc)})
                continue
            results.append(self._store_summary(ref, meta.sha256, summary))
        return results

    def _store_summary(self, ref: DocRef, summarized_sha: str, summary: str) -> dict[str, Any]:
        """Keep the summary only if the body is still the one it describes: the version it was
        made from, or that version after a publication moved it (never another version)."""
        with self._lock():
            for current in (ref, ref.moved("ready" if ref.status == "pending" else "pending")):
                try:
                    meta = self._meta(current)
                except (NotFound, InvalidInput):
                    continue
                if meta.sha256 == summarized_sha:
                    new_meta = meta._replace(summary=summary, summary_sha256=summarized_sha)
                    self.store.write(current.sidecar_key, new_meta.encode())
                    return {"doc": ref.qualified, "summarized": True, "summary": summary}
        self.warnings.append(f"{ref.qualified} changed while it was summarized; summary discarded")
        return {"doc": ref.qualified, "summarized": False, "reason": "document changed"}

    def _summarize_later(self, docs: list[str]) -> None:
        """Start summaries of new bodies when a summary model is configured; never wait for them."""
        if not docs:
            return
        from ..models import model_settings

        try:
            if not model_settings("summary", self.vault.config.models, self.environ).configured:
                return
            self.start_summaries(docs)
        except (InvalidInput, OSError) as exc:
            self.warnings.append(f"summaries not started: {getattr(exc, 'message', None) or exc}")

    def _spawn_summaries(self, docs: list[str]) -> None:
        from ..background import spawn_aibuddy

        spawn_aibuddy(self.vault.root, self.user, ["kb", "summarize", "--background", *docs], self.environ)

    def summarize_in_background(self, specs: Iterable[str]) -> None:
        """`kb summarize --background`: summaries whose outcome goes to .aibuddy/logs/summaries.jsonl,
        since nobody waits for the output."""
        import json

        try:
            results = self.summarize(specs)
        except Exception as exc:  # noqa: BLE001 - nobody sees this process fail but the log
            results = [{"summarized": False, "reason": f"{type(exc).__name__}: {exc}"}]
        entries = [*results, *({"warning": warning} for warning in self.warnings)]
        lines = "".join(
            json.dumps({"at": utc_now(), "user": self.user, **entry}, ensure_ascii=False) + "\n"
            for entry in entries
        )
        self.store.append(SUMMARY_LOG, lines.encode("utf-8"))


def _missing(spec: str) -> NotFound:
    """The one error for a document that does not exist and for one this user may not know of."""
    return NotFound(f"no document {spec!r}")


def _folded(text: str) -> str:
    """text for caseless matching: NFC, case-folded."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str:
    """Why a path that is not a regular file cannot be imported (reading a FIFO would wait for
    a writer, a device may never end)."""
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"not a regular file: {kind}; give a Markdown or text file"


def read_regular_file(path: Path) -> bytes:
    """The first MAX_DOCUMENT_BYTES + 1 bytes of a regular file; InvalidInput for anything else.

    Opened without blocking, so a FIFO put where a file was expected (even after it was
    checked) is refused instead of waiting for a writer.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InvalidInput(_not_regular(mode))
        return handle.read(MAX_DOCUMENT_BYTES + 1)


SUMMARY_PROMPT = (
    "Summarise the document below in two to four sentences for someone deciding whether to read "
    "it: what it covers and for whom. Plain text only, in the document's own language."
)
