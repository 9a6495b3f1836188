"""The memory record file format: YAML frontmatter in a fixed key order, then the body verbatim.

Writing the same record twice gives the same bytes, so git diffs show only what changed.
Reading is strict: a file that is not exactly one well-formed record is reported, not guessed at.

Two readers give the same answers (tests/test_records.py holds them to it):
- python-frontmatter with RecordHandler (a YAMLHandler: safe loading that refuses duplicate keys,
  the body kept byte for byte, keys written in FIELD_ORDER) writes every record and reads every
  header the YAML-free parser declines (every header, with parse_record(..., fast=False));
- a YAML-free parser reads the simple `key: value` headers aibuddy itself writes, so the recall,
  manifest and index hot path imports neither PyYAML nor python-frontmatter (~22 ms together).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, BinaryIO, NamedTuple

from ..errors import InvalidInput, MalformedRecord, NotFound
from ..names import validate_record_name

TYPES = ("user", "feedback", "project", "reference")
PROVENANCES = ("manual", "auto")
FIELD_ORDER = (
    "name",
    "description",
    "type",
    "provenance",
    "created",
    "updated",
    "recallCount",
    "lastRecalledAt",
)
REQUIRED = ("name", "description", "type")
MAX_DESCRIPTION = 500
MAX_BODY_BYTES = 1024 * 1024


class MemoryRecord(NamedTuple):
    name: str
    description: str
    type: str
    body: str
    provenance: str = "manual"
    created: str | None = None
    updated: str | None = None
    recall_count: int = 0
    last_recalled_at: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()  # keys a person added, kept in order

    def to_json(self, *, body: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "provenance": self.provenance,
            "created": self.created,
            "updated": self.updated,
            "recallCount": self.recall_count,
            "lastRecalledAt": self.last_recalled_at,
        }
        if body:
            data["body"] = self.body
        return data

    def recalled(self, when: str) -> MemoryRecord:
        return self._replace(recall_count=self.recall_count + 1, last_recalled_at=when)


def validate_type(value: str) -> str:
    if value not in TYPES:
        raise InvalidInput(f"invalid type {value!r}: use one of {', '.join(TYPES)}")
    return value


# C0 controls (TAB and line breaks included), DEL, C1 controls and the Unicode line and paragraph
# separators: none belongs in a one-line description a terminal or a model will read.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str, limit: int = 120) -> str:
    """text with every control character written as an escape (\\x1b, \\n, \\u2028), safe to print
    on one line; cut to about `limit` characters."""
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        code = ord(char)
        return named.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")

    escaped = CONTROL_CHARACTERS.sub(escape, text[: limit + 1])
    return escaped if len(text) <= limit else escaped + "…"


def validate_description(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the description is not valid UTF-8 text") from None
    found = CONTROL_CHARACTERS.findall(value)
    if found:
        kinds = ", ".join(dict.fromkeys(escape_controls(char) for char in found))
        raise InvalidInput(
            f'the description "{escape_controls(value)}" contains control characters ({kinds}): '
            "give one line of plain text (it is what recall sees in the manifest)"
        )
    text = value.strip()
    if not text:
        raise InvalidInput("the description is empty")
    if len(text) > MAX_DESCRIPTION:
        raise InvalidInput(f"the description is longer than {MAX_DESCRIPTION} characters")
    return text


def validate_body(body: str) -> str:
    try:
        size = len(body.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("the body is not valid UTF-8 text") from None
    if size > MAX_BODY_BYTES:
        raise InvalidInput("the body is larger than 1 MB")
    if _looks_like_second_frontmatter(body):
        raise InvalidInput(
            "the body starts with its own frontmatter block; remove it or put a line of text before it"
        )
    return body


def decode_body(data: bytes, source: str) -> str:
    """A body given as bytes (file or stdin): at most 1 MB of UTF-8."""
    if len(data) > MAX_BODY_BYTES:
        raise InvalidInput(f"{source} is larger than 1 MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{source} is not UTF-8 text") from None


def read_body_file(path: str, stdin: BinaryIO) -> str:
    """The body given as --body-file: a path, or '-' for standard input."""
    if path == "-":
        return decode_body(stdin.read(MAX_BODY_BYTES + 1), "standard input")
    try:
        with open(path, "rb") as handle:
            return decode_body(handle.read(MAX_BODY_BYTES + 1), path)
    except FileNotFoundError:
        raise NotFound(f"body file {path} not found") from None
    except IsADirectoryError:
        raise InvalidInput(f"body file {path} is a folder") from None


# --- git merge conflicts ------------------------------------------------------------------


class ConflictRegion(NamedTuple):
    """One `<<<<<<<` … `=======` … `>>>>>>>` region git left in a file; lines are 1-based."""

    start: int
    separator: int
    end: int | None  # None when the closing marker is missing (a half-resolved file)
    ours_label: str
    theirs_label: str
    ours: str
    theirs: str
    base: str | None  # the `|||||||` section of merge.conflictStyle=diff3, if any

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": [self.start, self.end],
            "separator": self.separator,
            "ours": {"label": self.ours_label, "text": self.ours},
            "base": self.base,
            "theirs": {"label": self.theirs_label, "text": self.theirs},
        }


_CONFLICT_MARK = re.compile(r"(<{7}|\|{7}|={7}|>{7})(?:[ \t](.*))?")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def merge_conflicts(text: str) -> list[ConflictRegion]:
    """The merge-conflict regions git left in text, header or body (none for a clean file).

    A region opens with a `<<<<<<<` line and needs a `=======` line after it, which keeps a
    Markdown heading underlined with `=======` from counting; markers shown inside a fenced
    code block (a note about resolving conflicts) do not count either.
    """
    if "<<<<<<<" not in text:
        return []
    regions: list[ConflictRegion] = []
    fence = ""
    region: dict[str, Any] | None = None
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        mark = _CONFLICT_MARK.fullmatch(line)
        kind, label = (mark.group(1)[0], mark.group(2) or "") if mark else ("", "")
        if region is not None:
            if kind == "|" and region["part"] == "ours":
                region.update(part="base", base=[])
            elif kind == "=" and region["part"] in ("ours", "base"):
                region.update(part="theirs", separator=number, theirs_label="")
            elif kind == ">" and region["part"] == "theirs":
                region.update(end=number, theirs_label=label)
                regions.append(_region(region))
                region = None
            else:
                region[region["part"]].append(raw)
            continue
        if fence:
            stripped = line.strip(" ")
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            continue
        if kind == "<":
            region = {"start": number, "label": label, "part": "ours"}
            region.update(ours=[], theirs=[], base=None, separator=None, end=None)
        elif opening := _FENCE.match(line):
            fence = opening.group(1)
    if region is not None and region["separator"] is not None:
        regions.append(_region(region))  # the closing marker was deleted, the others were not
    return regions


def _region(found: dict[str, Any]) -> ConflictRegion:
    def joined(lines: list[str] | None) -> str | None:
        return None if lines is None else "".join(f"{line}\n" for line in lines)

    return ConflictRegion(
        start=found["start"],
        separator=found["separator"],
        end=found["end"],
        ours_label=found["label"],
        theirs_label=found.get("theirs_label", ""),
        ours=joined(found["ours"]) or "",
        theirs=joined(found["theirs"]) or "",
        base=joined(found["base"]),
    )


RESOLVE_CONFLICT = (
    "keep the lines you want, delete the <<<<<<<, ======= and >>>>>>> lines, then save the file "
    "(and `git add` it)"
)


def conflict_lines(conflicts: list[ConflictRegion]) -> str:
    """Where the conflicts are: "lines 3-7, 12-16" (an open end when a closing marker is gone)."""
    return "lines " + ", ".join(f"{c.start}-{c.end or ''}" for c in conflicts)


class MergeConflict(MalformedRecord):
    """A record file that still holds git conflict markers: neither version is guessed at."""

    code = "merge_conflict"

    def __init__(
        self, name: str, conflicts: list[ConflictRegion], text: str, path: str | None = None
    ) -> None:
        where = f" in {path}" if path else ""
        super().__init__(name, f"unresolved merge conflict{where} ({conflict_lines(conflicts)})")
        if path:  # a message for a person about to resolve it
            self.message = f"{self.problem}: {RESOLVE_CONFLICT}"
        self.conflicts = conflicts
        self.text = text
        self.path = path

    def located(self, path: str) -> MergeConflict:
        """The same conflict, its messages naming the file (vault-relative path)."""
        return MergeConflict(self.name, self.conflicts, self.text, path)

    def to_json(self) -> dict[str, Any]:
        """What resolving it needs: the file, each conflict's lines and sides, and the raw text."""
        return {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "conflicts": [region.to_json() for region in self.conflicts],
            "text": self.text,
        }


