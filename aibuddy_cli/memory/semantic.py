"""Meaning beside words for recall: what a record and a question are about, as vectors, so "Does
she have pets?" finds "walked her two dogs by the river" with no word in common.

Two models give the vectors (`Meaning`):

- `StaticModel`, on by default (`[recall] semantic = true`): WordLlama's static token embeddings
  (the 256-dimension table of its l2_supercat model, shipped inside the wordllama wheel, a base
  dependency: no download). A text's vector is the normalised sum of its pieces' rows. The wheel's
  files are read here directly, never through the package's API (its import configures the root
  logger and costs a quarter of a second) nor through `tokenizers` or numpy (80 ms each to load):
  the weights are memory-mapped and a row is read only for a piece a text holds, and the text is cut
  into the vocabulary's pieces by the longest known piece at each place (`pieces`), with SentencePiece's
  byte fallback for a character the vocabulary lacks. The vocabulary (32,000 pieces) is looked up
  in a table of the derived index (memory/index.py), so a question costs one query, not a
  1.8 MB JSON parse. Its vocabulary is English (on MADial-Bench ZH the model made Chinese recall
  worse): a question mostly in Chinese or Japanese is ranked instead by the characters it shares
  with the records (ngrams.py), which needs no model.
- `EmbeddingModel`: the `embedding` model role through litellm (`[models] embedding`), which
  replaces the static vectors when configured; it handles Chinese too.

`code(vector)` is the vector's signs as bits: the index shortlists records by how many signs they
share with the question (a popcount, fast in pure Python) and scores only the shortlist exactly.
A process that asks again (a server) keeps the codes in memory (`SignCodes`, numpy): the popcount
over 10,000 records then costs about 0.3 ms instead of 10 ms, the shortlist the same records.
"""

from __future__ import annotations

import heapq
import json
import math
import mmap
import struct
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..text import is_cjk

if TYPE_CHECKING:
    import numpy as np

    from ..models.calls import ModelSettings

DIMENSIONS = 256
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
CJK_SHARE = 0.3  # a query with more of its letters CJK than this is mostly CJK (ngrams.py ranks it)
_LONGEST_PIECE = 16  # pieces of the vocabulary tried at each place, longest first
_SPACE = "\u2581"  # SentencePiece's mark of a word's start
BULK = 16  # more texts than this at once are embedded through numpy
WHOLE_TABLE = 200  # more texts than this: the whole table made float32 first, not each text's rows
WORDS_KEPT = 100_000  # words whose pieces a process keeps (a server embeds new records all day)

Vector = list[float]
Known = Callable[[Iterable[str]], dict[str, int]]  # pieces -> those in the vocabulary, with their ids


class SemanticUnavailable(Exception):
    """The model cannot be loaded (the package is not installed, its files are not where expected)."""


class Meaning(Protocol):
    """What recall needs of a model of meaning."""

    key: str  # names the model and how it embeds: vectors of another key are never compared
    signal: str  # what `--json` calls it beside the words: "meaning" or "embedding"
    floor: float  # the cosine from which a record matches by meaning
    reads_cjk: bool  # whether it embeds Chinese and Japanese (else ngrams.py ranks such a question)

    def vocabulary(self) -> tuple[str, Callable[[], dict[str, int]]] | None:
        """(identity, loader) of a vocabulary the index may keep for it (StaticModel), else None."""
        ...

    def embed(
        self, texts: Sequence[str], known: Known | None = None, *, records: bool = False
    ) -> list[Vector]:
        """One normalised vector per text; known: the index's lookup of the vocabulary; records:
        the texts are records (not a question), embedded the same way whatever their number."""
        ...


def mostly_cjk(text: str) -> bool:
    letters = [char for char in text if char.isalpha()]
    return bool(letters) and sum(map(is_cjk, letters)) / len(letters) > CJK_SHARE


