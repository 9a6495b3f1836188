"""A meaning signal for recall that works offline: WordLlama's static token embeddings (256
dimensions, shipped inside its wheel: `pip install 'aibuddy-cli[semantic]'`), switched on with
`[recall] semantic = true`.

A text's vector is the mean of its tokens' vectors, normalised; a record's is kept in the derived
index beside its words, a query's is made when it is asked, and cosine similarity ranks the
records by meaning: "Does she have pets?" finds "walked her two dogs by the river", with no word
in common. The ranking is fused with the lexical one by reciprocal rank (memory/index.py).

The wheel's files are read here with numpy and `tokenizers` directly, not through the package's
own API, whose import configures the root logger and costs a quarter of a second. The model is
loaded once a process, on the first recall that needs it (about 0.15 s), so no other command pays
for it. The vocabulary is English: a question mostly in Chinese or Japanese keeps the lexical
ranking alone (it would only add noise).
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..text import is_cjk

DIMENSIONS = 256
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
CJK_SHARE = 0.3  # a query with more of its letters CJK than this is ranked by its words alone


class SemanticUnavailable(Exception):
    """The model cannot be loaded (the extra is not installed, its files are not where expected)."""


def mostly_cjk(text: str) -> bool:
    letters = [char for char in text if char.isalpha()]
    return bool(letters) and sum(map(is_cjk, letters)) / len(letters) > CJK_SHARE


class Embedder:
    """WordLlama's token table and tokenizer, loaded on first use."""

    def __init__(self) -> None:
        self._loaded: tuple[Any, Any] | None = None
        self._guard = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._guard:
            if self._loaded is None:
                self._loaded = _load_model()
            return self._loaded

    def embed(self, texts: Sequence[str]) -> Any:
        """A float32 matrix: one normalised row per text (zeros for a text with no token)."""
        import numpy as np

        table, tokenizer = self._load()
        rows = np.zeros((len(texts), DIMENSIONS), np.float32)
        for index, encoding in enumerate(tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if encoding.ids:
                vector = table[np.clip(encoding.ids, 0, len(table) - 1)].astype(np.float32).mean(axis=0)
                norm = float(np.linalg.norm(vector))
                rows[index] = vector / norm if norm else vector
        return rows


def _load_model() -> tuple[Any, Any]:
    from importlib.util import find_spec

    spec = find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise SemanticUnavailable(
            "[recall] semantic needs the wordllama package: pip install 'aibuddy-cli[semantic]'"
        )
    try:
        import numpy as np
        from tokenizers import Tokenizer
    except ImportError as error:
        raise SemanticUnavailable(f"[recall] semantic needs numpy and tokenizers ({error})") from None
    root = Path(spec.origin).parent
    weights, config = root.joinpath(*_WEIGHTS), root.joinpath(*_TOKENIZER)
    try:
        with weights.open("rb") as handle:
            size = struct.unpack("<Q", handle.read(8))[0]
            header = json.loads(handle.read(size))["embedding.weight"]
        table = np.memmap(
            weights,
            dtype="<f2",
            mode="r",
            offset=8 + size + header["data_offsets"][0],
            shape=tuple(header["shape"]),
        )
        tokenizer = Tokenizer.from_file(str(config))
    except (OSError, ValueError, KeyError) as error:
        raise SemanticUnavailable(f"the wordllama model could not be read ({error})") from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return table, tokenizer


_SHARED: Embedder | None = None


def shared() -> Embedder:
    """The process's one embedder (the model is loaded once, whichever session asks)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Embedder()
    return _SHARED
