"""Credential-shaped values: found, and redacted with a label saying what they were.

Nothing automatic stores a secret. Every automatic write (records and rows a model proposed,
rolling and compaction summaries, document summaries, the decision logs) goes through `redact`
first; an explicit write by a person keeps the value and warns (`warn_explicit`); `aibuddy scan`
and the pre-commit hook list what `find` sees in a vault's files.

What counts (after gitleaks' and detect-secrets' rules, narrowed to what a conversation carries):

- provider keys by their prefix: OpenAI `sk-…` (`sk-proj-`, `sk-svcacct-`), Anthropic `sk-ant-…`,
  AWS access key ids `AKIA…`/`ASIA…`, Google `AIza…`, Stripe `sk_live_`/`rk_live_` (and
  `_test_`), GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_`, Slack `xoxb-`/`xoxa-`/
  `xoxp-`/`xoxr-`/`xoxs-`, GitLab `glpat-`;
- PEM private-key blocks (`-----BEGIN … PRIVATE KEY-----` to its END line, or to the end of
  the base64 lines when the END is cut off);
- JWTs (three base64url segments, the first starting `eyJ`);
- bearer tokens (`Authorization: Bearer …`, `bearer <token>` with a digit in it) and passwords in
  a URL (`scheme://user:password@host`);
- a value after a keyword: "password is X", "password: X", "passwd=X", "secret = X", "token: X",
  "api_key=X", 密码是X, 密码：X (also passphrase, passcode, client_secret, access_token, 口令, 密钥,
  令牌). The value is the following run of non-space characters (or a quoted string). Prose
  stays prose: "I forgot my password", "the token budget", "the password is required" change
  nothing, since a keyword needs a separator and a value that looks like one. After "is", a
  value needs a digit, a symbol or mixed case (or quotes): "my password is swordfish" is not
  caught, "my password is swordfish7" is.

The labels are `[redacted: api key]`, `[redacted: private key]`, `[redacted: password]`,
`[redacted: token]`, `[redacted: jwt]`, `[redacted: secret]`. Callers learn the kinds and their
counts (`Counter`), never the values; `describe` words them for a log ("1 api key, 2 passwords").
The patterns are compiled on first use, so importing this module costs nothing at start-up.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, NamedTuple

API_KEY = "api key"
PRIVATE_KEY = "private key"
PASSWORD = "password"
TOKEN = "token"
JWT = "jwt"
SECRET = "secret"
KINDS = (API_KEY, PRIVATE_KEY, PASSWORD, TOKEN, JWT, SECRET)

REDACTED = "[redacted: {}]"
_MARK = "[redacted:"

# Prefix patterns: (kind, the known prefix shown as a hint, regex). Longer prefixes first.
_PREFIXED = (
    # The lookaheads are bounded: an unbounded one rescans a long run at every "sk-" (quadratic).
    (API_KEY, "sk-ant-", r"sk-ant-(?=[A-Za-z0-9_-]{0,300}[0-9])[A-Za-z0-9_-]{20,}"),
    (API_KEY, "sk-", r"sk-(?=[A-Za-z0-9_-]{0,300}[0-9])(?:proj-|svcacct-|admin-|live-)?[A-Za-z0-9_-]{20,}"),
    (API_KEY, "sk_live_", r"(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{16,}"),
    (API_KEY, "AKIA", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}"),
    (API_KEY, "AIza", r"AIza[A-Za-z0-9_-]{30,40}"),
    (TOKEN, "github_pat_", r"github_pat_[A-Za-z0-9_]{22,}"),
    (TOKEN, "ghp_", r"gh[pousr]_[A-Za-z0-9]{30,}"),
    (TOKEN, "xoxb-", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    (TOKEN, "glpat-", r"glpat-[A-Za-z0-9_-]{20,}"),
)

_PEM = (
    r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=:-]{8,})*)"
)
_JWT = r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
# "Bearer <token>": the token needs 16 characters and a digit, so "bearer tokens expire" is prose.
_BEARER = r"(?i:\bbearer)[ \t]+(?=[A-Za-z0-9._~+/-]{0,300}[0-9])([A-Za-z0-9._~+/-]{16,}=*)"
_URL_PASSWORD = r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@\"'<>]{1,100}:([^\s/@\"'<>]{3,200})@"

# Keyword forms. The key must stand alone ("max_tokens" is not "token"; "db_password" is).
_KEYWORDS = {
    # PGPASSWORD, MYSQL_PWD: an environment variable's prefix may run into the word.
    PASSWORD: r"(?:[A-Z]{2,12})?(?:password|passwd|passphrase|pass[_-]?code|pwd)",
    SECRET: r"(?:client|app|aws|api)?[_-]?secret(?:[_-]?(?:access[_-]?)?key)?",
    API_KEY: r"api[ _-]?key|apikey|access[ _-]?key(?:[_-]?id)?|secret[ _-]key",
    TOKEN: r"(?:auth|access|refresh|api|bearer|session|id)?[_-]?token",
}
_CJK_KEYWORDS = {PASSWORD: "密码|口令", SECRET: "密钥", TOKEN: "令牌"}

# The value after a keyword: quoted, or the run of characters up to a space or a CJK/closing mark.
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`"
    r"|(?P<run>[^\s\"'`<>&，。；：、）)\]]+))"
)

# Words that follow "password:" or "token is" in prose, never as the value itself.
_PROSE = frozenset(
    """a an the is are was were be been being not no none null nil empty blank unset set true false
    yes required optional needed incorrect wrong invalid correct valid expired missing same
    different strong weak changed reset hidden masked secret secure protected stored saved sent
    unknown please see below above here there this that it its your my our their his her and or
    but for to of in on at by with without from into only also still too very just now then
    enabled disabled redacted placeholder example sample dummy xxx xxxx xxxxx must should shall will
    would can cannot could may might enter type choose pick use contain contains include includes
    least minimum maximum length characters""".split()
)


class Finding(NamedTuple):
    """One credential-shaped value in a text: its kind, where it is, and a safe hint."""

    kind: str
    start: int  # the value's span in the text (the keyword or "Bearer " stay outside it)
    end: int
    hint: str | None  # the provider prefix (`sk-…`), never a character of the secret itself


class _Compiled(NamedTuple):
    prefixed: list[tuple[str, str, re.Pattern[str]]]
    pem: re.Pattern[str]
    jwt: re.Pattern[str]
    bearer: re.Pattern[str]
    url: re.Pattern[str]
    keyword: re.Pattern[str]
    cjk: re.Pattern[str]
    quick: re.Pattern[str]


@cache
def _patterns() -> _Compiled:
    """Compiled on first use: a command that never writes automatically never pays for them."""
    edge = r"(?<![A-Za-z0-9])"
    prefixed = [(kind, hint, re.compile(edge + body + r"(?![A-Za-z0-9])")) for kind, hint, body in _PREFIXED]
    keys = "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _KEYWORDS.items())
    keyword = re.compile(
        rf"(?i){edge}(?:{keys})(?![A-Za-z0-9])[\"']?"
        rf"(?P<sep>[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+(?:is|was|=)[ \t]+)" + _VALUE
    )
    cjk_keys = "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _CJK_KEYWORDS.items())
    cjk = re.compile(
        rf"(?:{cjk_keys})[ \t]*(?P<sep>是|为|為|:|：|=)[ \t]*"
        r"(?:[「『“\"'](?P<dq>[^」』”\"'\n]{1,200})[」』”\"']|(?P<run>[!-~]+))"
    )
    quick = re.compile(
        r"(?i)sk-|[sprk]k_|akia|asia|abia|acca|a3t|aiza|gh[pousr]_|github_pat_|xox|glpat-|private key"
        r"|eyj|bearer|://|pass|pwd|secret|key|token|密码|口令|密钥|令牌"
    )
    return _Compiled(
        prefixed,
        re.compile(_PEM),
        re.compile(r"(?<![A-Za-z0-9_-])" + _JWT),
        re.compile(_BEARER),
        re.compile(_URL_PASSWORD),
        keyword,
        cjk,
        quick,
    )


def _looks_like_value(value: str, kind: str, separator: str, quoted: bool) -> bool:
    """Whether the word after a keyword is a value, not the rest of a sentence."""
    if not value or value.startswith(_MARK) or value.lower().rstrip("?!.") in _PROSE:
        return False
    if value.startswith(("$", "{", "%(", "<", "*", "•")) or len(set(value)) == 1:
        return False  # ${PASSWORD}, {{ token }}, %(password)s, <your key>, ******
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c not in "-'’" for c in value)
    mixed = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    if kind == PASSWORD:
        if len(value) < 4:
            return False
        if separator in ("is", "was") and not quoted:
            return len(value) >= 6 and (has_digit or has_symbol or mixed)
        return True
    # secret, token, api key: values are long and rarely plain words.
    if len(value) < 8:
        return False
    if not quoted and not has_digit and len(value) < 20:
        return False
    return True


def _trim(value: str) -> str:
    """A value without the sentence's closing punctuation ("… is hunter22." keeps its period;
    "!" and "?" stay with the value, which they end more often than they end a sentence)."""
    return value.rstrip(".,;:")


def find(text: str) -> list[Finding]:
    """The credential-shaped values in text, in order, none overlapping another."""
    if not text:
        return []
    compiled = _patterns()
    if compiled.quick.search(text) is None:
        return []
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []  # sorted, never overlapping: a neighbour is all to check

    def add(kind: str, start: int, end: int, hint: str | None = None) -> None:
        if start >= end or text.startswith(_MARK, start):
            return
        at = bisect.bisect_left(taken, (start, end))
        if (at > 0 and taken[at - 1][1] > start) or (at < len(taken) and taken[at][0] < end):
            return
        taken.insert(at, (start, end))
        found.append(Finding(kind, start, end, hint))

    for match in compiled.pem.finditer(text):
        add(PRIVATE_KEY, match.start(), match.end(), "-----BEGIN … PRIVATE KEY-----")
    for match in compiled.jwt.finditer(text):
        add(JWT, match.start(), match.end(), "eyJ…")
    for kind, hint, pattern in compiled.prefixed:
        for match in pattern.finditer(text):
            add(kind, match.start(), match.end(), f"{hint}…")
    for match in compiled.bearer.finditer(text):
        add(TOKEN, match.start(1), match.end(1), "Bearer …")
    for match in compiled.url.finditer(text):
        add(PASSWORD, match.start(1), match.end(1), "://user:…@")
    for pattern in (compiled.keyword, compiled.cjk):
        for match in pattern.finditer(text):
            groups = match.groupdict()
            kind = next(k.replace("_", " ")[2:] for k, v in groups.items() if k.startswith("k_") and v)
            separator = groups["sep"].strip()
            quoted = next((name for name in ("dq", "sq", "bq") if groups.get(name)), None)
            name = quoted or "run"
            value = groups[name] if quoted else _trim(groups["run"])
            if pattern is compiled.cjk and not quoted:
                separator = "is" if separator in ("是", "为", "為") else separator
            if _looks_like_value(value, kind, separator, quoted is not None):
                start = match.start(name)
                add(kind, start, start + len(value))
    found.sort(key=lambda f: f.start)
    return found


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