# --- python-frontmatter plumbing (imported lazily: the hot path reads flat headers without it) ---


class _Plumbing(NamedTuple):
    yaml: ModuleType
    frontmatter: ModuleType
    handler: Any  # a RecordHandler, the frontmatter.default_handlers.YAMLHandler defined below
    timestamp: type[str]


_plumbing_cache: list[_Plumbing] = []


def _plumbing() -> _Plumbing:
    if not _plumbing_cache:
        _plumbing_cache.append(_build_plumbing())
    return _plumbing_cache[0]


def _build_plumbing() -> _Plumbing:
    import frontmatter
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    base_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    base_dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class StrictLoader(base_loader):  # type: ignore[misc, valid-type]
        """Safe loader that refuses duplicate keys instead of keeping the last one."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        hashable: set[Any] = set()
        unhashable: list[Any] = []  # refused below by the base loader, with its own message
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                seen = key in hashable
                hashable.add(key)
            except TypeError:
                seen = key in unhashable
                unhashable.append(key)
            if seen:  # reported at the line of the second occurrence
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {str(key)!r}", key_node.start_mark
                )
        return loader.construct_mapping_plain(node, deep=deep)

    StrictLoader.construct_mapping_plain = base_loader.construct_mapping  # type: ignore[attr-defined]
    StrictLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)

    class Timestamp(str):
        """A timestamp string, emitted as a plain YAML timestamp rather than a quoted string."""

    class RecordDumper(base_dumper):  # type: ignore[misc, valid-type]
        pass

    RecordDumper.add_representer(
        Timestamp, lambda d, v: d.represent_scalar("tag:yaml.org,2002:timestamp", str(v))
    )

    class RecordHandler(YAMLHandler):
        """python-frontmatter's YAML handler, made strict and byte-stable for memory records.

        Use split/load and frontmatter.dumps, not frontmatter.loads: loads strips the text and
        turns CRLF into LF, and the stock format/export sort keys, strip the YAML and add a blank
        line, none of which a record's byte-for-byte body and fixed header allow.
        """

        def split(self, text: str) -> tuple[str, str]:
            """(header, body): a '---' line, the header, a '---' or '...' line, the body verbatim."""
            return _split_frontmatter_or_fail(text)

        def load(self, fm: str, **kwargs: object) -> Any:
            """The header, safely loaded; a duplicate key raises yaml.YAMLError. An empty header
            (blank or only comments) is an empty mapping, as the YAML-free parser reads it."""
            kwargs.setdefault("Loader", StrictLoader)
            data = yaml.load(fm, **kwargs)  # type: ignore[arg-type]
            return {} if data is None else data

        def has_second_block(self, content: str) -> bool:
            """Whether content opens with another record header (duplicate frontmatter)."""
            return _looks_like_second_frontmatter(content, fast=False)

        def export(self, metadata: dict[Any, Any], **kwargs: object) -> str:
            """The header as YAML: FIELD_ORDER keys first, then any others in their order."""
            ordered = {key: metadata[key] for key in FIELD_ORDER if key in metadata}
            ordered.update((key, value) for key, value in metadata.items() if key not in ordered)
            kwargs.setdefault("Dumper", RecordDumper)
            kwargs.setdefault("sort_keys", False)
            kwargs.setdefault("allow_unicode", True)
            kwargs.setdefault("width", 2**31 - 1)
            kwargs.setdefault("default_flow_style", False)
            return yaml.dump(ordered, **kwargs)  # type: ignore[call-overload, no-any-return]

        def format(self, post: Any, **kwargs: object) -> str:
            """'---', the header, '---', then the body exactly as given."""
            header = self.export(post.metadata, **kwargs)
            return f"{self.START_DELIMITER}\n{header}{self.END_DELIMITER}\n{post.content}"

    return _Plumbing(yaml, frontmatter, RecordHandler(), Timestamp)


def _split_frontmatter(text: str) -> tuple[str, str] | None:
    """(header, body) when text opens with a '---' block closed by '---' or '...'."""
    if text.startswith("\ufeff"):
        text = text[1:]
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip("\r ") != "---":
        return None
    position = first_end + 1
    while position <= len(text):
        end = text.find("\n", position)
        line = text[position:] if end < 0 else text[position:end]
        if line.rstrip("\r ") in ("---", "..."):
            body_start = len(text) if end < 0 else end + 1
            return text[first_end + 1 : position], text[body_start:]
        if end < 0:
            return None
        position = end + 1
    return None


def _timestamp(value: Any, key: str, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        try:
            return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (ValueError, OverflowError):
            raise MalformedRecord(name, f"{key} is not a usable timestamp: {value!r}") from None
    if isinstance(value, dt.date):
        return f"{value.isoformat()}T00:00:00Z"
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            parsed.astimezone(dt.UTC)
        except (ValueError, OverflowError):
            raise MalformedRecord(name, f"{key} is not a timestamp: {value!r}") from None
        return _timestamp(parsed, key, name)
    raise MalformedRecord(name, f"{key} is not a timestamp: {value!r}")


_FLAT_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
_YAML_BOOL_OR_NULL = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL ~".split()
)
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_PLAIN_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_NOT_FLAT = object()


def _flat_scalar(raw: str) -> Any:
    """The value YAML gives a one-line scalar, for the forms whose meaning is unambiguous;
    _NOT_FLAT for anything else, which then goes to the real YAML parser."""
    value = raw.strip(" ")
    if not value.isprintable():  # stricter than YAML's own rule, so never more lenient
        return _NOT_FLAT
    if value in ("", "null", "~", "Null", "NULL"):
        return None
    if _PLAIN_INT.fullmatch(value):
        return int(value)
    if _PLAIN_TIMESTAMP.fullmatch(value):
        try:
            return dt.datetime.fromisoformat(value[:-1]).replace(tzinfo=dt.UTC)
        except ValueError:  # an impossible date: let YAML report it
            return _NOT_FLAT
    first = value[0]
    if first == "'":
        inner = value[1:-1]
        if len(value) > 1 and value.endswith("'") and "'" not in inner.replace("''", ""):
            return inner.replace("''", "'")
        return _NOT_FLAT
    if first == '"':
        inner = value[1:-1]
        if len(value) > 1 and value.endswith('"') and '"' not in inner and "\\" not in inner:
            return inner
        return _NOT_FLAT
    if (
        first in "-?:,[]{}#&*!|>%@`.+=<0123456789 \t"
        or value in _YAML_BOOL_OR_NULL
        or ": " in value
        or " #" in value
        or "\t" in value
        or value.endswith(":")
    ):
        return _NOT_FLAT
    return value


def _parse_flat_header(header_text: str) -> dict[str, Any] | None:
    """Parse a header of one-line `key: value` pairs without YAML; None if it is not that simple.

    Records written by aibuddy are always this simple, so recall and indexing skip importing
    and running the YAML parser. The result equals what the safe YAML loader gives.
    """
    header: dict[str, Any] = {}
    # Only "\n" (and a "\r" before it) ends a line here: YAML does not break lines at form
    # feeds or Unicode separators, which str.splitlines would.
    for line in header_text.split("\n"):
        line = line.removesuffix("\r")
        if not line.strip(" "):  # a blank line; one with a tab is left to YAML, which may refuse it
            continue
        match = _FLAT_LINE.fullmatch(line)
        if match is None:
            return None
        key, raw = match.group(1), match.group(2) or ""
        if key in header or key in _YAML_BOOL_OR_NULL:
            return None
        value = _flat_scalar(raw)
        if value is _NOT_FLAT:
            return None
        header[key] = value
    return header


def parse_record(name: str, text: str, *, fast: bool = True) -> MemoryRecord:
    """Parse the file text of record `name`; raise MalformedRecord saying what is wrong.

    A header the YAML-free parser reads (every header aibuddy writes) never loads PyYAML or
    python-frontmatter; any other goes through python-frontmatter's RecordHandler. fast=False
    reads every header through python-frontmatter; the answer is the same either way.
    """
    try:
        validate_record_name(name)
    except InvalidInput:
        raise MalformedRecord(name, "the file name is not a valid record name") from None
    conflicts = merge_conflicts(text)
    if conflicts:
        raise MergeConflict(name, conflicts, text)
    try:
        header_text, body = _split_frontmatter_or_fail(text) if fast else _plumbing().handler.split(text)
    except ValueError:
        raise MalformedRecord(name, "no frontmatter block (the file must start with '---')") from None
    header = _parse_flat_header(header_text) if fast else None
    if header is None:
        header = _load_header(name, header_text)
    if not isinstance(header, dict):
        raise MalformedRecord(name, "the frontmatter is not a mapping of keys to values")
    missing = [key for key in REQUIRED if key not in header]
    if missing:
        raise MalformedRecord(name, f"missing key(s): {', '.join(missing)}")
    if header["name"] != name:
        raise MalformedRecord(name, f"name {header['name']!r} does not match the file name")
    description = header["description"]
    if isinstance(description, (int, float)) and not isinstance(description, bool):
        description = str(description)
    if not isinstance(description, str) or not description.strip():
        raise MalformedRecord(
            name, "description must be a non-empty string (quote it if YAML reads it as something else)"
        )
    if header["type"] not in TYPES:
        raise MalformedRecord(name, f"unknown type {header['type']!r}")
    provenance = header.get("provenance", "manual")
    if provenance not in PROVENANCES:
        raise MalformedRecord(name, f"unknown provenance {provenance!r}")
    count = header.get("recallCount", 0)
    if count is None:
        count = 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise MalformedRecord(name, f"recallCount is not a count: {count!r}")
    if _looks_like_second_frontmatter(body) if fast else _plumbing().handler.has_second_block(body):
        raise MalformedRecord(name, "a second frontmatter block follows the first (duplicate frontmatter)")
    return MemoryRecord(
        name=name,
        description=description,
        type=header["type"],
        body=body,
        provenance=provenance,
        created=_timestamp(header.get("created"), "created", name),
        updated=_timestamp(header.get("updated"), "updated", name),
        recall_count=count,
        last_recalled_at=_timestamp(header.get("lastRecalledAt"), "lastRecalledAt", name),
        extra=tuple((k, v) for k, v in header.items() if k not in FIELD_ORDER),
    )


def _split_frontmatter_or_fail(text: str) -> tuple[str, str]:
    """(header, body); ValueError, as python-frontmatter's handlers raise, when there is no header."""
    parts = _split_frontmatter(text)
    if parts is None:
        raise ValueError("no frontmatter block")
    return parts


