"""Choosing which records a query needs: by a model reading the manifest, or lexically.

The model sees manifest lines only, never bodies, and its answer is checked name by name against
the manifest: anything else (another user's record, a path, an invented file) is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..errors import InvalidInput, ModelError
from ..models.calls import ModelSettings, complete_json
from ..names import validate_record_name
from ..text import shorten
from .manifest import ManifestLine

SYSTEM_PROMPT = """You choose which of a user's memory records are relevant to their current request.
You are given a manifest: one line per record, "[type] filename (modified date) description".
Reply with JSON only, exactly: {"selected": ["<filename from the manifest>", ...]}
List at most LIMIT filenames, most relevant first, copied exactly from the manifest.
Reply {"selected": []} when no record is clearly relevant. Never invent filenames."""


MAX_DROPPED = 20


class Selection(NamedTuple):
    names: list[str]
    dropped: list[str]  # what the model named that is not in the manifest, the first MAX_DROPPED
    dropped_count: int = 0  # how many names were dropped in all


def model_messages(query: str, manifest: Sequence[ManifestLine], limit: int) -> list[dict[str, str]]:
    listing = "\n".join(line.render() for line in manifest)
    return [
        {"role": "system", "content": SYSTEM_PROMPT.replace("LIMIT", str(limit))},
        {"role": "user", "content": f"Request: {query}\n\nManifest:\n{listing}"},
    ]


def _selected_name(item: object) -> str | None:
    """The record name a selected item gives (`x.md` or `x`, spaces around it allowed), if it is a
    valid record name: names with control characters or path parts never pass."""
    if not isinstance(item, str):
        return None
    name = item.strip(" ").removesuffix(".md")
    try:
        return validate_record_name(name)
    except InvalidInput:
        return None


def validate_selection(reply: dict[str, Any], manifest: Sequence[ManifestLine], limit: int) -> Selection:
    """Keep only exact manifest filenames (or bare names), de-duplicated, at most `limit`."""
    selected = reply.get("selected")
    if not isinstance(selected, list):
        raise ModelError('the recall model reply has no "selected" list')
    known = {line.name for line in manifest}
    names: list[str] = []
    dropped: list[str] = []
    dropped_count = 0
    for item in selected:
        name = _selected_name(item)
        if name is None or name not in known:
            dropped_count += 1
            if len(dropped) < MAX_DROPPED:  # echoed in --json: a flood of inventions stays bounded
                text = item if isinstance(item, str) else repr(item)
                dropped.append(shorten(text, 200))
        elif name not in names:
            names.append(name)
    if selected and not names:
        raise ModelError("the recall model named no record from the manifest")
    return Selection(names[:limit], dropped, dropped_count)


def select_with_model(
    settings: ModelSettings, query: str, manifest: Sequence[ManifestLine], limit: int
) -> Selection:
    reply = complete_json(settings, model_messages(query, manifest, limit))
    return validate_selection(reply, manifest, limit)
