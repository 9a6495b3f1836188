"""Credentials that no provider rule knows: values a sentence, a header or a setting names as one.

A provider's key has a shape (`redaction_catalog` knows some 490 of them); a password has none,
and a key of a provider no rule knows is recognised only by what stands before it. These rules
read that context, in English and Chinese:

- a value after a credential's name: "password is X", "the password for the staging db is X",
  "password is: X", "pw: X", "use X as the password", `DB_PASS=X`, `"pass": "X"`,
  `client_secret: X`, `--password X`, `<password>X</password>`, 密码是X, 密码是：X, 密码为 X,
  口令、密钥、令牌；a login given as a pair ("login is alice / X", 账号 alice 密码 X);
- HTTP authorization: `Authorization: Basic|Bearer|Token … X`, `X-Api-Key: X`, "bearer X";
- a password in a URL of any scheme (`redis://:X@host`, `https://user:X@host`), `curl -u user:X`,
  `mysql -pX`;
- PEM private keys, also cut off before their END line, and JWTs;
- a key-shaped token: a vendor's short prefix and a long generated body (`sk-…`, `whsec_…`), the
  shape most providers give their keys, whether a rule knows the provider or not (an identifier
  made of words, a UUID or a payment's object id, `pi_` and 24 characters, is not one);
- where the catalogue cannot be had, the common providers' prefixes (`FALLBACK_PREFIXES`).

Prose stays prose: "I forgot my password", "the token budget", "password: must contain a digit",
`password=${DB_PASSWORD}`, `api_key: <your key here>` change nothing, since a value must look like
one (`looks_like_value`). A value runs to the next space or quote; a closing bracket, a CJK mark
or a query string's `&name=` ends it, and a sentence's last full stop is not part of it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

API_KEY = "api key"
PRIVATE_KEY = "private key"
PASSWORD = "password"
TOKEN = "token"
JWT = "jwt"
SECRET = "secret"

MARK = "[redacted:"


class RuleFinding(NamedTuple):
    kind: str
    start: int
    end: int
    hint: str | None


# The words that name a credential, by kind. A name is an identifier or phrase whose last part is
# one of these (`DB_PASS`, `stripe-webhook-secret`, `GITHUB_TOKEN`, `api key`, `ClientSecret`).
_NAMES = {
    # PGPASSWORD, MYSQLPWD: an environment variable's prefix may run into the word.
    PASSWORD: r"(?:[a-z]{2,12}(?=password|passwd|pwd))?"
    r"(?:password|passwd|passphrase|pass[ _-]?code|pass|pwd|pword|pw)",
    SECRET: r"secret(?:[ _-]?access)?(?:[ _-]?key)?|client[ _-]?secret|signing[ _-]?secret",
    API_KEY: r"api[ _-]?key|apikey|access[ _-]?key(?:[ _-]?id)?|key|(?:private|signing|encryption|master|"
    r"license|app|client|account|storage|service|consumer|auth|secret|admin|write|read|deploy|"
    r"webhook|sas|shared)[ _-]?key",
    TOKEN: r"(?:auth|access|refresh|api|bearer|session|id|bot|app|personal[ _-]?access|deploy|"
    r"webhook|oauth|csrf|xsrf|security|service|admin|user)?[ _-]?token",
}
# Qualifiers before a name that make it something else: `max_tokens` is a number, `sort_key` a
# column, `public_key` public, `token_count` not the token (the name must end the identifier).
_NOT_SECRET_QUALIFIERS = frozenset(
    """public primary foreign sort partition cache hash row idempotency unique composite lookup
    object map dict registry routing range cluster shard group max min num total count next
    prev previous page continuation cancellation""".split()
)
_CJK_NAMES = {PASSWORD: r"密码|口令|密碼", SECRET: r"密钥|秘钥|私钥|密鑰|秘鑰", TOKEN: r"令牌"}
# Names too short or too common to be one in a sentence ("boarding pass: 14B22X"): they count in
# a setting (`DB_PASS=`, `"pass":`, `pass=`, `pw: …` at the start of a line) only.
_SHORT_NAMES = frozenset(("pass", "pw", "pword"))

# The value: quoted, or a run of characters up to a space, a quote or a CJK mark.
_QUOTED = (
    r"\"(?P<dq>[^\"\n]{1,300})\"|'(?P<sq>[^'\n]{1,300})'|`(?P<bq>[^`\n]{1,300})`|“(?P<cq>[^”\n]{1,300})”"
)
# (A Chinese character ends it too: "password 密码需要至少8位" holds no value.)
_RUN = r"(?P<run>[^\s\"'`，。；、！？」』”）】\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]{1,300})"
_VALUE = rf"(?:{_QUOTED}|{_RUN})"
_CJK_QUOTED = r"[「『“\"'](?P<dq>[^」』”\"'\n]{1,300})[」』”\"']"
_CJK_RUN = r"(?P<run>[!-~]{1,300})"  # in a Chinese sentence a password is a run of ASCII

# Words that follow "password:" or "token is" in prose, never as the value itself.
_PROSE = frozenset(
    """a an the is are was were be been being not no none null nil empty blank unset set true false
    yes required optional needed incorrect wrong invalid correct valid expired missing same
    different strong weak changed reset hidden masked secret secure protected stored saved sent
    unknown please see below above here there this that it its your my our their his her and or
    but for to of in on at by with without from into only also still too very just now then
    enabled disabled redacted placeholder example sample dummy xxx xxxx xxxxx must should shall will
    would can cannot could may might enter type choose pick use contain contains include includes
    least minimum maximum length characters manager managers policy policies rules rule field
    fields prompt dialog screen page form link links email emails reset protected-mode request
    requests expiry expires expired rotation rotated strength hint hints hash hashes hashed
    stored changed updated format formats string strings value values variable variables""".split()
)
# A value that stands for one (a template's, a document's), never one itself: it starts as a tag,
# a template or a format does (`<your key>`, `{{ token }}`, `%(password)s`), or is a variable
# (`${DB_PASSWORD}`, `$DB_PASSWORD`, `$1`), a mask (`****`, `xxxx`, `…`) or a stand-in (`your_token`).
_PLACEHOLDER = re.compile(
    r"^(?:[<{]|%\()"
    r"|^(?:\$\{[^}]*\}|\$(?:[A-Z_]+|[a-z_]+)|\$\d+|\[[^\[\]]*\]|\*+|•+|x{3,}|X{3,}|\.{3,}|…+"
    r"|(?:your|my|the)[_-]\w+|REDACTED|redacted)$"
)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_WORDISH = re.compile(r"[a-z]{4,}|[A-Z]{4,}|[A-Z][a-z]{3,}")


def random_looking(value: str) -> bool:
    """Whether value looks generated (a key) rather than written (an identifier, a word): 16
    characters or more, a digit or both cases, and most of its letters outside word-like runs
    (`pE9XkfTiyVZq5oXK`, a hex digest, a UUID; not `user_profile_settings_v2`)."""
    if len(value) < 16:
        return False
    letters = sum(c.isalpha() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (mixed or any(c.isdigit() for c in value)):
        return False
    wordish = sum(len(run) for run in _WORDISH.findall(value))
    return letters == 0 or wordish / letters < 0.5


def looks_like_value(value: str, kind: str, separator: str, quoted: bool, *, bare_name: bool = False) -> bool:
    """Whether the word after a credential's name is a value, not the rest of a sentence."""
    if not value or value.startswith(MARK) or _PLACEHOLDER.match(value):
        return False
    if value.lower().rstrip("?!.") in _PROSE or len(set(value)) == 1:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c not in "-'’" for c in value)
    mixed = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if kind == PASSWORD:
        if len(value) < 4:
            return False
        if separator == " " and not quoted:
            return len(value) >= 6 and has_digit and has_alpha
        if separator in ("is", "was", "as") and not quoted:
            return len(value) >= 6 and (has_digit or has_symbol or mixed)
        return True
    if bare_name or separator == " ":  # "key: …", "secret key …": only a value that looks generated
        return random_looking(value)
    # secret, token, api key: values are long and rarely plain words.
    if len(value) < 8:
        return False
    if not quoted and not has_digit and not mixed and len(value) < 20:
        return False
    return True


