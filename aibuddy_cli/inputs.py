"""Reading what a command is given as a file name or "-" (standard input), bounded: a huge file,
/dev/zero or an endless pipe is refused instead of filling memory."""

from __future__ import annotations

import os
from typing import BinaryIO, NamedTuple

from .errors import InvalidInput, NotFound


def read_bounded(source: str, limit: int, stdin: BinaryIO, *, name: str, too_large: str) -> bytes:
    """The bytes of the file source, or of stdin when source is "-", at most limit of them.

    A regular file larger than limit is refused by its size before anything is read; anything
    else (standard input, a pipe, a device) is read no further than limit + 1 bytes. Raises
    InvalidInput(too_large) when there is more, NotFound "{name} not found" and InvalidInput
    "{name} is a folder"."""
    try:
        if source == "-":
            data = stdin.read(limit + 1)
        else:
            with open(source, "rb") as handle:
                if os.fstat(handle.fileno()).st_size > limit:  # a regular file: known at once
                    raise InvalidInput(too_large)
                data = handle.read(limit + 1)
    except FileNotFoundError:
        raise NotFound(f"{name} not found") from None
    except IsADirectoryError:
        raise InvalidInput(f"{name} is a folder") from None
    if len(data) > limit:
        raise InvalidInput(too_large)
    return data


TRANSCRIPT_LIMIT = 8 * 1024 * 1024


class Transcript(NamedTuple):
    source: str  # the file, or "-" for standard input
    lines: list[str]


def read_transcript_file(transcript: str) -> Transcript:
    """A transcript's lines (`--transcript FILE|-`), read in a bounded way: at most
    TRANSCRIPT_LIMIT + 1 bytes, so a huge file, /dev/zero or an endless pipe is refused instead
    of filling memory."""
    name = "standard input" if transcript == "-" else f"transcript {transcript}"
    too_large = f"{name} is larger than 8 MiB: pass only the latest turns"
    # (a live transcript's last line may be cut inside a character: that line is skipped, as the
    # hook skips it, never the whole import)
    text = read_text(transcript, TRANSCRIPT_LIMIT, name, too_large, errors="replace")
    return Transcript(transcript, text.split("\n"))


def read_text(
    source: str, limit: int, name: str, too_large: str, encoding: str = "utf-8", errors: str = "strict"
) -> str:
    """read_bounded of source ("-": standard input) as UTF-8 text; InvalidInput when it is not."""
    import sys

    data = read_bounded(source, limit, sys.stdin.buffer, name=name, too_large=too_large)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} is not UTF-8 text") from None
