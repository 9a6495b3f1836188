"""Timestamps as aibuddy writes them: UTC, second precision, ISO 8601 with a Z."""

from __future__ import annotations

import datetime as dt


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
