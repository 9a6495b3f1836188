"""Bringing bodies in: importing files into pending/, and new bodies for existing documents
(re-ingest from the source file, an edit). Markdown and UTF-8 text only, decided by content."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from ..errors import InvalidInput, NotFound, UsageError
from .access import Access
from .documents import (
    MAX_DOCUMENT_BYTES,
    SCOPES,
    DocRef,
    check_importable,
    doc_id_from_name,
    fit_doc_id,
    refusal,
    sha256,
)
from .state import KnowledgeState
from .summaries import Summaries
from .sync import Sync, derive_meta

IMPORTABLE_SUFFIXES = (".md", ".markdown", ".txt")


class ImportOutcome(NamedTuple):
    source: str
    status: str  # imported | duplicate | failed | skipped
    doc: str | None = None  # qualified reference
    message: str | None = None


class Imports:
    def __init__(self, state: KnowledgeState, access: Access, sync: Sync, summaries: Summaries) -> None:
        self.state = state
        self.access = access
        self.sync = sync
        self.summaries = summaries

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
        candidates, outcomes = _collect(paths, recursive, self.state.vault.root)
        index = self.sync.index()
        known = {doc.sha256: doc.ref for doc in self.access.known(index.docs())}
        owner = self.state.user if scope == "personal" else None
        total = len(candidates)
        with self.state.lock():
            for number, path in enumerate(candidates, 1):
                if progress is not None:
                    progress(number, total, str(path))
                outcomes.append(self._import_one(path, scope, owner, known))
        self.sync.refresh()
        self.summaries.summarize_later([o.doc for o in outcomes if o.status == "imported" and o.doc])
        return outcomes

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
        store = self.state.store
        base = doc_id_from_name(path.stem, data)
        doc_id, suffix = base, 1
        while any(
            store.exists(DocRef(scope, owner, doc_id, status).body_key) for status in ("pending", "ready")
        ):
            suffix += 1
            doc_id = fit_doc_id(base, f"-{suffix}")
        ref = DocRef(scope, owner, doc_id, "pending")
        meta = derive_meta(ref, text, digest, None, importer=self.state.user, source=str(path.resolve()))
        store.write(ref.sidecar_key, meta.encode())
        store.write(ref.body_key, data, create=True)
        known[digest] = ref
        return ImportOutcome(source, "imported", ref.qualified)

    def replace_body(self, spec: str, data: bytes, *, source: str | None = None) -> tuple[DocRef, bool]:
        """A new body (re-ingest or edit): outline rebuilt, summary cleared, a pending version for
        review. A published document stays published as it was until its new version is
        (`kb publish` replaces it; `kb reject` drops the new version and keeps it): agents keep
        the reviewed text meanwhile, and the reviewer sees what publishing changes (`aibuddy ui`).

        Returns the document and whether anything changed (identical content changes nothing).
        """
        self.sync.refresh()
        ref = self.access.resolve(spec, prefer="pending")
        self.access.require_reviewer(ref, "change")
        text = check_importable(data, source or ref.body_key)
        digest = sha256(data)
        store = self.state.store
        with self.state.lock():
            old = self.state.meta(ref)
            if old.sha256 == digest:
                return ref, False
            pending = ref.moved("pending")
            meta = derive_meta(pending, text, digest, old, importer=self.state.user, source=source)
            store.write(pending.sidecar_key, meta.encode())
            store.write(pending.body_key, data)
        self.sync.refresh()
        self.summaries.summarize_later([pending.qualified])
        return pending, True

    def reingest(self, spec: str, path: str | None = None) -> tuple[DocRef, bool]:
        """Read the document again from PATH, or from the file it was imported from."""
        ref = self.access.resolve(spec, prefer="pending")
        self.access.require_reviewer(ref, "re-ingest")
        source = path or self.state.meta(ref).source
        if not source:
            raise UsageError(f"{ref.qualified} has no recorded source; give the PATH to read")
        try:
            data = read_regular_file(Path(source))
        except FileNotFoundError:
            raise NotFound(f"source file {source} not found") from None
        except InvalidInput as exc:
            raise InvalidInput(f"{source}: {exc.message}") from None
        return self.replace_body(spec, data, source=str(Path(source).resolve()))


# The vault's own files are never imported: its documents, another user's personal ones among
# them, its memory records, its tasks.
_VAULT_PARTS = ("memory", "knowledge", "tables", "tasks", ".aibuddy")


def _collect(paths: Iterable[str], recursive: bool, vault: Path) -> tuple[list[Path], list[ImportOutcome]]:
    """The files to import, and outcomes for what cannot even be tried."""
    files: list[Path] = []
    outcomes: list[ImportOutcome] = []
    own = [(vault / part).resolve() for part in _VAULT_PARTS]
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
            files.extend(_walk(path, outcomes))
        elif stat.S_ISREG(mode):
            files.append(path)
        else:  # reading a FIFO would wait for a writer, a device may never end
            outcomes.append(ImportOutcome(raw, "failed", message=_not_regular(mode)))
    kept = []
    for file in files:
        resolved = file.resolve()
        if any(resolved.is_relative_to(part) for part in own):
            outcomes.append(ImportOutcome(str(file), "skipped", message="a file of the vault itself"))
        else:
            kept.append(file)
    return kept, outcomes


def _walk(folder: Path, outcomes: list[ImportOutcome]) -> list[Path]:
    """Markdown and text files under folder; a symlink that leads outside it is refused."""
    root = folder.resolve()
    found: list[Path] = []
    for current, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for link in [d for d in dirnames if (Path(current) / d).is_symlink()]:
            dirnames.remove(link)
            outcomes.append(ImportOutcome(str(Path(current) / link), "skipped", message="a linked folder"))
        for name in sorted(filenames):
            path = Path(current) / name
            if name.startswith("."):
                continue
            if not name.lower().endswith(IMPORTABLE_SUFFIXES):
                outcomes.append(ImportOutcome(str(path), "skipped", message="not a Markdown or text file"))
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
