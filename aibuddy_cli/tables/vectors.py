"""Semantic table search: the text of vectorized columns embedded through the `embedding` model
role (litellm.embedding), cached in the tables index by the hash of the model and the text, and
rows ranked by cosine similarity to one or more reference texts (summed over the references).

Embeddings are made when a column is vectorized and, for rows added since, at the next search.
A model failure is a ModelError (an embedding with NaN or Infinity too, which is never cached):
the caller falls back to lexical search with a warning.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ModelError
from .index import IndexedTable

if TYPE_CHECKING:
    from ..models.calls import ModelSettings
    from .state import TablesState

BATCH = 64  # texts one embedding call carries


def cell_text(value: Any) -> str | None:
    """What a vectorized cell's embedding is made of: text as is, a list's items joined."""
    if value is None:
        return None
    if isinstance(value, list):
        value = ", ".join(str(item) for item in value)
    text = str(value).strip()
    return text or None


def _digest(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


def vectors(state: TablesState, settings: ModelSettings, texts: Iterable[str]) -> dict[str, list[float]]:
    """Each text's embedding: from the cache, the others made in batches and cached."""
    from ..models.calls import embed

    wanted = {text: _digest(str(settings.model), text) for text in dict.fromkeys(texts)}
    stored = state.index.stored_vectors(list(wanted.values()))
    missing = [text for text, digest in wanted.items() if digest not in stored]
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        made = dict(zip((wanted[t] for t in batch), embed(settings, batch), strict=True))
        if any(not math.isfinite(x) for vector in made.values() for x in array("f", vector)):
            # NaN, or past float32 as the index stores it: every similarity would be NaN
            raise ModelError(f"{settings.role} model returned an embedding with NaN or Infinity")
        state.index.store_vectors(made)
        stored.update(made)
    return {text: stored[digest] for text, digest in wanted.items()}


def vectorized_cells(state: TablesState, table: IndexedTable) -> list[tuple[int, list[str]]]:
    """(key, texts of the row's vectorized cells) for every row with any."""
    columns = [c for c in table.schema.columns if c.vectorized]
    if not columns:
        return []
    names = [table.schema.key, *(c.name for c in columns)]
    selected = ", ".join(f'"{n}"' for n in names)
    cells = []
    for row in state.index.query(f"SELECT {selected} FROM {table.rows}"):
        decoded = table.decode(row, names)
        texts = [t for c in columns if (t := cell_text(decoded[c.name])) is not None]
        if texts:
            cells.append((decoded[table.schema.key], texts))
    return cells


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def rank(
    state: TablesState, settings: ModelSettings, references: Sequence[str], table: IndexedTable, k: int
) -> list[tuple[float, int]]:
    """(score, key) of the k rows most similar to the references: per reference the best of the
    row's vectorized cells, summed over the references (a summed cosine distance, inverted)."""
    cells = vectorized_cells(state, table)
    if not cells:
        return []
    known = vectors(state, settings, [*references, *(t for _, texts in cells for t in texts)])
    scored = [
        (sum(max(cosine(known[ref], known[text]) for text in texts) for ref in references), key)
        for key, texts in cells
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return scored[:k]
