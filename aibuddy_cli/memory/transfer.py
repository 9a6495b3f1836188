"""Memories moving in from other tools and out again.

In (`aibuddy import …`), through extraction's reconcile path, as what another program wrote:
provenance `auto`, credential-shaped values redacted, equivalent content a no-op, a similar record
extraction wrote updated, a person's record never overwritten; `--dry-run` lists the decisions.

- `claude-code-memory DIR`: Claude Code's auto-memory folder. Each topic file (front matter
  `name`, `description`, `type` of the same four types, then its body) is one record; `MEMORY.md`
  is Claude Code's index of them and is not a record.
- `mem0 FILE`: mem0's exported memories (`{"results": [...]}`, or a list), each `memory` text one
  `user` record named after its first words.
- `jsonl FILE|-`: one record per line, `{"name", "description", "type", "body"}`. A line that
  holds a record's whole file `text` (what `memory export` writes) is put back byte for byte,
  provenance and telemetry included, where the vault has no record of that name; a different
  record of that name is kept, never overwritten.

Out (`aibuddy memory export`): `jsonl`, one line per record with its fields and its file's text,
so export then import into an empty vault gives the same files byte for byte (expired records
too: an export is a copy); `claude-code`, a folder Claude Code's auto memory reads (a topic file
per record and the MEMORY.md index), without the expired records, which Claude Code would take
for current.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict

from ..errors import AibuddyError, InvalidInput, MalformedRecord, NotFound
from .extraction import Decision, DecisionJson, Extractor
from .service import MemoryService

FORMATS = ("jsonl", "claude-code")
INDEX = "MEMORY.md"
IMPORT_LIMIT = 8 * 1024 * 1024  # one file of memories; a topic file is a few hundred bytes


class ImportedJson(TypedDict):
    source: str
    format: str
    dry_run: bool
    decisions: list[DecisionJson]
    written: list[str]


class Imported(NamedTuple):
    """`aibuddy import …`: one decision per memory the source held."""

    source: str
    format: str
    dry_run: bool
    decisions: list[Decision]

    @property
    def written(self) -> list[str]:
        done = ("created", "updated", "restored")
        return [d.name for d in self.decisions if d.outcome in done and d.name]

    def to_json(self) -> ImportedJson:
        return {
            "source": self.source,
            "format": self.format,
            "dry_run": self.dry_run,
            "decisions": [d.to_json() for d in self.decisions],
            "written": self.written,
        }


def record_name(text: str) -> str:
    """A record name from a title or a file stem: "API conventions" -> "api-conventions"."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")[:64].strip("-_")
    return slug or "imported"


def _candidate(name: str, type_: Any, description: Any, body: Any) -> dict[str, Any]:
    """What extraction's reconcile weighs: a memory another program decided to keep."""
    return {
        "type": type_,
        "name": record_name(name),
        "description": description,
        "body": body if isinstance(body, str) else "",
        "salience": 1.0,
        "durable": True,
        "recoverable": False,
    }


def _first_line(text: str) -> str:
    line = next((line.strip(" #-*") for line in text.splitlines() if line.strip(" #-*")), "")
    return line[:200]


class Importer:
    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory
        self.extractor = Extractor(memory, warnings=memory.warnings)

    def _weigh(self, candidates: Iterable[dict[str, Any] | Decision], dry_run: bool) -> list[Decision]:
        self.extractor.begin_reply()
        return [c if isinstance(c, Decision) else self.extractor.reconcile(c, dry_run) for c in candidates]

    def claude_code(self, folder: Path, dry_run: bool) -> Imported:
        if not folder.is_dir():
            raise NotFound(
                f"no folder {folder} (Claude Code keeps auto memory in ~/.claude/projects/*/memory)"
            )
        candidates: list[dict[str, Any] | Decision] = []
        for path in sorted(folder.glob("*.md")):
            if path.name == INDEX:
                continue
            candidates.append(self._topic(path))
        return Imported(str(folder), "claude-code-memory", dry_run, self._weigh(candidates, dry_run))

    def _topic(self, path: Path) -> dict[str, Any] | Decision:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return Decision("candidate", "dropped", f"{path.name}: cannot be read ({error})")
        header, body = _front_matter(text)
        if header is None:
            return Decision("candidate", "dropped", f"{path.name}: no front matter with a type")
        name = header.get("name") if isinstance(header.get("name"), str) else path.stem
        description = header.get("description")
        if not isinstance(description, str) or not description.strip():
            description = _first_line(body) or name
        return _candidate(str(name), header.get("type"), description, body)

    def mem0(self, source: Path, dry_run: bool) -> Imported:
        document = _json_file(source)
        items = document.get("results", document.get("memories")) if isinstance(document, dict) else document
        if not isinstance(items, list):
            raise InvalidInput(f"{source} is not mem0's export: a list of memories, or {{'results': [...]}}")
        candidates: list[dict[str, Any] | Decision] = []
        for index, item in enumerate(items, 1):
            text = item.get("memory", item.get("text")) if isinstance(item, dict) else None
            if not isinstance(text, str) or not text.strip():
                candidates.append(Decision("candidate", "dropped", f"item {index}: no memory text"))
                continue
            words = " ".join(text.split()[:6])
            candidates.append(_candidate(words, "user", _first_line(text), text))
        return Imported(str(source), "mem0", dry_run, self._weigh(candidates, dry_run))

    def jsonl(self, source: str, lines: list[str], dry_run: bool) -> Imported:
        decisions: list[Decision] = []
        candidates: list[dict[str, Any] | Decision] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                candidates.append(Decision("candidate", "dropped", f"line {number}: not JSON"))
                continue
            if not isinstance(item, dict):
                candidates.append(Decision("candidate", "dropped", f"line {number}: not an object"))
            elif isinstance(item.get("text"), str) and isinstance(item.get("name"), str):
                decisions.append(self._restore(item["name"], item["text"], dry_run))
            else:
                given = item.get("name")
                name = given if isinstance(given, str) else _first_line(str(item.get("body", "")))
                candidates.append(
                    _candidate(name, item.get("type"), item.get("description"), item.get("body"))
                )
        return Imported(source, "jsonl", dry_run, decisions + self._weigh(candidates, dry_run))

    def _restore(self, name: str, text: str, dry_run: bool) -> Decision:
        """An exported record file put back as it was, but for a credential-shaped value (what
        another program wrote: no secret enters memory by an import)."""
        from ..redaction.detect import describe, holds_secret, redacted

        found = holds_secret(text)
        if found:
            text = redacted(text)
        try:
            outcome = self.memory.restore(name, text, dry_run=dry_run)
        except (MalformedRecord, InvalidInput) as error:
            return Decision("candidate", "dropped", f"{name}: {error.message}")
        except AibuddyError as error:
            return Decision("write", "failed", error.message, name)
        detail = {
            "restored": f"its exported file, {describe(found)} redacted" if found else "its exported file, "
            "byte for byte",
            "no-op": "the vault holds the same file",
            "kept": "a different record of that name is in the vault: never overwritten",
        }[outcome]
        shown = "would-restore" if dry_run and outcome == "restored" else outcome
        return Decision("write", shown, detail, name)