def _trim(value: str) -> str:
    """A value without what ends its sentence or encloses it: "… is hunter22." keeps no period, a
    closing bracket at its end that it did not open is the sentence's ("(password: abc123)"), and a
    query string's `&name=` starts the next parameter. A bracket inside a value is the value's
    (`p@ss)w]rd`), and "!" and "?" stay: they end passwords more often than sentences."""
    query = re.search(r"&[A-Za-z_][A-Za-z0-9_.-]*=", value)
    if query:
        value = value[: query.start()]
    while True:
        value = value.rstrip(".,;:")
        closer = value[-1:]
        opener = {")": "(", "]": "[", "}": "{"}.get(closer)
        if opener is None or value.count(opener) >= value.count(closer):
            return value
        value = value[:-1]


def _name_alternatives() -> str:
    return "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _NAMES.items())


class _Compiled(NamedTuple):
    assignment: re.Pattern[str]
    phrase: re.Pattern[str]
    use_as: re.Pattern[str]
    pair: re.Pattern[str]
    flag: re.Pattern[str]
    xml: re.Pattern[str]
    cjk: re.Pattern[str]
    cjk_pair: re.Pattern[str]
    header: re.Pattern[str]
    bearer: re.Pattern[str]
    url: re.Pattern[str]
    curl_user: re.Pattern[str]
    mysql: re.Pattern[str]
    pem: re.Pattern[str]
    jwt: re.Pattern[str]
    key_shaped: re.Pattern[str]
    aws_key_id: re.Pattern[str]
    fallback: list[tuple[str, str, re.Pattern[str]]]
    quick: re.Pattern[str]


