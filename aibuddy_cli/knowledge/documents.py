"""Where knowledge documents live, what their sidecars hold, and what may be imported.

A document is a body `<id>.md`, stored byte for byte, and a sidecar `<id>.meta.json` beside it
holding everything derived (title, owner, scope, sha256, outline, summary). Its status is the
folder it sits in: `pending/` until reviewed, `ready/` once published.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import NamedTuple, TypedDict

from ..errors import InvalidInput
from ..jsonvalues import to_json
from ..vault import validate_user_name
from .outline import Section

SCOPES = ("system", "personal")
STATUSES = ("pending", "ready")
BODY_SUFFIX = ".md"
SIDECAR_SUFFIX = ".meta.json"
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
MAX_DOC_ID_CHARS = 80
# In UTF-8, so that the longest file name of a document, `<id>.meta.json`, stays under the 255
# bytes file systems allow (80 CJK characters are 240 bytes).
MAX_DOC_ID_BYTES = 240

# Content signatures of formats people try to import: refused with a hint to convert.
_MAGIC = (
    (b"%PDF", "a PDF"),
    (b"PK\x03\x04", "a ZIP container (DOCX, XLSX, ODT, …)"),
    (b"\xd0\xcf\x11\xe0", "an old Office document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"{\\rtf", "an RTF document"),
    (b"%!PS", "a PostScript file"),
)


def _id_character(char: str) -> bool:
    """A letter or digit of any script, a combining mark (the vowel signs of Devanagari, Thai, …),
    '_' or '-'."""
    return char.isalnum() or char in "_-" or unicodedata.category(char)[0] == "M"


def validate_doc_id(doc_id: str) -> str:
    """A document id: lower-case letters of any script, digits, '-' or '_', beginning with a letter
    or digit, in NFC, at most 80 characters and 240 bytes of UTF-8. So it never holds '/', '..',
    a leading dot, white space or a control character, and works as a file name everywhere."""
    if (
        not doc_id
        or len(doc_id) > MAX_DOC_ID_CHARS
        or not doc_id[0].isalnum()
        or not all(map(_id_character, doc_id))
        or doc_id.lower() != doc_id
        or unicodedata.normalize("NFC", doc_id) != doc_id
        or len(doc_id.encode("utf-8")) > MAX_DOC_ID_BYTES
    ):
        raise InvalidInput(
            f"invalid document id {doc_id!r}: use 1-{MAX_DOC_ID_CHARS} lower-case letters (any script), "
            "digits, '-' or '_', beginning with a letter or digit"
        )
    return doc_id


def normal_doc_id(text: str) -> str:
    """A typed document id as it is stored: NFC, so an id typed (or pasted from a file name) in
    decomposed form names the same document."""
    return unicodedata.normalize("NFC", text)


def fit_doc_id(base: str, suffix: str = "") -> str:
    """base, shortened to leave room for suffix within the id limits (characters and bytes)."""
    room_chars = MAX_DOC_ID_CHARS - len(suffix)
    room_bytes = MAX_DOC_ID_BYTES - len(suffix.encode("utf-8"))
    fitted = base[:room_chars]
    while len(fitted.encode("utf-8")) > room_bytes:
        fitted = fitted[:-1]
    return fitted.rstrip("-_") + suffix


def split_citation(citation: str) -> tuple[str, str] | None:
    """DOC and ANCHOR of a citation `DOC#ANCHOR` as aibuddy prints it (DOC as `kb read` takes it:
    ID, system/ID, personal/ID or personal/OWNER/ID), split at the first '#'. None unless both
    parts are non-empty: `#x` and `doc#` are no citations. The anchor is kept as written, so it
    may begin with '-' or hold any character."""
    doc, _, anchor = citation.partition("#")
    return (doc, anchor) if doc and anchor else None


def doc_id_from_name(stem: str, data: bytes) -> str:
    """A document id from a file name: its letters and digits (any script) in lower case, every
    other run of characters as one '-'; NFC first, so `café.md` is `café` however the file system
    spells it. Lower-cased, not case-folded: folding would change letters (ß → ss). '_' becomes
    '-' as before, so ASCII names keep the ids they always had. A name with no letter or digit
    gets an id from the content hash."""
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", stem).lower())
    slug = "".join(char if _id_character(char) and char != "_" else "-" for char in text)
    slug = fit_doc_id(re.sub(r"-{2,}", "-", slug).strip("-_"))
    while slug and not slug[0].isalnum():  # a leading mark or '_'
        slug = slug[1:]
    try:
        return validate_doc_id(slug)
    except InvalidInput:
        return f"doc-{sha256(data)[:10]}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_importable(data: bytes, source: str) -> str:
    """The text of data if it is Markdown or UTF-8 text; InvalidInput saying how to fix it if not.

    Decided by content, not by file name: a PDF renamed to .md is still refused.
    """
    problem = refusal(data)
    if problem is not None:
        raise InvalidInput(f"{source}: {problem}")
    return data.decode("utf-8")


def refusal(data: bytes) -> str | None:
    """Why data cannot be imported as a document, or None if it can."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return f"larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return f"{kind}, not Markdown; convert it to Markdown first"
    if b"\x00" in data:
        return "a binary file, not Markdown; convert it to Markdown first"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text; convert it to UTF-8 Markdown first (e.g. with iconv)"
    return None