def normalised(vector: Sequence[float]) -> Vector:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def code(vector: Sequence[float]) -> bytes:
    """The vector's signs as bits, little-endian (bit i set: component i is positive)."""
    bits = 0
    for place, value in enumerate(vector):
        if value > 0:
            bits |= 1 << place
    return bits.to_bytes((len(vector) + 7) // 8, "little")


def pack(vector: Sequence[float]) -> bytes:
    """A vector as the index keeps it: float32, little-endian."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> Vector:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


class _Rows:
    """The vectors of a server's SignCodes tables, one after another: a save's tables add the
    changed records' at the end (room is made a quarter at a time), instead of each copying all."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.array = vectors
        self.used = len(vectors)
        self._guard = threading.Lock()

    def append(self, vectors: np.ndarray) -> np.ndarray:
        """Keeps vectors; returns their rows in `array` (which is a larger one when it had no room)."""
        import numpy as np

        with self._guard:
            if self.used + len(vectors) > len(self.array) or not self.array.flags.writeable:
                room = self.used + len(vectors) + self.used // 4 + 64
                grown = np.empty((room, self.array.shape[1]), dtype=self.array.dtype)
                grown[: self.used] = self.array[: self.used]
                self.array = grown
            self.array[self.used : self.used + len(vectors)] = vectors
            self.used += len(vectors)
            return np.arange(self.used - len(vectors), self.used)


class SignCodes:
    """The records' sign codes (and, up to VECTOR_BYTES, their vectors) as numpy tables, for a
    process that ranks again and again: the shortlist of index.rank_meaning (the records sharing
    the most signs with the question, ties to the lower id: the very records heapq.nsmallest over
    (distance, id) picks), and their cosines, the same numbers as from the index's vectors."""

    VECTOR_BYTES = 48 << 20  # vectors kept in memory up to this size (12,000 records of the
    # static model's 256 dimensions is 12 MB); beyond it the shortlist's are read from the index

    def __init__(self, rows: Sequence[tuple[int, bytes, bytes | None]], generation: object = None) -> None:
        """rows: (id, code, vector or None)."""
        import numpy as np

        rows = sorted(rows, key=lambda row: row[0])
        self.generation = generation
        width = max((len(blob) for _, blob, _ in rows), default=8)
        self.width = -(-width // 8) * 8  # padded to whole 64-bit words (zero bits share nothing)
        self.ids = np.fromiter((key for key, _, _ in rows), dtype=np.int64, count=len(rows))
        packed = b"".join(blob.ljust(self.width, b"\0") for _, blob, _ in rows)
        words = np.frombuffer(packed, dtype="<u8").reshape(len(rows), self.width // 8)
        self.columns = np.ascontiguousarray(words.T)  # one row per 64 bits: each counted at once
        self.vectors: np.ndarray | None = None  # (rows of them may be of records gone since: `rows`)
        self.rows: np.ndarray | None = None  # each record's row in vectors (None: the same place)
        self._store: _Rows | None = None
        if rows and all(vector is not None for _, _, vector in rows):
            table = np.frombuffer(b"".join(vector for _, _, vector in rows if vector), dtype="<f4")
            if len(table) % len(rows) == 0:
                self.vectors = table.reshape(len(rows), -1)

    def changed(
        self, rows: Sequence[tuple[int, bytes, bytes | None]], ids: Sequence[int], generation: object
    ) -> SignCodes:
        """A new table: this one with the records ids read again (rows: those of them that have
        codes now, as for __init__); this one stays as it was for the threads reading it."""
        import numpy as np

        changed = SignCodes(rows)
        kept = ~np.isin(self.ids, np.asarray(ids, dtype=np.int64))
        table = SignCodes([])
        table.generation = generation
        table.width = max(self.width, changed.width)
        ids_ = np.concatenate([self.ids[kept], changed.ids])
        # (A new record's id is the highest: then the order holds, and nothing is copied again.)
        order = slice(None) if bool(np.all(ids_[1:] > ids_[:-1])) else np.argsort(ids_, kind="stable")
        table.ids = ids_[order]

        def widened(columns: np.ndarray) -> np.ndarray:
            return np.pad(columns, ((0, table.width // 8 - len(columns)), (0, 0)))

        columns = np.concatenate([widened(self.columns[:, kept]), widened(changed.columns)], axis=1)
        table.columns = np.ascontiguousarray(columns[:, order])  # type: ignore[index]
        table.vectors, table.rows, table._store = None, None, None
        if self.vectors is None or (len(changed.ids) and changed.vectors is None):
            return table
        if changed.vectors is not None and changed.vectors.shape[1] != self.vectors.shape[1]:
            return table
        if self._store is None:
            self._store = _Rows(self.vectors)
        held = self.rows if self.rows is not None else np.arange(len(self.ids))
        fresh = self._store.append(changed.vectors) if changed.vectors is not None else np.zeros(0, np.int64)
        table.vectors, table._store = self._store.array, self._store
        table.rows = np.concatenate([held[kept], fresh])[order]  # type: ignore[index]
        if self._store.used > 2 * len(table.ids) + 1024:  # mostly records gone since: copied anew
            table.vectors, table.rows, table._store = table.vectors[table.rows], None, None
        return table

    def shortlist(self, question: bytes, size: int, among: Sequence[int] | None = None) -> list[int]:
        """The ids of the `size` records (of those in among, when given) whose codes differ from
        question's in the fewest bits, fewest first, then by id."""
        import numpy as np

        bits = np.frombuffer(question.ljust(self.width, b"\0")[: self.width], dtype="<u8")
        distances = np.zeros(len(self.ids), dtype=np.uint16)
        for column, word in zip(self.columns, bits, strict=True):
            distances += np.bitwise_count(column ^ word)
        ids = self.ids
        if among is not None:
            inside = np.isin(ids, np.asarray(among, dtype=np.int64))
            distances, ids = distances[inside], ids[inside]
        if len(ids) > size:  # those within the size-th smallest distance (ties all kept)
            near = distances <= np.partition(distances, size - 1)[size - 1]
            distances, ids = distances[near], ids[near]
        order = np.lexsort((ids, distances))[:size]  # fewest differing bits, then by id
        return [int(key) for key in ids[order]]

    def cosines(self, question: Sequence[float], ids: Sequence[int]) -> list[float] | None:
        """question's cosine with the vector of each of ids (all kept), or None when the vectors
        are not kept."""
        import numpy as np

        if self.vectors is None:
            return None
        places = np.searchsorted(self.ids, np.asarray(ids, dtype=np.int64))
        if self.rows is not None:
            places = self.rows[places]
        return [float(score) for score in self.vectors[places].astype(np.float64) @ np.asarray(question)]


_BITS_SET = bytes(bin(byte).count("1") for byte in range(256))


def columns(codes: Sequence[bytes]) -> bytes:
    """Codes of one width as `nearest` reads them: their first bytes, then their second bytes..."""
    joined = b"".join(codes)
    width = len(codes[0]) if codes else 0
    return b"".join(joined[place::width] for place in range(width))


def nearest(question: bytes, ids: Sequence[int], codes: bytes, size: int) -> list[int]:
    """SignCodes.shortlist without numpy (whose import costs a one-shot command more than this):
    the ids of the `size` codes differing from question in the fewest bits, fewest first, then by
    id; ids ascending, codes as `columns` lays them out (one code of len(question) bytes per id).
    Each step is one operation over a column of all the records (a byte table that counts the
    bits differing from the question's byte, a sum of columns as large integers), never a Python
    step per record: 100,000 records in about 8 ms."""
    width, count = len(question), len(ids)
    if not count or len(codes) != width * count:
        return []
    distances = 0  # each record's differing bits in a 16-bit field (codes up to 8 KB)
    for start in range(0, width, 31):  # 31 columns of 0 to 8 sum to at most 248: a byte each
        total = 0
        for place in range(start, min(start + 31, width)):
            differs = bytes(_BITS_SET[byte ^ question[place]] for byte in range(256))
            total += int.from_bytes(codes[place * count : (place + 1) * count].translate(differs), "little")
        wide = bytearray(2 * count)
        wide[0::2] = total.to_bytes(count, "little")
        distances += int.from_bytes(wide, "little")
    fields = distances.to_bytes(2 * count, "little")
    low, high = fields[0::2], fields[1::2]
    if count <= size or high.count(0) != count:  # (a distance of 256 or more: all of them compared)
        from array import array

        each = array("H", fields)
        if sys.byteorder == "big":
            each.byteswap()
        return [key for _, key in heapq.nsmallest(size, zip(each, ids, strict=True))]
    below = 0  # the records nearer than `edge`, which is the size-th nearest's distance
    for edge in range(256):
        at = low.count(edge)
        if below + at >= size:
            break
        below += at
    chosen: list[int] = []
    for distance in range(edge + 1):
        place = low.find(distance)
        while place >= 0 and len(chosen) < size:
            chosen.append(ids[place])
            place = low.find(distance, place + 1)
    return chosen


def cosines(question: Sequence[float], blobs: Sequence[bytes]) -> list[float]:
    """question's cosine with each packed vector (numpy: for a process that has it loaded)."""
    import numpy as np

    if not blobs:
        return []
    table = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    return [float(score) for score in table.astype(np.float64) @ np.asarray(question, dtype=np.float64)]


def pieces(text: str, known: Known) -> list[int]:
    """The vocabulary ids of text: each whitespace-separated word, marked as a word's start, cut
    into the longest known piece at each place; a character no piece covers as its UTF-8 bytes
    (`<0xE5>`, SentencePiece's byte fallback). known(candidates) -> the known ones, with ids."""
    words = [_SPACE + word for word in text.split()]
    candidates = {
        word[start:end]
        for word in words
        for start in range(len(word))
        for end in range(start + 1, min(len(word), start + _LONGEST_PIECE) + 1)
    }
    ids = known(candidates)
    found: list[int] = []
    for word in words:
        start = 0
        while start < len(word):
            for end in range(min(len(word), start + _LONGEST_PIECE), start, -1):
                piece = ids.get(word[start:end])
                if piece is not None:
                    found.append(piece)
                    start = end
                    break
            else:
                byte_ids = known(f"<0x{byte:02X}>" for byte in word[start].encode("utf-8"))
                found.extend(byte_ids.values())
                start += 1
    return found


class StaticModel:
    """WordLlama's token table (memory-mapped) and vocabulary, loaded on first use."""

    key = "wordllama-l2_supercat-256"
    signal = "meaning"
    reads_cjk = False  # its vocabulary is English
    # A record counts as a match by meaning from this cosine on (recall's rule: no body without a
    # match): unrelated sentences score about 0 (-0.1 to 0.15), one on the question's topic 0.2
    # and more; and only from half the best record's cosine (index.MEANING_SHARE).
    floor = 0.15

    def __init__(self, root: Path | None = None) -> None:
        self._root = root
        self._table: tuple[mmap.mmap, int, int] | None = None  # (map, offset of row 0, rows)
        self._vocab: dict[str, int] | None = None  # kept once read: a server embeds all day
        self._words: dict[str, list[int]] = {}  # a word's pieces, cut once per process
        self._guard = threading.Lock()

    def root(self) -> Path:
        if self._root is None:
            from importlib.util import find_spec

            spec = find_spec("wordllama")
            if spec is None or spec.origin is None:
                raise SemanticUnavailable("the meaning signal needs the wordllama package")
            self._root = Path(spec.origin).parent
        return self._root

    def identity(self) -> str:
        """What changes when the package's files do (a reinstall of another version)."""
        try:
            stat = self.root().joinpath(*_WEIGHTS).stat()
        except OSError as error:
            raise SemanticUnavailable(f"the wordllama model could not be read ({error})") from None
        return f"{self.key}:{stat.st_size}:{stat.st_mtime_ns}"

    def vocabulary(self) -> tuple[str, Callable[[], dict[str, int]]]:
        return self.identity(), self.vocab

    def vocab(self) -> dict[str, int]:
        """Every piece of the vocabulary with its id (a 1.8 MB JSON, 90 ms to read: read only to
        fill the index's table, to embed many records, or when no index is at hand; then kept, 4 MB)."""
        with self._guard:
            if self._vocab is None:
                try:
                    with self.root().joinpath(*_TOKENIZER).open(encoding="utf-8") as handle:
                        found = json.load(handle)["model"]["vocab"]
                except (OSError, ValueError, KeyError, TypeError) as error:
                    raise SemanticUnavailable(
                        f"the wordllama vocabulary could not be read ({error})"
                    ) from None
                self._vocab = {str(piece): int(index) for piece, index in found.items()}
            return self._vocab

    def _load(self) -> tuple[mmap.mmap, int, int]:
        with self._guard:
            if self._table is None:
                path = self.root().joinpath(*_WEIGHTS)
                try:
                    with path.open("rb") as handle:
                        size = struct.unpack("<Q", handle.read(8))[0]
                        header = json.loads(handle.read(size))["embedding.weight"]
                        rows, dims = header["shape"]
                        if header["dtype"] != "F16" or dims != DIMENSIONS:
                            raise ValueError(f"unexpected table {header['dtype']} {header['shape']}")
                        table = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError, KeyError, TypeError) as error:
                    raise SemanticUnavailable(f"the wordllama model could not be read ({error})") from None
                self._table = (table, 8 + size + header["data_offsets"][0], rows)
            return self._table

    def embed(
        self, texts: Sequence[str], known: Known | None = None, *, records: bool = False
    ) -> list[Vector]:
        """One normalised vector per text (zeros for a text with no piece). A question's few
        pieces are looked up with `known` and their rows summed in Python; many texts (the
        records, once) go through numpy (a wordllama dependency) and the whole vocabulary, and so
        do a few records where numpy is loaded already (a server: the records saved since the last
        question, the same vectors as in bulk, without a query per piece)."""
        if len(texts) > BULK or (records and "numpy" in sys.modules):
            return self._embed_many(texts)
        table, offset, rows = self._load()
        if known is None:
            known = self._in_vocabulary()
        row = struct.Struct(f"<{DIMENSIONS}e")
        vectors = []
        for text in texts:
            total = [0.0] * DIMENSIONS
            for piece in pieces(text, known):
                if 0 <= piece < rows:
                    total = list(map(float.__add__, total, row.unpack_from(table, offset + piece * row.size)))
            vectors.append(normalised(total))
        return vectors

    def _in_vocabulary(self) -> Known:
        """The lookup of pieces in the whole vocabulary (read, then kept: vocab)."""
        everything = self.vocab()
        return lambda candidates: {piece: everything[piece] for piece in candidates if piece in everything}

    def _embed_many(self, texts: Sequence[str]) -> list[Vector]:
        import numpy as np

        mapped, offset, rows = self._load()
        table = np.frombuffer(mapped, dtype="<f2", count=rows * DIMENSIONS, offset=offset).reshape(
            rows, DIMENSIONS
        )
        if len(texts) > WHOLE_TABLE:
            # Each row made float32 once (8 MB of the map, 32 MB here, 20 ms), not again for each
            # text that holds its piece: 10,000 records' vectors in half the time; a few texts
            # convert their own rows only. The very same numbers either way.
            table = table.astype(np.float32)
        known = self._in_vocabulary()
        words = self._words
        if len(words) > WORDS_KEPT:
            words.clear()
        vectors = []
        for text in texts:
            ids: list[int] = []
            for word in text.split():
                cut = words.get(word)
                if cut is None:
                    cut = words[word] = [piece for piece in pieces(word, known) if 0 <= piece < rows]
                ids += cut
            total = (
                table[ids].astype(np.float32, copy=False).sum(axis=0)
                if ids
                else np.zeros(DIMENSIONS, np.float32)
            )
            norm = float(np.linalg.norm(total))
            vectors.append((total / norm if norm else total).tolist())
        return vectors


class EmbeddingModel:
    """The `embedding` model role (litellm.embedding): a ModelError when it fails."""

    signal = "embedding"
    floor = 0.0  # models' scales differ: any positive cosine counts
    reads_cjk = True

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.key = f"embedding:{settings.model}"

    def vocabulary(self) -> None:
        return None

    def embed(
        self, texts: Sequence[str], known: Known | None = None, *, records: bool = False
    ) -> list[Vector]:
        from ..errors import ModelError
        from ..models.calls import embed

        vectors = []
        for start in range(0, len(texts), 64):
            for vector in embed(self.settings, texts[start : start + 64]):
                if not all(math.isfinite(x) for x in vector):
                    raise ModelError(f"{self.settings.role} model returned an embedding with NaN or Infinity")
                vectors.append(normalised(vector))
        return vectors


_SHARED: StaticModel | None = None


def shared() -> StaticModel:
    """The process's one static model (its table is mapped once, whichever session asks)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = StaticModel()
    return _SHARED