# Where the catalogue cannot be had: the common providers' prefixes (longer ones first).
FALLBACK_PREFIXES = (
    # The lookaheads are bounded: an unbounded one rescans a long run at every "sk-" (quadratic).
    (API_KEY, "sk-ant-", r"sk-ant-(?=[A-Za-z0-9_-]{0,300}[0-9])[A-Za-z0-9_-]{20,}"),
    (API_KEY, "sk-", r"sk-(?=[A-Za-z0-9_-]{0,300}[0-9])(?:proj-|svcacct-|admin-|live-)?[A-Za-z0-9_-]{20,}"),
    (API_KEY, "sk_live_", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,}"),
    (SECRET, "whsec_", r"whsec_[A-Za-z0-9+/=]{24,}"),
    (API_KEY, "AIza", r"AIza[A-Za-z0-9_-]{30,40}"),
    (TOKEN, "github_pat_", r"github_pat_[A-Za-z0-9_]{22,}"),
    (TOKEN, "ghp_", r"gh[pousr]_[A-Za-z0-9]{30,}"),
    (TOKEN, "xoxb-", r"xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{20,}"),
    (TOKEN, "glpat-", r"glpat-[A-Za-z0-9_-]{20,}"),
    (TOKEN, "hf_", r"hf_[A-Za-z]{30,}"),
    (TOKEN, "npm_", r"npm_[A-Za-z0-9]{36}"),
    (API_KEY, "SG.", r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    (TOKEN, "hooks.slack.com/", r"(?<=hooks\.slack\.com/services/)[A-Za-z0-9/]{20,}"),
)

_EDGE = r"(?<![A-Za-z0-9])"
_SEP = (
    r"(?P<sep>[ \t]*(?::=|=>|->|[:=：])[ \t]*"  # password: X, DB_PASS=X, key => X
    r"|[ \t]+(?:is|was|are|=)(?:[ \t]*[:：][ \t]*|[ \t]+)"  # password is X, password is: X
    r"|[ \t]*(?:是|为|為)[ \t]*[:：]?[ \t]*"  # password是X
    r"|[ \t]+)"  # the root password Winter2024!, aws secret key X (a value that looks like one)
)


@cache
def compiled() -> _Compiled:
    """Compiled on first use: a command that never writes automatically never pays for them."""
    names = _name_alternatives()
    # A credential's name (the end of an identifier or phrase: what qualifies it is read in Python).
    assignment = re.compile(rf"(?i){_EDGE}(?P<key>{names})(?![A-Za-z0-9])[\"']?{_SEP}{_VALUE}")
    # "the password for the staging db is X", "password to the wifi: X"
    phrase = re.compile(
        rf"(?i){_EDGE}(?P<key>(?:{names}))s?[ \t]+(?:for|of|to|on|at|in)[ \t]+"
        r"(?:[^\s.,;:!?。，]{1,30}[ \t]+){0,6}?[^\s.,;:!?。，]{1,30}"
        r"(?P<sep>[ \t]*[:=：][ \t]*|[ \t]+(?:is|was)(?:[ \t]*[:：][ \t]*|[ \t]+))" + _VALUE
    )
    use_as = re.compile(
        rf"(?i)\b(?:use|used|using|try|set it to|changed it to)[ \t]+{_VALUE}[ \t]+as[ \t]+"
        rf"(?:the|my|your|our|a|its)?[ \t]*(?:[\w-]+[ \t]+){{0,3}}?(?P<key>{names})\b"
    )
    # "login is alice / X", "credentials: alice:X", "user alice, password X" (the last by assignment)
    pair = re.compile(
        r"(?i)\b(?:login|log-in|credentials|creds|user(?:name)?[ \t]*(?:/|and|&)[ \t]*pass(?:word)?)"
        r"(?:[ \t]+(?:is|are|=)[ \t]*[:：]?|[ \t]*[:=：])[ \t]*"
        r"[^\s/:]{1,64}[ \t]*(?:/|:|,)[ \t]*" + _VALUE
    )
    flag = re.compile(
        rf"(?i)(?<![\w-])--?(?P<key>(?:[a-z0-9]+-)?(?:{names}))(?:=|[ \t]+)" + _VALUE
    )
    xml = re.compile(
        rf"(?i)<(?P<key>(?:[a-z0-9]+[_-])?(?:{names}))>(?P<run>[^<\s]{{1,300}})</(?P=key)>"
    )
    cjk_names = "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _CJK_NAMES.items())
    cjk = re.compile(
        rf"(?:{cjk_names})(?:[ \t]*的)?[ \t]*"
        r"(?P<sep>(?:是|为|為|设置为|设为|设置成|改成|改为|换成|换为|就是|都是|：|:|=)+|[ \t]+)[ \t]*"
        rf"(?:{_CJK_QUOTED}|{_CJK_RUN})"
    )
    cjk_pair = re.compile(
        r"(?:账号|帐号|用户名|用户)[ \t]*[:：]?[ \t]*[!-~]{1,64}[ \t，,、]*(?:密码|口令)[ \t]*"
        rf"(?P<sep>[:：=是为]*)[ \t]*(?:{_CJK_QUOTED}|{_CJK_RUN})"
    )
    header = re.compile(
        r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?:(?P<scheme>basic|bearer|token|digest|negotiate|ntlm|apikey|api-key|sso-key|ssws|key|"
        r"splunk|dsn|otp|hmac|aws4-hmac-sha256)[ \t]+)?"
        r"(?P<run>[A-Za-z0-9._~+/=:,-]{8,2000})"
        r"|\bx-(?:[a-z0-9]+-)*(?:api-?key|auth-?token|access-?token|token|key|secret)[\"']?[ \t]*"
        r"[:=][ \t]*[\"']?(?P<run2>[A-Za-z0-9._~+/=:-]{8,500})"
    )
    # "Bearer <token>": the token needs 16 characters and a digit, so "bearer tokens expire" is prose.
    bearer = re.compile(
        r"(?i:\bbearer)[ \t]+(?=[A-Za-z0-9._~+/-]{0,300}[0-9])(?P<run>[A-Za-z0-9._~+/-]{16,}=*)"
    )
    # scheme://user:password@host, the user possibly empty (redis://:password@host)
    url = re.compile(
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@\"'<>]{0,100}:(?P<run>[^\s@/\"'<>]{1,200})@"
        r"(?=[\w\[])"
    )
    curl_user = re.compile(r"(?:^|[ \t])(?:-u|--user)[ \t=]+[\"']?[^\s:\"']{1,64}:(?P<run>[^\s\"']{1,200})")
    mysql = re.compile(r"\b(?:mysql|mysqldump|mariadb)\b[^\n]{0,200}?[ \t]-p(?P<run>[^\s\"']{3,200})")
    pem = re.compile(
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=:-]{8,})*)"
    )
    jwt = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
    # A vendor's prefix (`sk-`, `sk-proj-`, `hf_`, `whsec_`, `dop_v1_`) and a long generated body:
    # the shape most providers give their keys, whether or not a rule knows the provider.
    key_shaped = re.compile(
        r"(?<![A-Za-z0-9_+/=.-])(?P<prefix>[a-z][a-z0-9]{1,9}(?:[_-][a-z0-9]{2,10}){0,2}[_-])"
        r"(?P<body>[A-Za-z0-9_-]{28,600})(?![A-Za-z0-9_-])"
    )
    aws_key_id = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9])")
    fallback = [
        (kind, hint, re.compile(_EDGE + body + r"(?![A-Za-z0-9])")) for kind, hint, body in FALLBACK_PREFIXES
    ]
    quick = re.compile(
        r"(?i)pass|pwd|pw|secret|key|token|auth|bearer|://|login|cred|-u|mysql|private|eyj|密|口令|令牌|"
        r"账号|帐号|用户"
    )
    return _Compiled(
        assignment, phrase, use_as, pair, flag, xml, cjk, cjk_pair, header, bearer, url, curl_user, mysql,
        pem, jwt, key_shaped, aws_key_id, fallback, quick,
    )  # fmt: skip


