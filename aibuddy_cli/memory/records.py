"""The memory record file format: YAML frontmatter in a fixed key order, then the body verbatim.

Writing the same record twice gives the same bytes, so git diffs show only what changed.
Reading is strict: a file that is not exactly one well-formed record is reported, not guessed at.

Two readers give the same answers (tests/memory/test_records.py holds them to it):
- python-frontmatter with RecordHandler (a YAMLHandler: safe loading that refuses duplicate keys,
  the body kept byte for byte, keys written in FIELD_ORDER) writes every record and reads every
  header the YAML-free parser declines (every header, with parse_record(..., fast=False));
- a YAML-free parser reads the simple `key: value` headers aibuddy itself writes, so the recall,
  manifest and index hot path imports neither PyYAML nor python-frontmatter (~22 ms together).

Both are in headers.py; editing a header in place is header_edit.py's, and finding git's
conflict markers git/conflict_markers.py's. Here: the record, its rules, and reading and writing it.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, BinaryIO, Literal, NamedTuple, NotRequired, TypedDict, overload

from ..errors import InvalidInput, MalformedRecord
from ..git.conflict_markers import RESOLVE_CONFLICT, ConflictRegion, conflict_lines, merge_conflicts
from ..inputs import read_bounded
from ..names import validate_record_name
from .expiry import is_expired
from .headers import (
    EXPIRES,
    FIELD_ORDER,
    load_header,
    looks_like_second_frontmatter,
    parse_flat_header,
    split_frontmatter_or_fail,
    yaml_plumbing,
)

TYPES = ("user", "feedback", "project", "reference")
PROVENANCES = ("manual", "auto")
REQUIRED = ("name", "description", "type")
MAX_DESCRIPTION = 500
MAX_BODY_BYTES = 1024 * 1024


class RecordHeaderJson(TypedDict):
    """A record without its body (`memory list`)."""

    name: str
    description: str
    type: str
    provenance: str
    created: str | None
    updated: str | None
    recallCount: int  # noqa: N815 - the JSON's key
    lastRecalledAt: str | None  # noqa: N815 - the JSON's key
    # Only for a record with an `expires` header: the date (or time) from which it is out of
    # recall, and whether that moment has come.
    expires: NotRequired[str]
    expired: NotRequired[bool]


class RecordJson(RecordHeaderJson):
    body: str


MAX_COUNT = 2**63 - 1  # recallCount's largest value: SQLite's largest integer

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
    # From this date (YYYY-MM-DD, 00:00 UTC) or time (YYYY-MM-DDTHH:MM:SSZ) on, the record is out of
    # the recall window and recall (see expiry.py); None: it never expires.
    expires: str | None = None

    @overload
    def to_json(self, *, body: Literal[True] = True) -> RecordJson: ...

    @overload
    def to_json(self, *, body: Literal[False]) -> RecordHeaderJson: ...

    def to_json(self, *, body: bool = True) -> RecordJson | RecordHeaderJson:
        data: RecordHeaderJson = {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "provenance": self.provenance,
            "created": self.created,
            "updated": self.updated,
            "recallCount": self.recall_count,
            "lastRecalledAt": self.last_recalled_at,
        }
        if self.expires is not None:
            data["expires"] = self.expires
            data["expired"] = is_expired(self.expires)
        if body:
            return {**data, "body": self.body}
        return data

    def recalled(self, when: str, times: int = 1) -> MemoryRecord:
        # (the count stops at the index's largest integer: a recall never breaks a good record)
        return self._replace(recall_count=min(self.recall_count + times, MAX_COUNT), last_recalled_at=when)


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
    if looks_like_second_frontmatter(body):
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
    source = "standard input" if path == "-" else path
    data = read_bounded(
        path, MAX_BODY_BYTES, stdin, name=f"body file {path}", too_large=f"{source} is larger than 1 MB"
    )
    return decode_body(data, source)


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


def _expires(value: Any, name: str) -> str | None:
    """The `expires` header as a record keeps it: a date "YYYY-MM-DD" or a UTC timestamp; None
    when empty (`''` too), null or `never` (as `--expires` takes it, in any case). Anything else
    makes the record malformed (never guessed at)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "never")):
        return None
    if isinstance(value, dt.datetime):
        return _timestamp(value, EXPIRES, name)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            if len(value) == 10:
                return dt.date.fromisoformat(value).isoformat()
            return _timestamp(value, EXPIRES, name)
        except (ValueError, MalformedRecord):
            pass
    raise MalformedRecord(
        name, f"expires is not a date: {value!r} (write YYYY-MM-DD, or remove the line to keep it for good)"
    )


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
        header_text, body = split_frontmatter_or_fail(text) if fast else yaml_plumbing().handler.split(text)
    except ValueError:
        raise MalformedRecord(name, "no frontmatter block (the file must start with '---')") from None
    header = parse_flat_header(header_text) if fast else None
    if header is None:
        header = load_header(name, header_text)
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
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
        raise MalformedRecord(name, f"recallCount is not a count: {count!r}")
    if looks_like_second_frontmatter(body) if fast else yaml_plumbing().handler.has_second_block(body):
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
        extra=tuple((k, v) for k, v in header.items() if k not in FIELD_ORDER and k != EXPIRES),
        expires=_expires(header.get(EXPIRES), name),
    )


def render_record(record: MemoryRecord) -> str:
    """The file text of record: a fixed-order header, then the body exactly as given."""
    plumbing = yaml_plumbing()
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
    if record.expires is not None:  # a record without it has no such line (its bytes as ever)
        header[EXPIRES] = expires_value(record.expires)
    header.update(record.extra)
    post = plumbing.frontmatter.Post(record.body, plumbing.handler)
    post.metadata = header  # not Post(**header): a key a person added need not be a string
    return str(plumbing.frontmatter.dumps(post))


def expires_value(expires: str) -> Any:
    """The `expires` header's value as YAML writes it plainly: a date, or a timestamp (unquoted)."""
    if len(expires) == 10:
        return dt.date.fromisoformat(expires)
    return yaml_plumbing().timestamp(expires)


def line_ending(text: str) -> str:
    """The line ending a record file uses: that of its opening '---' line."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def with_line_ending(body: str, ending: str) -> str:
    """body with its bare LF line breaks written as `ending` (a CRLF file stays CRLF)."""
    return re.sub(r"(?<!\r)\n", ending, body) if ending == "\r\n" else body
