"""Provider credentials found by a maintained rule catalogue: Kingfisher's.

`kingfisher-secret-scanner` (MongoDB's Kingfisher, Apache-2.0) bundles some 490 rules, the
Betterleaks rules (the successor of gitleaks, by its author) and Google's Veles detectors, and
matches them natively (Rust and Vectorscan): a provider's new key format arrives with a new
release of the package instead of a pattern written here. It knows keys by their documented
shapes (`hf_…`, `npm_…`, `SG.….…`, `xapp-…`, Slack and Discord webhooks, AWS key pairs, Azure
connection strings, …), checks them the way the rule's authors meant (entropy, checksums,
look-alike filters), and finds them inside Base64 too.

What it does not know (natural language, a value after a keyword, HTTP headers) is
`redaction_rules`. Where the package has no wheel for the platform, `available()` is False,
`find` finds nothing, and `redaction` uses the provider prefixes of `redaction_rules` instead.

The scanner is built on first use, once per process: compiling the rules takes about 3 s the
first time on a machine and 0.3 s afterwards (Kingfisher keeps the compiled database in the
user's cache folder, `KF_RULE_CACHE_DIR` to choose another); it is never built at start-up.
"""

from __future__ import annotations

import re
import threading
from typing import Any, NamedTuple

# A component rule that Kingfisher reports only beside its partner (an AWS secret access key
# next to its key id) is still a credential on its own when its name says it is one: the key id
# may be gone already (redacted) or elsewhere in the conversation. A cloud's access key id
# (Alibaba's LTAI…) is half of a pair, as AWS's AKIA… is. Other identifiers, hosts, account
# names and public client ids among the components stay unreported.
_SECRET_COMPONENT_WORDS = ("secret", "token", "passphrase", "password", "private-key", "access-key-id")

# The words of a rule's id, in the order they decide its kind.
_KIND_WORDS = (
    ("private key", ("private-key", "privatekey", "ssh-key", "pgp")),
    ("jwt", ("jwt",)),
    ("password", ("password", "passphrase", "credential-uri", "connection-string", "credentials", "dsn")),
    ("secret", ("secret",)),
    ("token", ("token", "-pat", "webhook", "auth-header")),
)


class CatalogFinding(NamedTuple):
    kind: str  # one of redaction.KINDS
    start: int  # character offsets in the text scanned
    end: int
    hint: str  # the rule's name, `huggingface-access-token`: never a character of the value
    value: str  # what the rule captured (`password` in a URL from a manual is a stand-in)


_lock = threading.Lock()
_built: list[Any] = []  # the process's one scanner once built, or None where it cannot be had
_about: list[str] = []  # what was loaded ("kingfisher-secret-scanner 1.5.0, 488 rules"), or why not


def _scanner() -> Any | None:
    """The process's one scanner, or None where the package cannot be had."""
    if _built:
        return _built[0]
    with _lock:
        if not _built:
            try:
                import kingfisher_sdk

                rules = kingfisher_sdk.Rules()
                # Inline "ignore" comments are not honoured by this scanner: a text (a model's, a
                # pasted log's) never decides for itself that its key may be kept.
                _built.append(kingfisher_sdk.Scanner(rules, dedup=False, redact=False))
                version, count = kingfisher_sdk.__version__, len(rules.metadata())
                _about.append(f"kingfisher-secret-scanner {version}, {count} rules")
            except (ImportError, OSError, RuntimeError) as error:  # no wheel here, or a CPU it cannot use
                _built.append(None)
                _about.append(f"{type(error).__name__}: {error}")
    return _built[0]


def about() -> tuple[bool, str]:
    """Whether the catalogue can be had here, and what it is (or why not): for `aibuddy doctor`."""
    return _scanner() is not None, _about[0]


def built() -> bool:
    """Whether this process has paid for the scanner already (then a scan costs microseconds)."""
    return bool(_built)


def rule_name(rule_id: str) -> str:
    """`betterleaks.github-pat` → `github-pat`; `veles.secrets/sendgrid` → `sendgrid`;
    `betterleaks.auth0-client-id.1` → `auth0-client-id`."""
    name = rule_id.rpartition("/")[2] if "/" in rule_id else (rule_id.partition(".")[2] or rule_id)
    return re.sub(r"\.\d+$", "", name)


def kind_of(rule_id: str) -> str:
    name = rule_name(rule_id).lower()
    for kind, words in _KIND_WORDS:
        if any(word in name for word in words):
            return kind
    return "api key"


def _reported(finding: Any) -> bool:
    if finding.visible:
        return True
    name = rule_name(finding.rule_id).lower()
    return any(word in name for word in _SECRET_COMPONENT_WORDS)


# Every byte of a character beyond ASCII, as a space: the same offsets, and a key that a Chinese
# sentence or a CJK mark follows ends where a rule expects an end (a space, a quote, a line end).
_NON_ASCII_AS_SPACE = bytes(range(128)) + b" " * 128
_SENTENCE_END = re.compile(rb"[.,!?;:)\]}>](?=\s|$)")


def _as_code(data: bytes) -> bytes:
    """data as the rules expect a key to stand: the catalogue's rules were written for code, where
    a key ends at a quote, a space or a line's end. In a sentence it ends at a full stop, a comma or
    a bracket ("my key is AIza….", 密钥是sk-…。): those become spaces, byte for byte, so the
    offsets found are the text's own."""
    return _SENTENCE_END.sub(b" ", data.translate(_NON_ASCII_AS_SPACE))


# A secret shorter than this is a rule's capture of a piece of what it matched (Betterleaks'
# Teams webhook captures one group of a UUID): the whole word around it is redacted instead.
_SHORTEST = 8
_WORD_END = frozenset(b" \t\r\n\"'`<>()[]{},;")


def _enclosing_word(data: bytes, start: int, end: int) -> tuple[int, int]:
    while start > 0 and data[start - 1] not in _WORD_END and data[start - 1] < 0x80:
        start -= 1
    while end < len(data) and data[end] not in _WORD_END and data[end] < 0x80:
        end += 1
    return start, end


def find(text: str) -> list[CatalogFinding] | None:
    """The provider credentials in text, by character offsets (they may overlap: `redaction.detect.find`
    joins them), or None where the catalogue cannot be had."""
    scanner = _scanner()
    if scanner is None:
        return None
    if not text:
        return []
    data = text.encode("utf-8", "surrogatepass")
    found = []
    for finding in scanner.scan(_as_code(data)):
        if not _reported(finding):
            continue
        location = finding.location
        start, end = location["start_offset"], location["end_offset"]
        if not 0 <= start < end <= len(data):
            continue
        captured = finding.secret
        if end - start < _SHORTEST:  # a rule that captured a piece of its match (a URL's segment)
            start, end = _enclosing_word(data, start, end)
        found.append((finding.rule_id, start, end, captured))
    if not found:
        return []
    ascii_only = len(data) == len(text)

    def char_offset(at: int) -> int:
        if ascii_only:
            return at
        try:
            return len(data[:at].decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:  # an offset inside a character: count the whole ones before it
            return len(data[:at].decode("utf-8", "ignore"))

    return [
        CatalogFinding(kind_of(rule_id), char_offset(start), char_offset(end), rule_name(rule_id), captured)
        for rule_id, start, end, captured in found
    ]
