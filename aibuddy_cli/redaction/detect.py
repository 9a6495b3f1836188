"""Credential-shaped values: found, and redacted with a label saying what they were.

Nothing automatic stores a secret. Every automatic write (records and rows a model proposed,
rolling and compaction summaries, document summaries, imported transcripts, the decision logs)
goes through `redact` first; an explicit write by a person keeps the value and warns
(`warn_explicit`); `aibuddy scan` and the pre-commit hook list what `find` sees in a vault's files.
One detector serves them all, from two sources:

- `redaction_catalog`: provider keys by their documented shapes, from a maintained rule catalogue
  (Kingfisher's bundled Betterleaks and Veles rules, some 490 of them);
- `redaction_rules`: what has no shape of its own, read from its context in English and Chinese
  (a value after "password", 密码是, `DB_PASS=`, `Authorization: Basic`, a password in a URL),
  PEM private keys, also cut off, and JWTs; and, where the catalogue cannot be had, the common
  providers' prefixes.

Where both see a value, or two values overlap, the union of their spans is redacted, so no piece
of a value is left beside its label.

The labels are `[redacted: api key]`, `[redacted: private key]`, `[redacted: password]`,
`[redacted: token]`, `[redacted: jwt]`, `[redacted: secret]`. Callers learn the kinds and their
counts (`Counter`), never the values; `describe` words them for a log ("1 api key, 2 passwords").
Nothing here is compiled or loaded at start-up; the catalogue's scanner is built on the first
text that could hold a key (`_may_hold_key`), once per process.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, NamedTuple

from . import catalog as redaction_catalog
from . import rules as redaction_rules
from .rules import API_KEY, JWT, PASSWORD, PRIVATE_KEY, SECRET, TOKEN

KINDS = (API_KEY, PRIVATE_KEY, PASSWORD, TOKEN, JWT, SECRET)

REDACTED = "[redacted: {}]"
_MARK = redaction_rules.MARK


class Finding(NamedTuple):
    """One credential-shaped value in a text: its kind, where it is, and a safe hint."""

    kind: str
    start: int  # the value's span in the text (the keyword or "Bearer " stay outside it)
    end: int
    hint: str | None  # the provider's rule or prefix (`github-pat`, `sk-…`), never the value's own


@cache
def _key_alphabet_run() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9+=_.~-]{16,}")


def _may_hold_key(text: str) -> bool:
    """Whether a provider's key could be in text. Until the catalogue's scanner is built (0.3 s a
    process), a text without a run of 16 characters of a key's alphabet, a sixth of them letters,
    with a digit or both cases, does not pay for it: dates, times, numbers, paths and
    URLs are no such run (a password in a URL or after `curl -u` is `redaction_rules`'), and
    neither is a run of lowercase hexadecimal alone (a commit, a checksum, a UUID: no rule of
    the catalogue knows a key by such a shape without the provider's name beside it, which
    `redaction_rules` reads)."""
    if redaction_catalog.built():
        return True
    for match in _key_alphabet_run().finditer(text):
        run = match.group()
        if sum(c.isalpha() for c in run) * 6 < len(run) or _HEXADECIMAL.fullmatch(run):
            continue
        if any(c.isdigit() for c in run) or (any(c.isupper() for c in run) and any(c.islower() for c in run)):
            return True
    return False


_HEXADECIMAL = re.compile(r"[0-9a-f.:-]+")


def find(text: str) -> list[Finding]:
    """The credential-shaped values in text, in order, none overlapping another."""
    if not text:
        return []
    catalog = redaction_catalog.find(text) if _may_hold_key(text) else []
    # `user:password@localhost` in a manual, a client-side key under NEXT_PUBLIC_…: no secret
    stand_in = redaction_rules.placeholder
    public = redaction_rules.published_setting
    spans = [
        Finding(f.kind, f.start, f.end, f.hint)
        for f in catalog or ()
        if not (stand_in(f.value, True) or public(text, f.start))
    ]
    for found in redaction_rules.find(text, with_fallback=catalog is None):
        spans.append(Finding(*found))
    if not spans:
        return []
    # The first source to see a value names it; overlapping spans become one.
    order = {id(span): at for at, span in enumerate(spans)}
    merged: list[tuple[Finding, int]] = []
    for span in sorted(spans, key=lambda f: (f.start, -f.end)):
        if text.startswith(_MARK, span.start) or span.start >= span.end:
            continue
        if merged and span.start < merged[-1][0].end:
            first, rank = merged[-1]
            keep = first if rank <= order[id(span)] else span
            joined = keep._replace(start=first.start, end=max(first.end, span.end))
            merged[-1] = (joined, min(rank, order[id(span)]))
            continue
        merged.append((span, order[id(span)]))
    return [span for span, _ in merged]


def kinds_of(findings: Iterable[Finding]) -> Counter[str]:
    return Counter(f.kind for f in findings)


def redact(text: str) -> tuple[str, Counter[str]]:
    """text with each credential-shaped value replaced by `[redacted: <kind>]`, and the kinds."""
    findings = find(text)
    if not findings:
        return text, Counter()
    parts: list[str] = []
    last = 0
    for finding in findings:
        parts.append(text[last : finding.start])
        parts.append(REDACTED.format(finding.kind))
        last = finding.end
    parts.append(text[last:])
    return "".join(parts), kinds_of(findings)


def redact_value(value: Any, counts: Counter[str]) -> Any:
    """value (text, or lists and mappings of them, keys kept) with its texts redacted; what was
    redacted is added to counts."""
    if isinstance(value, str):
        clean, found = redact(value)
        counts.update(found)
        return clean
    if isinstance(value, Mapping):
        return {key: redact_value(item, counts) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item, counts) for item in value]
    return value


def redacted_noted(value: Any) -> tuple[Any, str]:
    """value redacted, and the note its decision carries: "; redacted: 1 api key", or "" when
    there was nothing to redact."""
    counts: Counter[str] = Counter()
    clean = redact_value(value, counts)
    return clean, f"; redacted: {describe(counts)}" if counts else ""


def redacted(value: Any) -> Any:
    """value with its texts redacted (for a log line: the labels say what was there)."""
    return redact_value(value, Counter())


def describe(counts: Mapping[str, int]) -> str:
    """ "1 api key, 2 passwords": what was redacted, for a decision or a warning."""
    return ", ".join(
        f"{counts[kind]} {kind}{'s' if counts[kind] != 1 else ''}" for kind in KINDS if counts.get(kind)
    )


def holds_secret(*texts: Any) -> Counter[str]:
    """The kinds of credential-shaped values in texts (strings, or rows of them)."""
    counts: Counter[str] = Counter()
    for text in texts:
        redact_value(text, counts)
    return counts


def warn_explicit(warnings: list[str] | None, what: str, counts: Mapping[str, int]) -> None:
    """One line for a person's explicit write that holds credential-shaped values: kept, said."""
    if warnings is None or not counts:
        return
    warnings.append(
        f"{what} holds what looks like {describe(counts)}; kept because you wrote it explicitly "
        "(automatic writes redact such values; `aibuddy scan` lists them)"
    )


def screen(value: Any, *, automatic: bool, warnings: list[str] | None, what: str) -> Any:
    """A write's values on their way into the vault. automatic (a model chose them): redacted,
    with a warning saying what; explicit (a person): kept, with a warning (`warn_explicit`)."""
    counts: Counter[str] = Counter()
    clean = redact_value(value, counts)
    if not counts:
        return value
    if not automatic:
        warn_explicit(warnings, what, counts)
        return value
    if warnings is not None:
        warnings.append(f"{what}: redacted {describe(counts)} (automatic writes never store such values)")
    return clean