def _load_header(name: str, header_text: str) -> Any:
    """The header loaded by python-frontmatter's RecordHandler; MalformedRecord if it is broken."""
    plumbing = _plumbing()
    try:
        return plumbing.handler.load(header_text)
    except plumbing.yaml.YAMLError as exc:
        raise MalformedRecord(name, f"broken frontmatter YAML: {_yaml_problem(exc)}") from None
    except (ValueError, OverflowError) as exc:  # e.g. an impossible date such as 2026-02-30
        raise MalformedRecord(name, f"broken frontmatter YAML: {exc}") from None


def _yaml_problem(exc: Exception) -> str:
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or "unreadable"
    mark = getattr(exc, "problem_mark", None)
    # The header starts on line 2 of the file (after the opening ---).
    return f"{problem} (line {mark.line + 2})" if mark is not None else str(problem)


def _looks_like_second_frontmatter(body: str, *, fast: bool = True) -> bool:
    stripped = body.lstrip("\r\n")
    if not stripped.startswith("---"):
        return False
    parts = _split_frontmatter(stripped)
    if parts is None:
        return False
    data = _parse_flat_header(parts[0]) if fast else None
    if data is None:
        try:
            data = _load_header("", parts[0])
        except MalformedRecord:
            return False
    return isinstance(data, dict) and any(key in data for key in FIELD_ORDER)