def _kind_of(groups: dict[str, str | None]) -> str:
    return next((k[2:].replace("_", " ") for k, v in groups.items() if k.startswith("k_") and v), PASSWORD)


def _value(match: re.Match[str]) -> tuple[str, int, bool]:
    """The value a match holds, where it starts, and whether it was quoted."""
    groups = match.groupdict()
    for name in ("dq", "sq", "bq", "cq"):
        if groups.get(name):
            return groups[name] or "", match.start(name), True
    for name in ("run", "run2"):
        if groups.get(name):
            return _trim(groups[name] or ""), match.start(name), False
    return "", match.start(), False


_QUALIFIER = re.compile(r"([A-Za-z0-9]+)([ _.-]?)$")


def _named_away(text: str, match: re.Match[str], separator: str) -> bool:
    """Whether what stands before a credential's name makes it something else (`next_token`,
    `max_token`), or a short name (`pass`) is a word of a sentence rather than a setting's."""
    start = match.start("key")
    qualifier = _QUALIFIER.search(text, max(0, start - 40), start)
    word, joiner = (qualifier.group(1).lower(), qualifier.group(2)) if qualifier else ("", "")
    if word in _NOT_SECRET_QUALIFIERS and joiner != " ":
        return True
    if match.group("key").lower().replace(" ", "") not in _SHORT_NAMES:
        return False
    if joiner in ("_", "-", ".") or separator in ("=", ":="):
        return False  # DB_PASS=…, admin-pass: …, pass=…
    if start > 0 and text[start - 1] in "\"'":
        return False  # "pass": "…"
    line_start = text.rfind("\n", 0, start) + 1
    return text[line_start:start].strip() != ""  # pw: … at the start of a line


