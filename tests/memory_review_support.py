"""Shared by the tests of test_memory_review and those that build on them."""

from __future__ import annotations

NOW = "2027-06-01T00:00:00Z"


def record(name: str, description: str, kind: str, updated: str, body: str = "", **header: object) -> str:
    extra = "".join(f"{key}: {value}\n" for key, value in header.items())
    return (
        f"---\nname: {name}\ndescription: {description}\ntype: {kind}\ncreated: {updated}\n"
        f"updated: {updated}\n{extra}---\n{body}"
    )
