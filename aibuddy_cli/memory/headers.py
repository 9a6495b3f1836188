"""Reading a memory record's header: the '---' block split from the body, the YAML-free parser
of the one-line `key: value` headers aibuddy writes, and the python-frontmatter plumbing (a strict,
byte-stable YAML handler, imported lazily) that reads every other header and writes them all.

records.py turns a header into a MemoryRecord; header_edit.py rewrites lines of one in place.
"""

from __future__ import annotations

import datetime as dt
import re
from types import ModuleType
from typing import Any, NamedTuple

from ..errors import MalformedRecord

# The keys of a record's header, in the order they are written.
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
# A key of the header only when the record has it, written after FIELD_ORDER's.
EXPIRES = "expires"


# python-frontmatter plumbing, imported lazily: the hot path reads flat headers without it.


class _Plumbing(NamedTuple):
    yaml: ModuleType
    frontmatter: ModuleType
    handler: Any  # a RecordHandler, the frontmatter.default_handlers.YAMLHandler defined below
    timestamp: type[str]


_plumbing_cache: list[_Plumbing] = []


def yaml_plumbing() -> _Plumbing:
    if not _plumbing_cache:
        _plumbing_cache.append(_buildyaml_plumbing())
    return _plumbing_cache[0]


def _buildyaml_plumbing() -> _Plumbing:
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
            return split_frontmatter_or_fail(text)

        def load(self, fm: str, **kwargs: object) -> Any:
            """The header, safely loaded; a duplicate key raises yaml.YAMLError. An empty header
            (blank or only comments) is an empty mapping, as the YAML-free parser reads it."""
            kwargs.setdefault("Loader", StrictLoader)
            data = yaml.load(fm, **kwargs)  # type: ignore[arg-type]
            return {} if data is None else data

        def has_second_block(self, content: str) -> bool:
            """Whether content opens with another record header (duplicate frontmatter)."""
            return looks_like_second_frontmatter(content, fast=False)

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


# The line that closes a header: '---' or '...', then only spaces or carriage returns.
_CLOSING_LINE = re.compile(r"\n(?:---|\.\.\.)[\r ]*(?=\n|\Z)")


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(header, body) when text opens with a '---' block closed by '---' or '...' (lines end at
    "\n" only)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip("\r ") != "---":
        return None
    closing = _CLOSING_LINE.search(text, first_end)
    if closing is None:
        return None
    return text[first_end + 1 : closing.start() + 1], text[closing.end() + 1 :]


_FLAT_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?")
_YAML_BOOL_OR_NULL = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL ~".split()
)
_PLAIN_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_PLAIN_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_PLAIN_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NOT_FLAT = object()


def _flat_scalar(raw: str) -> Any:
    """The value YAML gives a one-line scalar, for the forms whose meaning is unambiguous;
    _NOT_FLAT for anything else, which then goes to the real YAML parser."""
    value = raw.strip(" ")
    if not value.isprintable():  # stricter than YAML's own rule, so never more lenient
        return _NOT_FLAT
    if value in ("", "null", "~", "Null", "NULL"):
        return None
    first = value[0]
    if first in "-0123456789":  # where a number, a timestamp or a date begins
        if _PLAIN_INT.fullmatch(value):
            return int(value)
        if _PLAIN_TIMESTAMP.fullmatch(value):
            try:
                return dt.datetime.fromisoformat(value[:-1]).replace(tzinfo=dt.UTC)
            except ValueError:  # an impossible date: let YAML report it
                return _NOT_FLAT
        if _PLAIN_DATE.fullmatch(value):  # `expires: 2027-03-01`: YAML reads a date
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                return _NOT_FLAT
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


def parse_flat_header(header_text: str) -> dict[str, Any] | None:
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
        if key in header or key in _YAML_BOOL_OR_NULL or len(key) > 1024:  # (YAML's longest simple key)
            return None
        value = _flat_scalar(raw)
        if value is _NOT_FLAT:
            return None
        header[key] = value
    return header


def split_frontmatter_or_fail(text: str) -> tuple[str, str]:
    """(header, body); ValueError, as python-frontmatter's handlers raise, when there is no header."""
    parts = split_frontmatter(text)
    if parts is None:
        raise ValueError("no frontmatter block")
    return parts


def load_header(name: str, header_text: str) -> Any:
    """The header loaded by python-frontmatter's RecordHandler; MalformedRecord if it is broken."""
    plumbing = yaml_plumbing()
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


def looks_like_second_frontmatter(body: str, *, fast: bool = True) -> bool:
    stripped = body.lstrip("\r\n")
    if not stripped.startswith("---"):
        return False
    parts = split_frontmatter(stripped)
    if parts is None:
        return False
    data = parse_flat_header(parts[0]) if fast else None
    if data is None:
        try:
            data = load_header("", parts[0])
        except MalformedRecord:
            return False
    return isinstance(data, dict) and any(key in data for key in FIELD_ORDER)
