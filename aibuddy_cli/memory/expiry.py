"""When a memory record expires: its `expires` header, read and given.

`expires: 2027-03-01` means the record counts through 2027-02-28 and is out of the recall window
and recall from 2027-03-01 00:00 UTC on (the date is exclusive: the day it names is the first day
it no longer holds, as `--expires 30d` counts 30 days from today). A timestamp
(`2027-03-01T12:00:00Z`) is that moment. UTC, as every header date. An expired record is never
deleted by it: `memory list --expired` shows it and `memory review` proposes what to do.

Standard library only: the recall fast path reads it.
"""

from __future__ import annotations

import datetime as dt
import re

from ..errors import InvalidInput, Option

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_RELATIVE = re.compile(r"([0-9]{1,6})([dw])")
NEVER = "never"


def now() -> dt.datetime:
    """The moment expiry is judged at (UTC); tests replace it."""
    return dt.datetime.now(dt.UTC)


def today() -> dt.date:
    return now().date()


def moment(expires: str) -> dt.datetime:
    """When a record with this `expires` value stops counting: a date's midnight (UTC), or the time."""
    if len(expires) == 10:
        day = dt.date.fromisoformat(expires)
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    found = dt.datetime.fromisoformat(expires.replace("Z", "+00:00"))
    return found if found.tzinfo is not None else found.replace(tzinfo=dt.UTC)


def moment_ns(expires: str | None) -> int | None:
    """moment() in nanoseconds since the epoch (what the index orders by); None: never."""
    if expires is None:
        return None
    return (moment(expires) - _EPOCH) // dt.timedelta(microseconds=1) * 1000


def now_ns() -> int:
    return (now() - _EPOCH) // dt.timedelta(microseconds=1) * 1000


def is_expired(expires: str | None, at: dt.datetime | None = None) -> bool:
    """Whether a record with this `expires` value is out of recall at `at` (default: now)."""
    return expires is not None and (at or now()) >= moment(expires)


def parse_expires(text: str, start: dt.date | None = None) -> str | None:
    """What a person gives as --expires, as the header keeps it: a date YYYY-MM-DD, a UTC time
    YYYY-MM-DDTHH:MM:SSZ, days or weeks from today (`30d`, `2w`: the date that many days on), or
    `never` (None: no expiry). Anything else is refused with one line (InvalidInput, exit 6)."""
    value = text.strip()
    if value.lower() == NEVER:
        return None
    relative = _RELATIVE.fullmatch(value.lower())
    try:
        if relative is not None:
            count = int(relative.group(1)) * (7 if relative.group(2) == "w" else 1)
            if count < 1:
                raise ValueError
            return ((start or today()) + dt.timedelta(days=count)).isoformat()
        if len(value) == 10:
            return dt.date.fromisoformat(value).isoformat()
        if "T" in value and len(value) >= 19:
            found = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
            if found.tzinfo is None:
                found = found.replace(tzinfo=dt.UTC)
            return found.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError):
        pass
    raise InvalidInput(
        "invalid ",
        Option("expires"),
        f" value {value[:40]!r}: give a date (YYYY-MM-DD), days or weeks from today (30d, 2w) or never",
    )
