"""Choosing which records a query needs: by a model reading the manifest, or lexically.

The model sees manifest lines only, never bodies, and its answer is checked name by name against
the manifest: anything else (another user's record, a path, an invented file) is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..errors import ModelError
from ..models import ModelSettings, complete_json
from .manifest import ManifestLine

SYSTEM_PROMPT = """You choose which of a user's memory records are relevant to their current request.
You are given a manifest: one line per record, "[type] filename (modified date) description".
Reply with JSON only, exactly: {"selected": ["<filename from the manifest>", ...]}
List at most LIMIT filenames, most relevant first, copied exactly from the manifest.
Reply {"selected": []} when no record is clearly relevant. Never invent filenames."""


class Selection(NamedTuple):
    names: list[str]
    dropped: list[str]  # what the model named that is not in the manifest


def model_messages(query: str, manifest: Sequence[ManifestLine], limit: int) -> list[dict[str, str]]:
    listing = "\n".join(line.render() for line in manifest)
    return [
        {"role": "system", "content": SYSTEM_PROMPT.replace("LIMIT", str(limit))},
        {"role": "user", "content": f"Request: {query}\n\nManifest:\n{listing}"},
    ]


def validate_selection(reply: dict[str, Any], manifest: Sequence[ManifestLine], limit: int) -> Selection:
    """Keep only exact manifest filenames (or bare names), de-duplicated, at most `limit`."""
    selected = reply.get("selected")
    if not isinstance(selected, list):
        raise ModelError('the recall model reply has no "selected" list')
    known = {line.filename: line.name for line in manifest}
    known.update({line.name: line.name for line in manifest})
    names: list[str] = []
    dropped: list[str] = []
    for item in selected:
        name = known.get(item.strip()) if isinstance(item, str) else None
        if name is None:
            dropped.append(item if isinstance(item, str) else repr(item))
        elif name not in names:
            names.append(name)
    if selected and not names:
        raise ModelError("the recall model named no record from the manifest")
    return Selection(names[:limit], dropped)


def select_with_model(
    settings: ModelSettings, query: str, manifest: Sequence[ManifestLine], limit: int
) -> Selection:
    reply = complete_json(settings, model_messages(query, manifest, limit))
    return validate_selection(reply, manifest, limit)