def find(text: str, *, with_fallback: bool) -> Iterator[RuleFinding]:
    """The values these rules see in text, most certain first; they may overlap (the caller keeps
    the first of overlapping ones)."""
    rules = compiled()
    for match in rules.pem.finditer(text):
        yield RuleFinding(PRIVATE_KEY, match.start(), match.end(), "-----BEGIN … PRIVATE KEY-----")
    for match in rules.jwt.finditer(text):
        yield RuleFinding(JWT, match.start(), match.end(), "eyJ…")
    # An AWS key id is half of a pair: the catalogue reports it only beside its secret key, but
    # the id alone names the account and the key to anyone who finds the other half.
    for match in rules.aws_key_id.finditer(text):
        yield RuleFinding(API_KEY, match.start(), match.end(), f"{match.group()[:4]}…")
    for match in rules.key_shaped.finditer(text):
        body = match.group("body")
        if random_looking(body) and body.count("-") + body.count("_") <= len(body) // 16:
            yield RuleFinding(API_KEY, match.start(), match.end(), f"{match.group('prefix')}…")
    if with_fallback:
        for kind, hint, pattern in rules.fallback:
            for match in pattern.finditer(text):
                yield RuleFinding(kind, match.start(), match.end(), f"{hint}…")
    if rules.quick.search(text) is None:
        return
    for match in rules.header.finditer(text):
        value, start, _ = _value(match)
        scheme = (match.group("scheme") or "").lower()
        if scheme in ("", "bearer", "token") and not looks_like_value(value, TOKEN, ":", False):
            continue
        kind = PASSWORD if scheme in ("basic", "digest", "ntlm") else TOKEN if match.group("run") else API_KEY
        named = f"{scheme.capitalize()} " if scheme else ""
        header = f"Authorization: {named}…" if match.group("run") else None
        yield RuleFinding(kind, start, start + len(value), header)
    for match in rules.bearer.finditer(text):
        yield RuleFinding(TOKEN, match.start("run"), match.end("run"), "Bearer …")
    for pattern, hint in ((rules.url, "://user:…@"), (rules.curl_user, "-u user:…"), (rules.mysql, "-p…")):
        for match in pattern.finditer(text):
            value = match.group("run")
            if pattern is rules.url:
                value = value.rstrip(".,;")
            if looks_like_value(value, PASSWORD, ":", True):
                yield RuleFinding(PASSWORD, match.start("run"), match.start("run") + len(value), hint)
    for pattern in (rules.pair, rules.use_as):
        for match in pattern.finditer(text):
            value, start, quoted = _value(match)
            if looks_like_value(value, PASSWORD, "is", quoted):
                yield RuleFinding(PASSWORD, start, start + len(value), None)
    for pattern in (rules.assignment, rules.phrase, rules.flag, rules.xml):
        for match in pattern.finditer(text):
            kind = _kind_of(_kinds_in(match.group("key")))
            value, start, quoted = _value(match)
            separator = (match.groupdict().get("sep") or "=").strip() or " "
            if separator.lower().startswith(("is", "was", "are", "是", "为", "為")):
                separator = "is"
            if pattern is rules.assignment and _named_away(text, match, separator):
                continue
            bare = match.group("key").lower() == "key"
            if looks_like_value(value, kind, separator, quoted, bare_name=bare):
                yield RuleFinding(kind, start, start + len(value), None)
    for pattern in (rules.cjk, rules.cjk_pair):
        for match in pattern.finditer(text):
            groups = match.groupdict()
            kind = _kind_of(groups)
            value, start, quoted = _value(match)
            raw = (groups.get("sep") or "").strip()
            separator = ":" if raw and raw[-1] in ":：=" else ("is" if raw else " ")
            if looks_like_value(value, kind, separator, quoted):
                yield RuleFinding(kind, start, start + len(value), None)


@cache
def _name_pattern() -> re.Pattern[str]:
    return re.compile(rf"(?i)(?:{_name_alternatives()})$")


def _kinds_in(key: str) -> dict[str, str | None]:
    """The kind a credential's name says (the last part of `OPENAI_API_KEY` is `API_KEY`)."""
    match = _name_pattern().search(key.rstrip("s") if key.lower().endswith("tokens") else key)
    return match.groupdict() if match else {}
