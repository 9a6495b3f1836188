"""Bounded pages of a section's own text, with cursors tied to the section and document version."""

from __future__ import annotations

from typing import NamedTuple
from zlib import crc32

from ..errors import InvalidInput, Option


class Page(NamedTuple):
    text: str
    offset: int
    next_offset: int | None  # None at the end of the section


def cursor_for(sha256: str, anchor: str, offset: int) -> str:
    """An opaque cursor: document version, section and position."""
    return f"{sha256[:12]}.{crc32(anchor.encode()):08x}.{offset}"


def offset_from(cursor: str, sha256: str, anchor: str, length: int) -> int:
    """The position a cursor points to, if it belongs to this section of this version."""
    parts = cursor.split(".")
    if len(parts) != 3 or not (parts[2].isascii() and parts[2].isdigit()) or len(parts[2]) > 12:
        raise InvalidInput(f"malformed cursor {cursor!r}")
    version, section, position = parts
    if version != sha256[:12]:
        raise InvalidInput("the cursor belongs to another version of the document; read the section again")
    if section != f"{crc32(anchor.encode()):08x}":
        raise InvalidInput("the cursor belongs to another section")
    offset = int(position)
    if not 0 < offset < length:
        raise InvalidInput("the cursor points outside the section")
    return offset


def page(text: str, offset: int, max_chars: int) -> Page:
    """Up to max_chars of text from offset, ending at a line break when one is in reach."""
    if max_chars < 1:
        raise InvalidInput(Option("max_chars"), " must be at least 1")
    end = offset + max_chars
    if end >= len(text):
        return Page(text[offset:], offset, None)
    newline = text.rfind("\n", offset, end)
    if newline >= offset:
        end = newline + 1
    return Page(text[offset:end], offset, end)
