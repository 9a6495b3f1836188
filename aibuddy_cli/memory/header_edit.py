"""Editing a record file's header in place, byte for byte: what a recall and `memory update`
write to a file a person may have written by hand, changing only the lines they must."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..errors import MalformedRecord
from .headers import EXPIRES, split_frontmatter, yaml_plumbing
from .records import MemoryRecord, expires_value, line_ending, parse_record, render_record

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
    yaml = yaml_plumbing().yaml
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
    text: str, lines: dict[str, str | None], check: Callable[[str], bool], body: str | None = None
) -> str | None:
    """text with each key's header line(s) replaced by lines[key] (removed where it is None) and
    the missing keys added at the end of the header in the file's line ending; the body replaced
    when one is given.

    Everything else (a BOM, comments, quoting, other keys, the line break of a replaced line, a
    trailing comment on it) stays byte for byte. The lines are found without YAML first (fast,
    and enough for headers aibuddy writes), then with it; the first edit `check` accepts is the
    answer, None when neither is (a flow-style header, a key given twice)."""
    parts = split_frontmatter(text)
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
            line = lines[key]
            if line is None:
                dropped.update(range(first, last + 1))
                continue
            row = rows[first]
            content = row.rstrip(_BREAKS)
            comment = _TRAILING_COMMENT.search(content) if first == last else None
            replaced[first] = line + (comment.group(2) if comment else "") + row[len(content) :]
            dropped.update(range(first + 1, last + 1))
        kept = [replaced.get(index, row) for index, row in enumerate(rows) if index not in dropped]
        kept += [line + ending for key, line in lines.items() if key not in spans and line is not None]
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
    lines: dict[str, str | None] = {
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
    not read back as `record`, the record is rendered anew. An `expires` line is added at the end
    of the header, changed in place, or removed (`--expires never`).
    """
    if text == render_record(current):
        return render_record(record)
    handler = yaml_plumbing().handler
    timestamp = yaml_plumbing().timestamp
    lines: dict[str, str | None] = {}
    for key, field, value in (
        ("description", "description", record.description),
        ("type", "type", record.type),
        ("provenance", "provenance", record.provenance),
        ("updated", "updated", None if record.updated is None else timestamp(record.updated)),
        (EXPIRES, "expires", None if record.expires is None else expires_value(record.expires)),
    ):
        if getattr(current, field) != getattr(record, field):
            removed = value is None and key == EXPIRES
            lines[key] = None if removed else handler.export({key: value}).removesuffix("\n")
    if any("\n" in line for line in lines.values() if line is not None):
        return render_record(record)
    edited = _edit_header(
        text, lines, lambda edited: parse_record(record.name, edited, fast=False) == record, record.body
    )
    return render_record(record) if edited is None else edited
