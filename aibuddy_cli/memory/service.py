"""Per-user memory operations. The CLI and library callers both go through MemoryService."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import Conflict, InvalidInput, MalformedRecord, ModelError, NotFound, UsageError
from ..models import model_settings
from ..storage import Entry, FileStore, Store
from ..vault import Vault, memory_key, memory_prefix, validate_record_name
from .index import IndexedRecord, Loaded, MemoryIndex, Problem
from .manifest import ManifestLine, build_manifest
from .recall import select_with_model
from .records import (
    MemoryRecord,
    parse_record,
    render_record,
    utc_now,
    validate_body,
    validate_description,
    validate_type,
)


@dataclass(frozen=True)
class RecordList:
    records: list[IndexedRecord]
    problems: list[Problem]


@dataclass(frozen=True)
class Manifest:
    lines: list[ManifestLine]
    problems: list[Problem]


@dataclass(frozen=True)
class RecallResult:
    query: str
    method: str  # "model" or "lexical"
    records: list[MemoryRecord]
    manifest_size: int
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # model-named files not in the manifest


@dataclass(frozen=True)
class UpdateResult:
    record: MemoryRecord
    changed: bool


class MemoryService:
    """One user's memory in one vault."""

    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        store: Store | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.vault = vault
        self.user = user
        self.prefix = memory_prefix(user)  # validates the user name
        self.store: Store = store or FileStore(vault.root, vault.locks_dir())
        self.environ = os.environ if environ is None else environ
        self._index: MemoryIndex | None = None

    # --- helpers ----------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return memory_key(self.user, name)

    def _lock(self):  # noqa: ANN202 - a context manager from the store
        return self.store.lock(f"memory-{self.user}")

    def _load(self, entry: Entry) -> Loaded:
        name = entry.name[: -len(".md")]
        try:
            data, as_read = self.store.read(entry.key)
        except NotFound:
            return None
        except InvalidInput as exc:
            return entry, None, exc.message
        try:
            return as_read, parse_record(name, data.decode("utf-8")), None
        except UnicodeDecodeError:
            return as_read, None, "not UTF-8 text"
        except MalformedRecord as exc:
            return as_read, None, exc.problem

    def index(self) -> MemoryIndex:
        """The derived index, brought up to date with the folder."""
        if self._index is None:
            self._index = MemoryIndex(self.vault.memory_index_path(self.user))
        self._index.refresh(self.store.scan(self.prefix, ".md"), self._load)
        return self._index

    def _read(self, name: str) -> MemoryRecord:
        try:
            data, _ = self.store.read(self._key(name))
        except NotFound:
            raise NotFound(f"no memory record {name!r} for user {self.user}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRecord(name, "not UTF-8 text") from None
        return parse_record(name, text)

    def _write(self, record: MemoryRecord, *, create: bool = False) -> None:
        entry = self.store.write(self._key(record.name), render_record(record).encode("utf-8"), create=create)
        if self._index is not None:
            self._index.record_written(entry, record)

    # --- operations -------------------------------------------------------------------

    def save(self, name: str, *, type: str, description: str, body: str) -> MemoryRecord:
        """Create a record with manual provenance; an existing name is a conflict."""
        validate_record_name(name)
        now = utc_now()
        record = MemoryRecord(
            name=name,
            description=validate_description(description),
            type=validate_type(type),
            body=validate_body(body),
            provenance="manual",
            created=now,
            updated=now,
        )
        with self._lock():
            if self.store.exists(self._key(name)):
                raise Conflict(f"memory record {name!r} already exists; use 'aibuddy memory update {name}'")
            self._write(record, create=True)
        return record

    def update(
        self,
        name: str,
        *,
        type: str | None = None,
        description: str | None = None,
        body: str | None = None,
    ) -> UpdateResult:
        """Change type, description or body; name, provenance, created and telemetry are kept."""
        validate_record_name(name)
        if type is None and description is None and body is None:
            raise UsageError("nothing to update: give --type, --description or a body")
        with self._lock():
            current = self._read(name)
            changes = {
                "type": current.type if type is None else validate_type(type),
                "description": current.description if description is None else validate_description(description),
                "body": current.body if body is None else validate_body(body),
            }
            if all(getattr(current, key) == value for key, value in changes.items()):
                return UpdateResult(current, changed=False)
            record = MemoryRecord(
                name=current.name,
                provenance=current.provenance,
                created=current.created,
                updated=utc_now(),
                recall_count=current.recall_count,
                last_recalled_at=current.last_recalled_at,
                extra=current.extra,
                **changes,
            )
            self._write(record)
        return UpdateResult(record, changed=True)

    def delete(self, name: str) -> None:
        validate_record_name(name)
        with self._lock():
            try:
                self.store.delete(self._key(name))
            except NotFound:
                raise NotFound(f"no memory record {name!r} for user {self.user}") from None
            if self._index is not None:
                self._index.record_deleted(name)

    def show(self, name: str) -> MemoryRecord:
        validate_record_name(name)
        return self._read(name)

    def list(self) -> RecordList:
        index = self.index()
        return RecordList(index.records(), index.problems())

    def manifest(self, query: str | None = None) -> Manifest:
        index = self.index()
        return Manifest(build_manifest(index, query, self.vault.config.recall), index.problems())

    def count(self) -> int:
        return len(self.store.scan(self.prefix, ".md"))

    def clear(self) -> list[str]:
        """Remove every record file of this user (malformed ones too). Never offered to a model."""
        removed: list[str] = []
        with self._lock():
            for entry in self.store.scan(self.prefix, ".md"):
                try:
                    self.store.delete(entry.key)
                except NotFound:
                    continue
                removed.append(entry.name[: -len(".md")])
            if self._index is not None:
                for name in removed:
                    self._index.record_deleted(name)
        return sorted(removed)

    def recall(self, query: str, limit: int | None = None) -> RecallResult:
        """Manifest → selection (model, else lexical) → at most max_bodies bodies, telemetry updated.

        A model failure of any kind falls back to lexical ranking with a warning.
        """
        if not query.strip():
            raise InvalidInput("the recall query is empty")
        settings = self.vault.config.recall
        limit = settings.max_bodies if limit is None else limit
        if limit < 1:
            raise InvalidInput("--limit must be at least 1")
        limit = min(limit, settings.max_bodies)
        index = self.index()
        manifest = build_manifest(index, query, settings)
        warnings: list[str] = []
        dropped: list[str] = []
        method = "lexical"
        names: list[str] | None = None
        role = model_settings("recall", self.vault.config.models, self.environ)
        if role.configured and manifest:
            try:
                selection = select_with_model(role, query, manifest, limit)
                names, dropped, method = selection.names, selection.dropped, "model"
                if dropped:
                    warnings.append(f"dropped {len(dropped)} name(s) the recall model invented")
            except ModelError as exc:
                warnings.append(f"{exc}; used lexical ranking instead")
        if names is None:
            in_manifest = {line.name for line in manifest}
            ranked = index.rank(query, settings.window)
            names = [name for name, _ in ranked if name in in_manifest][:limit]
        records = self._mark_recalled(names, warnings)
        return RecallResult(
            query=query,
            method=method,
            records=records,
            manifest_size=len(manifest),
            problems=index.problems(),
            warnings=warnings,
            dropped=dropped,
        )

    def _mark_recalled(self, names: list[str], warnings: list[str]) -> list[MemoryRecord]:
        """Read the chosen bodies and bump recallCount/lastRecalledAt under the user's lock."""
        records: list[MemoryRecord] = []
        now = utc_now()
        try:
            with self._lock():
                for name in names:
                    try:
                        record = self._read(name)
                    except (NotFound, MalformedRecord) as exc:
                        warnings.append(f"skipped {name}: {exc.message}")
                        continue
                    recalled = record.recalled(now)
                    try:
                        self._write(recalled)
                    except OSError as exc:
                        warnings.append(f"could not record the recall of {name}: {exc.strerror or exc}")
                        recalled = record
                    records.append(recalled)
        except Conflict as exc:
            warnings.append(f"{exc.message}; recall telemetry not updated")
            for name in names[len(records) :]:
                try:
                    records.append(self._read(name))
                except (NotFound, MalformedRecord):
                    continue
        return records