class DocRef(NamedTuple):
    """Which document: scope, owner (for personal documents), id; status is where it sits."""

    scope: str
    owner: str | None
    doc_id: str
    status: str

    @property
    def folder(self) -> str:
        if self.scope == "system":
            return f"knowledge/system/{self.status}"
        return f"knowledge/personal/{self.owner}/{self.status}"

    @property
    def body_key(self) -> str:
        return f"{self.folder}/{self.doc_id}{BODY_SUFFIX}"

    @property
    def sidecar_key(self) -> str:
        return f"{self.folder}/{self.doc_id}{SIDECAR_SUFFIX}"

    @property
    def qualified(self) -> str:
        """The unambiguous spelling: system/<id> or personal/<owner>/<id>."""
        if self.scope == "system":
            return f"system/{self.doc_id}"
        return f"personal/{self.owner}/{self.doc_id}"

    def moved(self, status: str) -> DocRef:
        return self._replace(status=status)

    @classmethod
    def parse(cls, spec: str, user: str, status: str = "ready") -> list[DocRef]:
        """The documents a reference can name for `user`, in `status`, in the order to look for
        them: `ID` is a system document or one of the user's own, `system/ID` a system one,
        `personal/ID` the user's own, `personal/OWNER/ID` one of OWNER's. The id is taken in NFC.
        The one parser of references; InvalidInput for a bad shape, owner or id."""
        parts = spec.split("/")
        parts[-1] = normal_doc_id(parts[-1])
        if len(parts) == 1:
            candidates = [("system", None, parts[0]), ("personal", user, parts[0])]
        elif len(parts) == 2 and parts[0] in SCOPES:
            candidates = [(parts[0], None if parts[0] == "system" else user, parts[1])]
        elif len(parts) == 3 and parts[0] == "personal":
            candidates = [("personal", validate_user_name(parts[1]), parts[2])]
        else:
            raise InvalidInput(f"invalid document reference {spec!r}: use ID, system/ID or personal/ID")
        validate_doc_id(parts[-1])
        return [cls(scope, owner, doc_id, status) for scope, owner, doc_id in candidates]


def doc_folders(users: list[str]) -> list[tuple[str, str | None, str, str]]:
    """(scope, owner, status, folder key) of every document folder for the given users."""
    folders: list[tuple[str, str | None, str, str]] = [
        ("system", None, status, f"knowledge/system/{status}") for status in STATUSES
    ]
    for user in users:
        validate_user_name(user)
        folders += [("personal", user, s, f"knowledge/personal/{user}/{s}") for s in STATUSES]
    return folders


class MetaJson(TypedDict):
    """A sidecar, as its file holds it."""

    title: str
    owner: str | None
    scope: str
    sha256: str
    imported_at: str
    source: str | None
    outline: list[Section]  # (a result type in a JSON declaration: its JSON)
    summary: str | None
    summary_sha256: str | None
    reviewed_by: str | None
    reviewed_at: str | None


class Meta(NamedTuple):
    """The sidecar: what aibuddy derived from a body and knows about its review."""

    title: str
    owner: str | None
    scope: str
    sha256: str
    imported_at: str
    source: str | None
    outline: list[Section]
    summary: str | None = None
    summary_sha256: str | None = None
    reviewed_by: str | None = None
    reviewed_at: str | None = None

    def to_json(self) -> MetaJson:
        return {
            "title": self.title,
            "owner": self.owner,
            "scope": self.scope,
            "sha256": self.sha256,
            "imported_at": self.imported_at,
            "source": self.source,
            "outline": [to_json(section) for section in self.outline],
            "summary": self.summary,
            "summary_sha256": self.summary_sha256,
            "reviewed_by": self.reviewed_by,
            "reviewed_at": self.reviewed_at,
        }

    def encode(self) -> bytes:
        return (json.dumps(self.to_json(), ensure_ascii=False, indent=2) + "\n").encode("utf-8")

    @classmethod
    def decode(cls, data: bytes, source: str) -> Meta:
        try:
            raw = json.loads(data)
            raw["outline"] = [Section(**section) for section in raw["outline"]]
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise InvalidInput(f"{source}: unreadable sidecar ({exc})") from None