def render_record(record: MemoryRecord) -> str:
    """The file text of record: a fixed-order header, then the body exactly as given."""
    plumbing = _plumbing()
    timestamp = plumbing.timestamp

    def ts(value: str | None) -> Any:
        return None if value is None else timestamp(value)

    header: dict[str, Any] = {
        "name": record.name,
        "description": record.description,
        "type": record.type,
        "provenance": record.provenance,
        "created": ts(record.created),
        "updated": ts(record.updated),
        "recallCount": record.recall_count,
        "lastRecalledAt": ts(record.last_recalled_at),
    }
    header.update(record.extra)
    post = plumbing.frontmatter.Post(record.body, plumbing.handler)
    post.metadata = header  # not Post(**header): a key a person added need not be a string
    return str(plumbing.frontmatter.dumps(post))


def line_ending(text: str) -> str:
    """The line ending a record file uses: that of its opening '---' line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def with_line_ending(body: str, ending: str) -> str:
    """body with its bare LF line breaks written as `ending` (a CRLF file stays CRLF)."""
    return re.sub(r"(?<!\r)\n", ending, body) if ending == "\r\n" else body


_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?=[ \t]|$)")
_TRAILING_COMMENT = re.compile(r"(:[ \t]*[^'\"#\s|>[{&*!][^#]*?)([ \t]+#.*)")
# A header line and its line break, as YAML counts lines (so its marks' line numbers match).
_YAML_ROW = re.compile("[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029])")
_BREAKS = "\r\n\x85\u2028\u2029"

Spans = dict[str, tuple[int, int]]  # key -> (first, last) header row of its line(s)


def _spans_by_lines(rows: list[str], keys: Iterable[str]) -> Spans | None:
    """Where each key's `key:` line (column 0) and its indented continuation lines are, read
    line by line without YAML; None if a key occurs on two lines (it may sit inside a value)."""
    spans: Spans = {}
    for index, row in enumerate(rows):
        match = _KEY_LINE.match(row.rstrip(_BREAKS))
        if match is None or match.group(1) not in keys:
            continue
        if match.group(1) in spans:
            return None
        last = index
        for following in range(index + 1, len(rows)):
            if rows[following][:1] in (" ", "\t"):
                last = following
            elif rows[following].strip(" \t" + _BREAKS):
                break
        spans[match.group(1)] = (index, last)
    return spans


def _spans_by_yaml(header: str, keys: Iterable[str]) -> Spans | None:
    """The same, from the positions PyYAML's composer reports (quoted values over several lines,
    keys inside them); None for a header that is not a block mapping."""
    yaml = _plumbing().yaml
    try:
        node = yaml.compose(header, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(node, yaml.MappingNode) or node.flow_style:
        return None
    spans: Spans = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.value not in keys:
            continue
        key: str = key_node.value
        if key in spans or key_node.start_mark.column != 0:
            return None
        first, end = key_node.start_mark.line, value_node.end_mark
        spans[key] = (first, max(first, end.line if end.column else end.line - 1))
    return spans


def _edit_header(
    text: str, lines: dict[str, str], check: Callable[[str], bool], body: str | None = None
) -> str | None:
    """text with each key's header line(s) replaced by lines[key] and the missing keys added at
    the end of the header in the file's line ending; the body replaced when one is given.

    Everything else (a BOM, comments, quoting, other keys, the line break of a replaced line, a
    trailing comment on it) stays byte for byte. The lines are found without YAML first (fast,
    and enough for headers aibuddy writes), then with it; the first edit `check` accepts is the
    answer, None when neither is (a flow-style header, a key given twice)."""
    parts = _split_frontmatter(text)
    if parts is None:
        return None
    header, old_body = parts
    opening = text[: text.index("\n") + 1]  # with the BOM, if any
    closing = text[len(opening) + len(header) : len(text) - len(old_body)]
    ending = line_ending(text)
    rows = _YAML_ROW.findall(header)
    for find in (lambda: _spans_by_lines(rows, lines), lambda: _spans_by_yaml(header, lines)):
        spans = find()
        if spans is None:
            continue
        replaced: dict[int, str] = {}
        dropped: set[int] = set()
        for key, (first, last) in spans.items():
            row = rows[first]
            content = row.rstrip(_BREAKS)
            comment = _TRAILING_COMMENT.search(content) if first == last else None
            replaced[first] = lines[key] + (comment.group(2) if comment else "") + row[len(content) :]
            dropped.update(range(first + 1, last + 1))
        kept = [replaced.get(index, row) for index, row in enumerate(rows) if index not in dropped]
        kept += [line + ending for key, line in lines.items() if key not in spans]
        edited = opening + "".join(kept) + closing + (old_body if body is None else body)
        try:
            if check(edited):
                return edited
        except MalformedRecord:
            pass
    return None


def mark_recalled_text(text: str, record: MemoryRecord) -> str:
    """The file text with only the telemetry lines changed to record's values.

    A recall must not reformat what a person wrote: the two telemetry lines are replaced in
    place (added at the end of the header when missing), and the result is kept only if it
    reads back as exactly `record`. A header that cannot be edited that way (a flow-style
    mapping) is left as it is: the recall is then not recorded in the file.
    """
    lines = {
        "recallCount": f"recallCount: {record.recall_count}",
        "lastRecalledAt": f"lastRecalledAt: {record.last_recalled_at or 'null'}",
    }
    edited = _edit_header(text, lines, lambda edited: parse_record(record.name, edited) == record)
    return text if edited is None else edited


def updated_text(text: str, current: MemoryRecord, record: MemoryRecord) -> str:
    """The file text of `current` (read from text) changed to `record` by `memory update`.

    A record as aibuddy writes it is rendered anew (the same bytes as ever). Any other keeps its
    line endings and every header line of a key that did not change, byte for byte: only the
    changed keys' lines and `updated` are rewritten, and the body replaced. If that edit does
    not read back as `record`, the record is rendered anew.
    """
    if text == render_record(current):
        return render_record(record)
    handler = _plumbing().handler
    timestamp = _plumbing().timestamp
    lines: dict[str, str] = {}
    for key, value in (
        ("description", record.description),
        ("type", record.type),
        ("updated", None if record.updated is None else timestamp(record.updated)),
    ):
        if getattr(current, key) != getattr(record, key):
            lines[key] = handler.export({key: value}).removesuffix("\n")
    if any("\n" in line for line in lines.values()):
        return render_record(record)
    edited = _edit_header(
        text, lines, lambda edited: parse_record(record.name, edited, fast=False) == record, record.body
    )
    return render_record(record) if edited is None else edited