def _front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """A topic file's front matter (YAML, safely loaded) and body; None without front matter."""
    if not text.startswith("---"):
        return None, text
    end = re.search(r"^---[ \t]*$", text[3:], re.MULTILINE)
    if end is None:
        return None, text
    import yaml

    try:
        header = yaml.load(text[3 : 3 + end.start()], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None, text
    body = text[3 + end.end() :].lstrip("\n")
    return (header if isinstance(header, dict) else None), body


def _json_file(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{path} not found") from None
    if len(data) > IMPORT_LIMIT:
        raise InvalidInput(f"{path} is larger than 8 MiB")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise InvalidInput(f"{path} is not JSON ({error})") from None


# --- export ---------------------------------------------------------------------------------------


class ExportedJson(TypedDict):
    user: str
    format: str
    output: str
    records: int
    exported: NotRequired[list[dict[str, Any]]]  # the lines themselves, with --output -


class Exported(NamedTuple):
    user: str
    format: str
    output: str  # a file, a folder, or "-"
    lines: list[dict[str, Any]]

    @property
    def text(self) -> str:
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)

    def to_json(self) -> ExportedJson:
        data: ExportedJson = {
            "user": self.user,
            "format": self.format,
            "output": self.output,
            "records": len(self.lines),
        }
        if self.output == "-":
            data["exported"] = self.lines
        return data


def export(memory: MemoryService, format: str, output: str) -> Exported:
    """Every record of the user (see the module's docstring); output "-" leaves the writing to
    the front end (stdout)."""
    from ..store.files import atomic_write
    from .expiry import is_expired
    from .records import parse_record

    if format not in FORMATS:
        raise InvalidInput(f"unknown format {format!r}: {', '.join(FORMATS)}")
    lines = []
    expired: set[str] = set()  # out of recall: Claude Code would read them as current
    for name, text in memory.texts():
        record = parse_record(name, text)
        if is_expired(record.expires):
            expired.add(name)
        lines.append(
            {
                "name": name,
                "type": record.type,
                "description": record.description,
                "body": record.body,
                "provenance": record.provenance,
                "created": record.created,
                "updated": record.updated,
                "recallCount": record.recall_count,
                "lastRecalledAt": record.last_recalled_at,
                "text": text,
            }
        )
    result = Exported(memory.user, format, output, lines)
    if format == "claude-code":
        if output == "-":
            raise InvalidInput("--format claude-code writes a folder: give --output DIR")
        folder = Path(output)
        lines = [line for line in lines if line["name"] not in expired]
        result = result._replace(lines=lines)
        for line in lines:
            atomic_write(folder / f"{line['name']}.md", _topic_text(line).encode("utf-8"))
        index = [f"- [{line['description']}]({line['name']}.md)" for line in lines]
        atomic_write(folder / INDEX, ("# Memory\n\n" + "\n".join(index) + "\n").encode("utf-8"))
    elif output != "-":
        path = Path(output)
        target = path / f"memory-{memory.user}.jsonl" if path.is_dir() else path
        atomic_write(target, result.text.encode("utf-8"))
        result = result._replace(output=str(target))
    return result


def _topic_text(line: dict[str, Any]) -> str:
    import yaml

    header = {"name": line["name"], "description": line["description"], "type": line["type"]}
    dumped = yaml.safe_dump(header, allow_unicode=True, sort_keys=False)
    return f"---\n{dumped}---\n\n{line['body']}"
