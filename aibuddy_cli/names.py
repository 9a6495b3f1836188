"""The spelling of the names that become file and folder names: records, users (and vault ids).

A floor of its own, importing nothing of the package but its errors: the configuration checks
user names, the vault joins them into paths, records and tasks are named by them.
"""

from __future__ import annotations

import re

from .errors import InvalidInput

_RECORD_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Lower case only: on a case-insensitive file system "Alice" would open alice's folders.
_USER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def is_record_name(name: str) -> bool:
    return _RECORD_NAME.fullmatch(name) is not None


def validate_record_name(name: str) -> str:
    """A record name is its file stem: lowercase letters, digits, '-' and '_', at most 64."""
    if not _RECORD_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid record name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def is_user_name(name: str) -> bool:
    return _USER_NAME.fullmatch(name) is not None


def validate_user_name(user: str) -> str:
    if not is_user_name(user):
        raise InvalidInput(
            f"invalid user name {user!r}: use 1-64 lowercase letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    return user


def default_user_name(*candidates: str | None) -> str:
    """The user a new vault is made for: the first candidate (AIBUDDY_USER, the login name) that
    is a valid user name once lowercased, else "me"."""
    for candidate in candidates:
        if candidate and is_user_name(candidate.lower()):
            return candidate.lower()
    return "me"
