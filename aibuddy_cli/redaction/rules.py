"""Credentials that no provider rule knows: values a sentence, a header or a setting names as one.

A provider's key has a shape (`redaction_catalog` knows some 490 of them); a password has none,
and a key of a provider no rule knows is recognised only by what stands before it. These rules
read that context, in English and Chinese:

- a value after a credential's name: "password is X", "the password for the staging db is X",
  "password is: X", "Password → X", "set the root password to X", "pw: X", "use X as the
  password", `DB_PASS=X`, `"pass": "X"`, `AppSecret: X`, `--password X`, `<password>X</password>`,
  `define('DB_PASSWORD', 'X')`, `<add key="ClearTextPassword" value="X"/>`, `Pwd={X};`, `sig=X`
  in a URL's query, a password alone on the line after its label; 密码是X, 密码是：X, 密码改成了 X,
  密码（X）, 用 X 这个密码, 百度地图 AK 是 X, 口令、密钥、令牌、授权码;
- a login given as a pair: "login is alice / X", "creds: admin/X", "log in as admin with X",
  账号 alice 密码 X, 账号密码都是 admin / X; a `.pgpass` line; a Markdown table's password column;
- the password options of the common command-line tools (`mysql -pX`, `docker login -p X`,
  `sshpass -p X`, `redis-cli -a X`, `keytool -storepass X`, `openssl … -passout pass:X`,
  `unzip -P X`, `sqlcmd -P X`, `curl -u user:X`, `htpasswd -b FILE USER X`, `net user NAME X`,
  `vault login X`), and the credentials code hands to a client (`Client("AC…", "76aa…")`);
- HTTP authorization: `Authorization: Basic|Bearer|Token … X`, `X-Api-Key: X`, "bearer X", a
  session cookie;
- a password in a URL of any scheme (`redis://:X@host`, `https://user:X@host`) or a Go DSN
  (`user:X@tcp(host)`); Telegram and Discord bot tokens and webhooks (and Feishu's);
- PEM private keys, also cut off before their END line, and JWTs;
- a key-shaped token: a vendor's short prefix and a long generated body (`sk-…`, `whsec_…`,
  `hvs.…`), the shape most providers give their keys, whether a rule knows the provider or not (an
  identifier made of words, a UUID, a payment's object id, `pi_` and 24 characters, a publishable
  `pk_…` key or a hash's `sha512-…` are not one); an AWS key id (`AKIA…`), and a secret access key
  beside one;
- where the catalogue cannot be had, the common providers' prefixes (`FALLBACK_PREFIXES`).

Prose stays prose: "I forgot my password", "the token budget", "password: must contain a digit",
`password=${DB_PASSWORD}`, `api_key: <your key here>`, `token = request.headers.get(…)`,
`ghp_XXXX…`, `postgres://user:password@localhost` change nothing, since a value must look like one
(`looks_like_value`). A value runs to the next space or quote; a closing bracket at its end that
it did not open, a CJK mark or a query string's `&name=` ends it, and a sentence's last full stop
is not part of it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import cache, cached_property
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


# --- names -----------------------------------------------------------------------------------

# The words that name a credential, by kind. A name is the end of an identifier or phrase
# (`DB_PASS`, `stripe-webhook-secret`, `GITHUB_TOKEN`, `api key`, `AppSecret`).
_NAMES = {
    # PGPASSWORD, MYSQLPWD: an environment variable's prefix may run into the word.
    PASSWORD: r"(?:[a-z]{2,12}(?=password|passwd|pwd))?"
    r"(?:password|passwd|passphrase|pass[ _-]?code|pass|pwd|pword|pw|p/w|requirepass|masterauth|authtok|psk|"
    r"pre[ _-]?shared[ _-]?key|identified[ \t]+by"
    # the misspellings people type (pasword, passowrd, passwrod, pssword)
    r"|pas{1,2}w(?:or|ro|o|r)d|passowrd|pssword|pasword"
    # numeric codes: a PIN, a door's, an alarm's, a lockbox's
    r"|pin(?:[ _-]?(?:code|number))?"
    r"|(?:door|gate|alarm|keypad|lockbox|lock|garage|building|entry|safe)[ _-]?code)",
    SECRET: r"secret(?:[ _-]?access)?(?:[ _-]?key)?(?:[ _-]?base)?|client[ _-]?secret|signing[ _-]?secret",
    API_KEY: r"api[ _-]?key|apikey|access[ _-]?key(?:[ _-]?id)?|secret[ _-]?id|key|(?:private|signing|"
    r"encryption|master|license|app|client|account|storage|service|consumer|secret|admin|write|auth|"
    r"read|deploy|webhook|sas|shared|aes|routing|integration)[ _-]?key",
    TOKEN: r"(?:auth|access|refresh|api|bearer|session|id|bot|app|personal[ _-]?access|deploy|"
    r"webhook|oauth|csrf|xsrf|security|service|admin|user)?[ _-]?token|auth",
}
# A part of an identifier or phrase that makes the name something else: `max_tokens` is a number,
# `sort_key` a column, `public_key`, `STRIPE_PUBLISHABLE_KEY` and `NEXT_PUBLIC_…` are public,
# `next_token` pages through a listing.
_NOT_SECRET_QUALIFIERS = frozenset(
    """primary foreign sort partition cache hash row idempotency unique composite
    lookup object map dict registry routing range cluster shard group max min num total count next
    prev previous page continuation cancellation hashed""".split()
)
_PUBLIC = frozenset(("public", "publishable"))
# What names a key pair's public half or its fingerprint ("using RSA key A086…", "GPG key ID …"):
# a key then is no secret (a passphrase still is).
_KEY_PAIR_QUALIFIERS = frozenset("rsa dsa ecdsa ed25519 gpg pgp ssh host".split())
_CJK_NAMES = {
    # 密吗: a slip of the same pinyin; 红包口令, 淘口令: a promotion's share code, no secret
    PASSWORD: r"密码|(?<!红包)(?<!淘)(?<!优惠)口令|密碼|授权码|授權碼|密吗|門禁碼",
    SECRET: r"密钥|秘钥|私钥|密鑰|秘鑰|金鑰|金钥",
    TOKEN: r"令牌|權杖|权杖",
}
# Names too short or too common to be one in a sentence ("boarding pass: 14B22X", "the auth
# flow"): in a sentence they need a strong value; in a setting (`DB_PASS=`, `"pass":`, `pw: …`
# at the start of a line) any value.
_SHORT_NAMES = frozenset(("pass", "pw", "pword", "auth", "psk"))
# Names whose value is a credential only when it looks generated: `key: …`, a message queue's
# `routing_key: orders.created` (PagerDuty's is a key).
_LOOSE_NAMES = frozenset(("key", "auth", "routing key", "routingkey", "integration key"))

# --- values ----------------------------------------------------------------------------------

# The value: quoted, or a run of characters up to a space, a quote or a CJK mark.
_QUOTED = (
    r"\"(?P<dq>[^\"\n]{1,4000})\"|'(?P<sq>[^'\n]{1,4000})'|`(?P<bq>[^`\n]{1,300})`|“(?P<cq>[^”\n]{1,300})”"
)
# (A Chinese character ends it too: "password 密码需要至少8位" holds no value.)
_RUN = (
    r"(?P<run>(?:[^\s\"'`，。；、！？」』”）】\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]|(?<=\w)'(?=\w)){1,4000})"
)  # (an apostrophe between letters is the value's: Har'bor92)
# A connection string quotes a value holding ";" in braces: `Pwd={P&*;vM@fy89}` (ODBC).
_BRACED = r"\{(?P<brace>[^{}\n]{1,300})\}(?=;|\"|'|$)"
_VALUE = rf"(?:{_QUOTED}|{_BRACED}|{_RUN})"
_CJK_QUOTED = r"[「『“\"'](?P<dq>[^」』”\"'\n]{1,300})[」』”\"']"
# In a Chinese sentence a password is a run of ASCII, possibly with Chinese characters in it
# (春眠lg#19晓): `looks_like_value` then asks for an ASCII digit or symbol too.
_CJK_RUN = (
    r"(?P<run>[\u4e00-\u9fff]{0,3}[!-~](?:[!-~]|[\u4e00-\u9fff](?=[\u4e00-\u9fff]{0,2}[!-~])){0,3999}"
    r"(?:[\u4e00-\u9fff](?![\u4e00-\u9fff]))?)"
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
    least minimum maximum length characters manager managers policy policies rules rule field
    fields prompt dialog screen page form link links email emails reset protected-mode request
    requests expiry expires expired rotation rotated strength hint hints hash hashes hashed
    stored changed updated format formats string strings value values variable variables
    flow flows header headers method methods provider providers server servers""".split()
)
# A value that stands for one (a template's, a document's), never one itself: it starts as a
# template, a format or a shell's substitution does (`{{ token }}`, `${X:?}`, `%(password)s`,
# `$(vault read …)`), is a tag (`<your key>`), a variable (`$DB_PASSWORD`, `$1`), a mask
# (`****`, `xxxx`, `…`), a path (`./db-password.txt`), a stand-in (`YOUR_API_KEY_HERE`, AWS's
# `…EXAMPLE…`) or the name of what it stands for (`user:password@`, `PASS`).
_PLACEHOLDER = re.compile(
    r"^(?:\{|%\(|\$\{|\$\(|<[^<>]*>$|<[A-Za-z _-]+$|\([a-z ]+\)?$|![a-z]+$)"  # (sensitive value), !vault
    r"|^(?:\$(?:[A-Z_]+|[a-z_]+)|\$\d+|\[[^\[\]]*\]|\*+|•+|x{3,}|X{3,}|\.{3,}|…+)$"
    r"|^[*•xX]{4,}[A-Za-z0-9]{0,6}$"  # ****************79MD: a mask that shows the last few
    r"|^(?:[A-Za-z][a-z]{3,}-){2,6}[0-9a-f]{32,128}$"  # node-modules-Linux-<sha256>: a hash after words
    r"|^[A-Z][a-z]+-[A-Z][A-Za-z]+$"  # Read-Host, ConvertTo-SecureString: a PowerShell command
    r"|^(?:\.{1,2}/|~/|//)|^/[\w.-]+(?:/[\w.-]+)+$"  # ./db-password.txt, ~/.pgpass, a URL's //host
    r"|EXAMPLE|(?i:^(?:your|my|the|insert|enter|put)[_ -]|_here$|placeholder|redacted|changeme|"
    r"^(?:password|passwd|pass|pwd|secret|token|api[_-]?key|key|user|username|none|null)$)"
)
# The part after a vendor's prefix that is a mask rather than a key: `ghp_XXXX…`, `sk-****abcd`.
_MASKED = re.compile(r"^[A-Za-z0-9]{1,12}(?:[_.-][A-Za-z0-9]{1,10}){0,2}[_.-]([xX*•.#0]{4,})")
# Code that reads a value from somewhere, never the value: `process.env.API_KEY`,
# `getpass.getpass(…)`, `os.environ["X"]`, `config.get(…)` (names, not generated strings: a
# part of 25 characters or with three digits is a key's, `dp.st.prd.iaR3HIJfn2…`).
_IDENTIFIER = r"[A-Za-z_](?:[A-Za-z_]|[0-9](?![0-9]*[A-Za-z_]*[0-9][A-Za-z_]*[0-9])){0,23}"
_EXPRESSION = re.compile(rf"^{_IDENTIFIER}(?:(?:\.{_IDENTIFIER})+$|(?:\.{_IDENTIFIER})*\s*[(\[])")
# A key its vendor publishes by design (Stripe's and Mapbox's `pk_…`/`pk.…`), or the value of a
# setting whose name says it is public (`NEXT_PUBLIC_POSTHOG_KEY=`, `STRIPE_PUBLISHABLE_KEY=`).
_PUBLISHED = re.compile(r"^pk[_.]")
_PUBLIC_SETTING = re.compile(r"(?i)[\w.-]*(?:public|publishable)[\w.-]*[\"']?[ \t]*(?:=|:)[ \t]*[\"'`]?$")


_NUMERIC_CODE = re.compile(r"\d{4,10}[#*]?")
_TRAILING_CJK = re.compile(r"[\u4e00-\u9fff]+$")
_LINK_DEFINITION = re.compile(r"[ \t]*\[[^\]\n]+\]:[ \t]*(?:\n|$)")
_PAGE_ANCHOR = re.compile(r"\.[a-z]{2,5}#")  # chapter.html#compare: a link, not a password with a #


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_WORDISH = re.compile(r"[a-z]{4,}|[A-Z]{4,}|[A-Z][a-z]{3,}")


def _class(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.islower() else 2 if char.isupper() else 3


def random_looking(value: str, *, least: int = 16) -> bool:
    """Whether value looks generated (a key) rather than written (an identifier, a word): `least`
    characters or more, a digit or both cases, and either most of its letters outside word-like
    runs or a turn between digit and letter or from lower to upper case at every fourth character
    (`pE9XkfTiyVZq5oXK`, `WXLJS9j6Kr1Z…`, a hex digest, a UUID; not `user_profile_settings_v2`)."""
    if len(value) < least:
        return False
    letters = sum(c.isalpha() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (mixed or any(c.isdigit() for c in value)) or letters * 6 < len(value):
        return False  # no digit nor both cases; or mostly digits (a number, a time, an analytics id)
    wordish = sum(len(run) for run in _WORDISH.findall(value))
    if letters == 0 or wordish / letters < 0.5:
        return True
    # Turns a writer makes too (a capital starting a word: upper to lower) do not count.
    classes = [_class(c) for c in value]
    pairs = zip(classes, classes[1:], strict=False)
    turns = sum(1 for a, b in pairs if a != b and 3 not in (a, b) and (a, b) != (2, 1))
    return turns / len(value) >= 0.25


def placeholder(value: str, quoted: bool) -> bool:
    """Whether value stands for a credential instead of being one (or is one published on purpose).
    Markdown around it (`` `secret` ``, **token**) is not part of it."""
    if len(value) > 2 and value[0] == value[-1] and value[0] in "`*_":
        value = value.strip("`*_") or value  # `secret`, **token**: Markdown around a stand-in
    if _PLACEHOLDER.search(value) or _MASKED.match(value) or _PUBLISHED.match(value):
        return True
    return not quoted and _EXPRESSION.match(value) is not None


def published_setting(text: str, start: int) -> bool:
    """Whether the value at start is a setting's whose name says it is public
    (`NEXT_PUBLIC_POSTHOG_KEY=`, `STRIPE_PUBLISHABLE_KEY: `)."""
    return _PUBLIC_SETTING.search(text, text.rfind("\n", 0, start) + 1, start) is not None


def strong(value: str) -> bool:
    """A value that can only be a password or a key, whatever words surround it: 8 characters or
    more with letters and digits."""
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def looks_like_value(
    value: str, kind: str, separator: str, quoted: bool, *, bare_name: bool = False
) -> bool:
    """Whether the word after a credential's name is a value, not the rest of a sentence.
    separator is what stood between them: ":" (and `=`, `->` …), "is" (a verb), or " " (nothing)."""
    if not value or value.startswith(MARK) or placeholder(value, quoted):
        return False
    if value.lower().rstrip("?!.") in _PROSE or len(set(value)) == 1:
        return False
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c not in "-'’" for c in value)
    mixed = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if kind == PASSWORD and _NUMERIC_CODE.fullmatch(value) and (separator != " " or len(value) >= 6):
        return True  # 9125, 680446#: a PIN or a door's code (the names that take them say so)
    if any("\u4e00" <= c <= "\u9fff" for c in value) and not (has_digit and (has_symbol or mixed)):
        return False  # 请联系管理员 is an answer; 春眠lg#19晓 a password
    if kind == PASSWORD:
        if len(value) < 4:
            return False
        if separator == " " and not quoted:
            return len(value) >= 6 and has_digit and has_alpha
        if separator == "is" and not quoted:
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


# --- patterns --------------------------------------------------------------------------------

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

# A name starts after a letter or digit no more, or where camelCase turns (`AppSecret`).
_EDGE = r"(?:(?<![A-Za-z0-9])|(?-i:(?<=[a-z])(?=[A-Z])))"
# What stands between a name and its value.
_SEP = (
    r"(?P<sep>[ \t]*(?::=|=>|->|→|—|–|👉|➡️?|[:=：])[ \t]*"  # password: X, pw 👉 X
    r"|[ \t]+-[ \t]+"  # Pass - X
    r"|[ \t]+(?:(?:was[ \t]+|is[ \t]+|been[ \t]+)?(?:set|changed|reset)[ \t]+to)[ \t]+"  # password set to X
    r"|[ \t]*[:：][ \t]*\n[ \t]*(?=\S+[ \t]*(?:\n|$))"  # Password:⏎X (X alone on its line, and strong)
    r"|[ \t]+(?:is|was|are|=)(?:[ \t]+(?:actually|now|still|just|simply|currently))?"
    r"(?:[ \t]*[:：][ \t]*|[ \t]+)"  # password is X, password is: X, the password is actually X
    r"|'s[ \t]+|[ \t]+(?:to|into)[ \t]+"  # my password's X; set the root password to X
    r"|(?<=[\"'])[ \t]*,[ \t]*(?=[\"'])"  # define('DB_PASSWORD', 'X'), setenv("API_KEY", "X")
    r"|[ \t]*(?:是|为|為)[ \t]*[:：]?[ \t]*"  # password是X
    r"|[ \t]+)"  # the root password Winter2024!, aws secret key X (a value that looks like one)
)
# The verbs that, in Chinese, set a password to a value: 密码是 X, 密码改成了 X, 密码已经设为 X.
_CJK_SETS = (
    r"(?:我|已经|已|都|就|也|现在|目前|刚)?(?:是|为|為|设置为|設置為|设为|設為|设置成|设成|設成|改成|改为|改為|换成|"
    r"換成|换为|变成|變成|用的是|👉)了?"
    r"|(?:改了|换了|更新了)[，,][ \t]*新的?(?:是|为)"  # 密码改了，新的是X
)

# Command-line tools and the options that take a password (or token) as their next word.
_CLI_SPACED = (
    r"(?:(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm(?:[ \t]+registry)?|oc|az|cf|"
    r"gh)[ \t]+login|sshpass|mongosh|mongo|mongodump|mongorestore|mongoexport|mongoimport|cqlsh|"
    r"rabbitmqadmin|influx|smbclient|ldapsearch|ldapmodify|ldapadd)\b[^\n|;&]{0,200}?[ \t]"
    r"(?:-p|-w|--password|--pass)[ \t=]+"
    r"|\bredis-cli\b[^\n|;&]{0,200}?[ \t](?:-a|--pass)[ \t=]+"
    r"|(?<![\w-])-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)[ \t]+"
    r"|(?<![\w-])-(?:passout|passin|pass)[ \t]+(?:pass|env):"
    r"|\b(?:unzip|zip|7z|7za|unrar|rar|sqlcmd|bcp|osql|isql)\b[^\n|;&]{0,200}?[ \t]-P[ \t]*"
    r"|\bvault[ \t]+login[ \t]+(?:-[\w-]+(?:=\S+)?[ \t]+)*(?!-)"
    r"|\bhtpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+(?:-[a-zA-Z]+[ \t]+)*\S+[ \t]+\S+[ \t]+"
    r"|\bnet[ \t]+user[ \t]+\S+[ \t]+(?!/)"
    r"|\brabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+"
    r"|\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+"
    r"|\bConvertTo-SecureString[ \t]+(?:-String[ \t]+)?(?=[\"'])"
)


def _name_alternatives() -> str:
    return "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _NAMES.items())


class _Rules:
    """The patterns, each compiled the first time a text needs it: a sentence with no credential's
    name in it never pays for the rules that read names (compiling all of them costs 40 ms)."""

    @cached_property
    def assignment(self) -> re.Pattern[str]:
        # A credential's name (the end of an identifier or phrase: what qualifies it is read in Python),
        # possibly quoted or bracketed ("client secret）是 X") before its separator.
        return re.compile(
            rf"(?i){_EDGE}(?P<key>{_names()})(?![A-Za-z0-9])[\"')）\]]{{0,2}}"
            rf"(?:[ \t]*[（(][^()（）\n]{{1,24}}[)）])?{_SEP}{_VALUE}"
        )

    @cached_property
    def phrase(self) -> re.Pattern[str]:
        # "the password for the staging db is X", "token for the metrics endpoint -> X"
        return re.compile(
            rf"(?i){_EDGE}(?P<key>(?:{_names()}))s?[ \t]+(?:for|of|to|on|at|in)[ \t]+"
            r"(?:[^\s.,;:!?。，]{1,30}[ \t]+){0,6}?[^\s.,;:!?。，]{1,30}"
            r"(?P<sep>[ \t]*(?:[:=：]|->|→|—|–)[ \t]*|[ \t]+(?:is|was)(?:[ \t]*[:：][ \t]*|[ \t]+))" + _VALUE
        )

    @cached_property
    def use_as(self) -> re.Pattern[str]:
        return re.compile(
            rf"(?i)\b(?:use|used|using|try|set it to|changed it to)[ \t]+{_VALUE}[ \t]+as[ \t]+"
            rf"(?:the|my|your|our|a|its)?[ \t]*(?:[\w-]+[ \t]+){{0,3}}?(?P<key>{_names()})\b"
        )

    @cached_property
    def pair(self) -> re.Pattern[str]:
        # "login is alice / X", "creds for the router: admin/X", "credentials: alice:X",
        # "log in as admin with X" (a user and a password: the second is the password)
        return re.compile(
            r"(?i)\b(?:(?:login|log-in|credentials|creds|account|acct|"
            r"user(?:name)?[ \t]*(?:/|and|&)[ \t]*pass(?:word)?)"
            r"(?:[ \t]+(?:for|of|to|on)[ \t]+(?:[^\s:/]{1,30}[ \t]+){0,4}?[^\s:/]{1,30})?"
            r"(?:[ \t]+(?:is|are|=)[ \t]*[:：]?|[ \t]*(?:[:=：]|->|→))[ \t]*"
            r"[^\s/:,]{1,64}(?:[ \t]*(?:/|,)[ \t]*|:)"
            r"|log[ \t-]?in[ \t]+as[ \t]+\S{1,64}[ \t]+(?:with|using)[ \t]+(?:(?:the[ \t]+)?password[ \t]+)?)"
            + _VALUE
        )

    @cached_property
    def flag(self) -> re.Pattern[str]:
        return re.compile(rf"(?i)(?<![\w-])--?(?P<key>(?:[a-z0-9]+-)?(?:{_names()}))(?:=|[ \t]+)" + _VALUE)

    @cached_property
    def xml(self) -> re.Pattern[str]:
        return re.compile(
            rf"(?i)<(?P<key>(?:[a-z0-9]+[_-])?(?:{_names()}))>(?P<run>[^<\s]{{1,300}})</(?P=key)>"
        )

    @cached_property
    def query_signature(self) -> re.Pattern[str]:
        # A signed URL's signature (Azure SAS `sig=`, S3's `X-Amz-Signature=`) is its credential.
        return re.compile(
            r"(?i)[?&#](?:sig|signature|x-amz-signature|x-goog-signature|appid|app_id|ak|oobcode|code)="
            r"(?P<run>[^&\s\"'#]{16,})"
        )

    @cached_property
    def cjk(self) -> re.Pattern[str]:
        return re.compile(
            rf"(?:{_cjk_names()})(?:[ \t]*的)?(?:[ \t]*[（(][^()（）\n]{{1,24}}[)）])?[ \t]*"
            rf"(?P<sep>(?:{_CJK_SETS}|：|:|=)+(?:[ \t]*\n)?|[ \t]+|[（(](?=[!-~]{{4,300}}[）)]))[ \t]*"
            rf"(?:{_CJK_QUOTED}|{_CJK_RUN})"
        )

    @cached_property
    def cjk_pair(self) -> re.Pattern[str]:
        return re.compile(
            r"(?:(?:账号|帐号|賬號|用户名|用戶名|用户|用戶)[ \t\u3000]*[:：]?[ \t\u3000]*[!-~]{1,64}"
            r"[ \t\u3000，,、]*"
            r"(?:密码|口令|密碼)[ \t]*"
            rf"(?P<sep>[:：=]|{_CJK_SETS})?"
            r"|(?:账号|帐号|用户名)?(?:和|与|、)?(?:密码|密碼)(?:分别|都|也)?(?:是|为|：|:)[ \t]*"
            r"[!-~]{1,64}?[ \t]*[/／])"
            rf"[ \t]*(?:{_CJK_QUOTED}|{_CJK_RUN})"
        )

    @cached_property
    def cjk_use(self) -> re.Pattern[str]:
        # 用 X 这个密码登录, "X" 就是数据库的密码
        return re.compile(
            r"(?:用|拿|输入|輸入)[ \t]*(?P<run>[!-~]{4,300}?)[ \t]*(?:这个|這個|作为|作為|当|當)"
            r"(?:[^\s。，]{0,6})?(?:密码|口令|密碼)"
            r"|[“\"「](?P<dq>[!-~]{4,300})[”\"」][ \t]*(?:就是|是|为|為)[^。，\n]{0,12}?(?:密码|口令|密碼)"
        )

    @cached_property
    def header(self) -> re.Pattern[str]:
        return re.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"(?:(?P<scheme>basic|bearer|token|digest|negotiate|ntlm|apikey|api-key|sso-key|ssws|key|"
            r"splunk|dsn|otp|hmac|aws4-hmac-sha256)[ \t]+)?"
            r"(?P<run>[A-Za-z0-9._~+/=:,-]{8,2000})"
            r"|\bx-(?:[a-z0-9]+-)*(?:api-?key|auth-?token|access-?token|token|key|secret)[\"']?[ \t]*"
            r"[:=][ \t]*[\"']?(?P<run2>[A-Za-z0-9._~+/=:-]{8,500})"
        )

    @cached_property
    def bearer(self) -> re.Pattern[str]:
        # "Bearer <token>": the token needs 16 characters and a digit, so "bearer tokens expire" is prose.
        return re.compile(
            r"(?i:\b(?:bearer|ssws))[ \t]+(?=[A-Za-z0-9._~+/-]{0,300}[0-9])(?P<run>[A-Za-z0-9._~+/-]{16,}=*)"
        )

    @cached_property
    def url(self) -> re.Pattern[str]:
        # scheme://user:password@host, the user possibly empty (redis://:password@host)
        return re.compile(
            r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@\"'<>]{0,100}:(?P<run>[^\s@/\"'<>]{1,200})@"
            r"(?=[\w\[])"
        )

    @cached_property
    def curl_user(self) -> re.Pattern[str]:
        return re.compile(
            r"(?:^|[ \t])(?:-u|--user)[ \t=]+[\"']?[^\s:\"'<]{1,64}:(?P<run>[^\s\"']{1,200})"
        )

    @cached_property
    def mysql(self) -> re.Pattern[str]:
        return re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?[ \t](?:-p|--password=)"
            r"(?:'(?P<sq>[^'\n]{1,200})'|\"(?P<dq>[^\"\n]{1,200})\"|(?P<run>[^\s\"']{3,200}))"
        )

    @cached_property
    def cli(self) -> re.Pattern[str]:
        return re.compile(rf"(?:{_CLI_SPACED}){_VALUE}")

    @cached_property
    def pgpass(self) -> re.Pattern[str]:
        # ~/.pgpass: host:port:database:user:password
        return re.compile(
            r"(?m)^[A-Za-z0-9.*_-]*[A-Za-z.*][A-Za-z0-9.*_-]*:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<run>\S+)$"
        )

    @cached_property
    def pem(self) -> re.Pattern[str]:
        return re.compile(
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=:-]{8,})*)"
        )

    @cached_property
    def jwt(self) -> re.Pattern[str]:
        return re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")

    @cached_property
    def key_shaped(self) -> re.Pattern[str]:
        # A vendor's prefix (`sk-`, `sk-proj-`, `hf_`, `whsec_`, `dop_v1_`, `hvs.`) and a long generated
        # body: the shape most providers give their keys, whether or not a rule knows the provider.
        return re.compile(
            r"(?<![A-Za-z0-9_+/.-])(?P<prefix>[a-z][a-z0-9]{1,9}(?:[_.-][a-z0-9]{2,10}){0,2}[_.-])"
            r"(?P<body>[A-Za-z0-9_-][A-Za-z0-9_.-]{19,600})(?<!\.)(?![A-Za-z0-9_+/=-])"
        )

    @cached_property
    def aws_key_id(self) -> re.Pattern[str]:
        return re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?![A-Za-z0-9])")

    @cached_property
    def shaped_token(self) -> re.Pattern[str]:
        # Bot tokens of documented shapes that the catalogue reports only beside the provider's name:
        # Telegram's (the bot's id, a colon, 35 characters from AA) and Discord's (three dotted parts).
        return re.compile(
            r"(?:(?<=bot)|(?<![A-Za-z0-9_:-]))(?:(?P<telegram>\d{8,10}:AA[A-Za-z0-9_-]{33})"
            r"|(?P<google>1//0[A-Za-z0-9_-]{40,300})"
            r"|(?P<discord>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}))(?![A-Za-z0-9_-])"
        )

    @cached_property
    def webhook(self) -> re.Pattern[str]:
        # Webhook URLs whose path is their secret, of the hosts the catalogue's rules miss in a URL.
        return re.compile(
            r"\bhttps?://(?:discord(?:app)?\.com/api/webhooks/\d{5,25}/(?P<discord>[A-Za-z0-9_-]{40,100})"
            r"|api\.telegram\.org/(?:file/)?bot(?P<telegram>\d{5,16}:[A-Za-z0-9_-]{30,40})"
            r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/(?P<feishu>[0-9a-f-]{36})"
            r"|[\w-]+\.webhook\.office\.com/webhookb2/(?P<teams>[0-9a-f@/-]{40,200}IncomingWebhook/[0-9a-f/-]{32,80}))"
        )

    @cached_property
    def aws_secret_beside(self) -> re.Pattern[str]:
        # An AWS secret access key given beside its key id (or what is left of it once redacted).
        return re.compile(
            r"(?:(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}|\[redacted: api key\])"
            r"[^\n]{0,40}?(?<![A-Za-z0-9/+=])(?P<run>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        )

    @cached_property
    def app_password(self) -> re.Pattern[str]:
        # Google's app passwords: four groups of four letters ("abcd efgh ijkl mnop").
        return re.compile(
            rf"(?i){_EDGE}(?:password|passwd|授权码|密码)[^\n]{{0,40}}?(?:[:：是为]|[ \t]is)[ \t]*"
            r"(?P<run>[a-z]{4}[ \t-][a-z]{4}[ \t-][a-z]{4}[ \t-][a-z]{4})(?![a-z])"
        )

    @cached_property
    def credential_call(self) -> re.Pattern[str]:
        # Code that hands a credential to a client: `Client("AC…", "76aa…")`,
        # `credential.Credential("AKID…", "9xrY…")`, `cohere.ClientV2("uHbD…")`.
        return re.compile(
            r"(?i)\b[\w.]*(?:client|credentials?|auth|login|connect|session)(?:v\d+)?[ \t]*\("
            r"(?P<args>[^()\n]{0,400})\)"
        )

    @cached_property
    def key_value_attributes(self) -> re.Pattern[str]:
        # .NET and NuGet settings: <add key="ClearTextPassword" value="X" />
        return re.compile(
            rf"(?i)\bkey=[\"'](?:[\w.-]*?)(?P<key>{_names()})[\"'][ \t]+"
            r"value=[\"'](?P<run>[^\"'\n]{1,300})[\"']"
        )

    @cached_property
    def dsn(self) -> re.Pattern[str]:
        # Go's MySQL DSN: user:password@tcp(host:port)/db
        return re.compile(r"(?<![\w/:])[\w.-]{1,64}:(?P<run>[^\s@/\"':]{1,200})@(?:tcp|unix|udp)\(")

    @cached_property
    def cookie(self) -> re.Pattern[str]:
        # A request's cookies: a session id or CSRF token in one opens the account.
        return re.compile(r"(?im)(?:^|[\s'\"])(?:set-)?cookie:[ \t]*(?P<cookies>[^\n'\"]{1,4000})")

    @cached_property
    def cjk_access_key(self) -> re.Pattern[str]:
        # 百度地图 AK 是 X, SK：X — Chinese clouds' names for an access key and its secret
        return re.compile(
            r"(?<![A-Za-z0-9])(?P<name>AK|SK|AccessKey|SecretKey|Secret ?Key|Access ?Key)(?:[ \t]*(?:ID|Id))?"
            r"[ \t]*(?:是|为|為|：|:|=)[ \t]*(?P<run>[A-Za-z0-9/+=_-]{16,200})"
        )

    @cached_property
    def next_line(self) -> re.Pattern[str]:
        # "Password for the elastic user (reset with …):" and the password alone on the next line
        return re.compile(
            rf"(?i){_EDGE}(?P<key>{_names()})\b[^\n]{{0,120}}:[ \t]*\n"
            r"[ \t]*(?P<run>\S{8,4000})[ \t]*(?:\n|$)"
        )

    @cached_property
    def json_pair(self) -> re.Pattern[str]:
        # A HAR's or Postman's header list, {"name": "Authorization", "value": "Basic …"}, and
        # Terraform's outputs, "db_password": {"sensitive": true, …, "value": "…"}.
        return re.compile(
            r"(?i)\"(?P<field>name|key|keyName|key_name)\"[ \t]*:[ \t]*\"(?P<key>[\w .:-]{1,60})\"[ \t]*,"
            r"(?:\s{0,40}\"\w{1,30}\"[ \t]*:[ \t]*\"[^\"\n]{0,80}\"[ \t]*,){0,3}"  # other fields between
            r"\s{0,40}\"value\"[ \t]*:[ \t]*"
            r"\"(?P<dq>[^\"\n]{1,4000})\""
            r"|\"(?P<outer>[\w.-]{1,60})\"[ \t]*:[ \t]*\{[^{}]{0,300}?\"value\"[ \t]*:[ \t]*"
            r"\"(?P<nested>[^\"\n]{1,4000})\""
        )

    @cached_property
    def header_name(self) -> re.Pattern[str]:
        return re.compile(
            r"(?i)^(?:(?:proxy-)?authorization|cookie|set-cookie|"
            r"x-(?:[a-z0-9]+-)*(?:api-?key|auth-?token|access-?token|token|key|secret))$"
        )

    @cached_property
    def pem_like(self) -> re.Pattern[str]:
        # Key blocks that are no PEM private key: OpenVPN's static key, an SSH2 private key.
        return re.compile(
            r"-----BEGIN (?:OpenVPN Static key V\d|SSH2 ENCRYPTED PRIVATE KEY|[A-Z ]*SECRET KEY)-----"
            r"[\s\S]{0,20000}?-----END [^-\n]{1,60}-----"
        )

    @cached_property
    def app_password_after_email(self) -> re.Pattern[str]:
        # postfix's sasl_passwd: [smtp.gmail.com]:587 user@gmail.com:abcd efgh ijkl mnop
        return re.compile(r"[\w.+-]+@[\w.-]+:(?P<run>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})(?![a-z])")

    @cached_property
    def codes(self) -> re.Pattern[str]:
        # What a person keeps to get back into an account: backup and recovery codes, a TOTP setup
        # key, a wallet's recovery phrase (the codes follow their label, on its line or the next).
        return re.compile(
            r"(?i)(?:backup|recovery|rescue|emergency|one-time|single-use)[ -]?codes?"
            r"|恢复码|备用码|备份码|救援码"
            r"|recovery[ -]?key"
            r"|(?:setup|secret|totp|2fa|mfa|authenticator)[ -]?key|two-factor[ -]secret"
            r"|(?:recovery|seed|secret|mnemonic|backup)[ -]?(?:phrase|words)|mnemonic|助记词|恢复短语"
        )

    @cached_property
    def code_item(self) -> re.Pattern[str]:
        return re.compile(
            r"(?<![\w-])(?:\d{6}(?:-\d{6}){3,7}|[0-9a-f]{4,6}-[0-9a-f]{4,6}|\d{4}[ -]?\d{4}|\d{6,10}"
            r"|[A-Z0-9]{4}-[A-Z0-9]{4}(?:-[A-Z0-9]{4})*)(?![\w-])"
        )

    @cached_property
    def totp_key(self) -> re.Pattern[str]:
        return re.compile(
            r"(?<![a-z2-7])(?:[a-z2-7]{4}[ \t]){3,15}[a-z2-7]{4}(?![a-z2-7])"  # base32, in groups of four
            r"|(?<![A-Z2-7])[A-Z2-7]{16,64}(?![A-Z2-7])"
        )

    @cached_property
    def phrase_words(self) -> re.Pattern[str]:
        return re.compile(r"(?<![a-z])(?:[a-z]{3,8}[ \t,]+){11,23}[a-z]{3,8}(?![a-z])")

    @cached_property
    def command_line(self) -> re.Pattern[str]:
        # A command that prints a credential (`cat …/master.key`, `terraform output -raw db_password`,
        # `kubectl get secret … | base64 -d`, an agent's `Bash(cat auth.txt)`) and what it printed:
        # up to three lines after it that are one word each.
        return re.compile(
            r"(?im)^[ \t]*(?:\$|#|>|❯|PS[^>\n]{0,40}>|●[ \t]*Bash\()[^\n]*"
            r"(?!.*\.enc\b)(?:pass|secret|key|token|credential|auth|psk|\.pem|login:ci)[^\n]*\n"
            r"(?P<output>(?:[ \t]*(?:⎿[ \t]*)?[^\s$#>❯]\S{5,4000}[ \t]*(?:\n|$)){1,3})"
        )

    @cached_property
    def short_pair(self) -> re.Pattern[str]:
        # What a login is given as without a password's name: `u: bob p: X`, "wp-admin: admin /
        # Tapir!8498", "Alarm app login: maya@… – Orchid_9187 –", 值班账号 duty01 / Umber&5055
        # (the second of a pair is the password when it looks like one: letters, digits, a symbol).
        return re.compile(
            r"(?i)(?:\bu(?:ser)?:[ \t]*\S{1,64}[ \t,;]+p(?:ass)?:[ \t]*"
            r"|(?:^|[ \t])[\w.@-]{1,40}:[ \t]*[\w.@+-]{1,64}[ \t]+(?:/|–|—)[ \t]+"
            r"|(?:账号|帐号|賬號|用户名)[ \t:：]*[\w.@+-]{1,64}[ \t]*[/／][ \t]*)"
            r"(?P<run>[^\s，。,;]{6,200})"
        )

    @cached_property
    def wifi(self) -> re.Pattern[str]:
        # A Wi-Fi QR code's password (WIFI:T:WPA;S:…;P:…;;), and "the wifi … code/password is X".
        return re.compile(
            r"WIFI:(?:[^;\n]*;)*?P:(?P<qr>(?:\\;|[^;\n])+);"
            r"|(?i:wi-?fi)[^\n]{0,80}?\b(?:code|password|pw|key|pass)[ \t]+(?:is|:)[ \t]+"
            r"(?P<run>[^\s,.;!?]{6,100})"
        )

    @cached_property
    def link_token(self) -> re.Pattern[str]:
        # A link that signs its holder in: the token a password reset, a magic sign-in or an email
        # confirmation puts in its path (Django's /reset/<uid>/<token>/, Laravel's /password/reset/<token>).
        return re.compile(
            r"(?i)https?://[^\s\"'<>]*?/(?:reset|password[-_/]reset|reset[-_]password|magic[-_]?link|"
            r"verify|confirm|activate|login/token)/(?:[\w-]{1,8}/)?(?P<run>[\w-]{20,200})"
        )

    @cached_property
    def key_pair(self) -> re.Pattern[str]:
        # 七牛的 AK/SK 分别是 X 和 Y, "access key / secret key: X, Y"
        return re.compile(
            r"(?i)\b(?:AK|access[ _-]?key)[ \t]*/[ \t]*(?:SK|secret[ _-]?key)[ \t]*(?:分别)?[ \t]*"
            r"(?:是|为|:|：|=)[ \t]*"
            r"(?P<ak>[A-Za-z0-9/+_=-]{16,200})[ \t]*(?:和|及|与|/|,|，|、|and)[ \t]*"
            r"(?P<sk>[A-Za-z0-9/+_=-]{16,200})"
        )

    @cached_property
    def chat_line(self) -> re.Pattern[str]:
        # One message of a chat log, its sender or time stripped: "[10:02] Tom: X", "张伟 10:41", "X".
        return re.compile(
            r"^[ \t]*(?:\[\d{1,2}:\d{2}(?::\d{2})?\][ \t]*[^:：\n]{1,30}[:：][ \t]*)?(?P<message>[^\n]*)$"
        )

    @cached_property
    def fallback(self) -> list[tuple[str, str, re.Pattern[str]]]:
        return [
            (kind, hint, re.compile(_EDGE + body + r"(?![A-Za-z0-9])"))
            for kind, hint, body in FALLBACK_PREFIXES
        ]

    @cached_property
    def quick(self) -> re.Pattern[str]:
        return re.compile(
            r"(?i)pass|pwd|pw|secret|key|token|auth|bearer|://|log|cred|-u|-p|-a|-w|sig|mysql|private|eyj|"
            r"vault|user|account|acct|:\d|client|credential|connect|cookie|value=|@tcp\(|(?-i:AK|SK)|psk|identified|"
            r"pin|code|ssws|wifi|p/w|pssword|pasw|reset|(?-i:\bu:|\bp:)|"
            r"密|钥|鑰|口令|令牌|權杖|权杖|授权码|账号|帐号|用户|門禁"
        )


@cache
def compiled() -> _Rules:
    return _Rules()


@cache
def _names() -> str:
    return _name_alternatives()


@cache
def _cjk_names() -> str:
    return "|".join(f"(?P<k_{kind.replace(' ', '_')}>{body})" for kind, body in _CJK_NAMES.items())


# --- finding ---------------------------------------------------------------------------------


def _matches(
    pattern: re.Pattern[str], text: str, windows: list[tuple[int, int]] | None = None
) -> Iterator[re.Match[str]]:
    """Every match, overlapping ones too: after a match, the search goes on just past the name (or
    the start) it began with, so a match that is then refused ("AccessKey Secret: X" read as
    "AccessKey" and the value "Secret") does not hide the one after it. windows: the parts of the
    text to search (`_windows`), all of it when None."""
    for first, last in windows if windows is not None else [(0, len(text))]:
        at = first
        while at <= last:
            match = pattern.search(text, at, last)
            if match is None:
                break
            yield match
            key = match.groupdict().get("key")
            at = match.end("key") if key else match.start() + 1
            at = max(at, match.start() + 1)


def _windows(text: str, low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """The lines of text that hold one of words, each with the line after it (a value may stand
    there), merged where they touch: the patterns that read a credential's name search only these,
    so a long text with few such lines costs little."""
    spans: list[tuple[int, int]] = []
    for word in words:
        at = low.find(word)
        while at >= 0:
            start = low.rfind("\n", 0, at) + 1
            end = low.find("\n", at)
            end = len(low) if end < 0 else low.find("\n", end + 1)
            spans.append((start, len(low) if end < 0 else end))
            at = low.find(word, (len(low) if end < 0 else end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _kind_of(groups: dict[str, str | None]) -> str:
    return next((k[2:].replace("_", " ") for k, v in groups.items() if k.startswith("k_") and v), PASSWORD)


def _value(match: re.Match[str]) -> tuple[str, int, bool]:
    """The value a match holds, where it starts, and whether it was quoted."""
    groups = match.groupdict()
    for name in ("dq", "sq", "bq", "cq", "brace"):
        if groups.get(name):
            return groups[name] or "", match.start(name), True
    for name in ("run", "run2"):
        if groups.get(name):
            value, start = _trim(groups[name] or ""), match.start(name)
            emphasis = _EMPHASIS.fullmatch(value)
            if emphasis:  # **Quokka@3742**, ~~old~~, *saffron-0545*: Markdown around the value
                return emphasis.group(2), start + emphasis.start(2), True
            return value, start, False
    return "", match.start(), False


_IDENTIFIER_BEFORE = re.compile(r"([A-Za-z0-9_.-]*?)([A-Za-z0-9]*)([ _.-]?)$")


def _named_away(text: str, match: re.Match[str], value: str, separator: str, kind: str) -> bool:
    """Whether what stands before a credential's name makes it something else (`next_token`,
    `STRIPE_PUBLISHABLE_KEY`, a path's `…:secret:prod/db`), or a short name (`pass`) is a word of
    a sentence rather than a setting's."""
    start = match.start("key")
    if start > 0 and text[start - 1] in ":/":
        return True  # arn:aws:secretsmanager:…:secret:…, a path's /token/
    name_start = start
    while name_start > 0 and (text[name_start - 1].isalnum() or text[name_start - 1] == "_"):
        name_start -= 1
    if text[max(0, name_start - 2) : name_start] == "${" or text[max(0, name_start - 1) : name_start] == "$":
        return True  # ${DB_PASSWORD:?set it}, $DB_PASSWORD: a variable's name, not a setting
    before = _IDENTIFIER_BEFORE.search(text, max(0, start - 60), start)
    identifier, word, joiner = before.groups() if before else ("", "", "")
    parts = {part.lower() for part in re.split(r"[_.-]", identifier + word) if part}
    if parts & _PUBLIC or word.lower() in _NOT_SECRET_QUALIFIERS:
        return True
    if kind == API_KEY and word.lower() in _KEY_PAIR_QUALIFIERS:
        return True
    if "encryptedData:" in text[max(0, start - 400) : start]:
        return True  # a SealedSecret's values are ciphertext, safe in git by design
    if match.group("key").lower().replace(" ", "") not in _SHORT_NAMES:
        return False
    if joiner in ("_", "-", ".") or separator in ("=", ":="):
        return False  # DB_PASS=…, admin-pass: …, pass=…
    if start > 0 and text[start - 1] in "\"'":
        return False  # "pass": "…"
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip() == "" and match.group("key").lower() != "auth":
        return False  # pw: … at the start of a line
    return not random_looking(value, least=8) if match.group("key").lower() == "auth" else not strong(value)


# A cookie whose name says it holds a session or a token (sessionid, PHPSESSID, connect.sid,
# csrftoken, remember_token, auth): its value opens the account, however it looks.
_SESSION_COOKIE = re.compile(r"(?i)sess|sid$|token|auth|csrf|xsrf|jwt|remember|login")
# A chat's header line: "张伟 10:41", "2024-03-12 10:41:05 张伟", "[09:15] Tom:".
_CHAT_HEADER = re.compile(
    r"(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}(?::\d{2})?[ \t]+\S{1,20}|\S{1,20}[ \t]+\d{1,2}:\d{2}(?::\d{2})?"
)
_EMPHASIS = re.compile(r"(\*\*|~~|\*|_|`)(.+?)\1")
# A line that names a value still to come: it ends in the name or in what announces the value
# ("the staging pw is", 服务器密码是, "what's the jenkins password again?", "and the pw").
_LABEL_END = re.compile(
    r"(?i)(?:\b(?:is|are|was|again|here)|[:：=?？]|是|为|為|发你|如下"
    r"|pass(?:word)?|pw|pwd|passcode|pin|token|key|secret|密码|口令|密钥|令牌)[ \t]*$"
)
_LABEL_ENDINGS = (
    "is", "are", "was", "again", "here", ":", "：", "=", "?", "？", "是", "为", "為", "发你", "如下", "pass",
    "password", "pw", "pwd", "passcode", "pin", "token", "key", "secret", "密码", "口令", "密钥", "令牌",
)  # fmt: skip
_ASSIGNED = re.compile(r"^[A-Z_][A-Z0-9_]*=")  # an environment variable's NAME=
_HEX_BODY = re.compile(r"^[0-9a-f]{32,128}$")
_TABLE_ROW = re.compile(r"(?m)^[ \t]*\|(.*)\|[ \t]*$")
_CSV_ROW = re.compile(r"(?m)^[^\n,|]{1,200}(?:,[^\n,|]{0,200}){1,30}$")
_TABLE_RULE = re.compile(r"^[\s|:-]+$")


def _table_cells(text: str) -> Iterator[RuleFinding]:
    """The cells of a table's column whose header names a credential: a Markdown table
    (`| service | user | password |`, `| 主机 | 账号 | 密码 |`) or a CSV file's lines
    (`Access Key Id,Secret Access Key`)."""
    for rows in (_markdown_rows(text), _csv_rows(text)):
        columns: list[tuple[int, str]] = []
        previous_end = -2
        for start, end, cells in rows:
            if start > previous_end + 1:  # a new table: this row is its header
                columns = _credential_columns([cell for cell, _ in cells])
            elif columns and not all(_TABLE_RULE.match(cell) or not cell.strip() for cell, _ in cells):
                for at, kind in columns:
                    if at < len(cells):
                        cell, offset = cells[at]
                        value = cell.strip()
                        # A cell is a password or a passphrase, not a word ("LDAP", 见密码柜).
                        passphrase = len(value) >= 12 and "-" in value
                        if looks_like_value(value, kind, "is", False) or passphrase:
                            at_value = offset + cell.index(value)
                            yield RuleFinding(kind, at_value, at_value + len(value), "a password column")
            previous_end = end


def _markdown_rows(text: str) -> Iterator[tuple[int, int, list[tuple[str, int]]]]:
    if "|" not in text:
        return
    for row in _TABLE_ROW.finditer(text):
        yield row.start(), row.end(), _split(row.group(1), row.start(1), "|")


def _csv_rows(text: str) -> Iterator[tuple[int, int, list[tuple[str, int]]]]:
    if "," not in text:
        return
    for row in _CSV_ROW.finditer(text):
        yield row.start(), row.end(), _split(row.group(), row.start(), ",")


def _split(line: str, offset: int, separator: str) -> list[tuple[str, int]]:
    cells, at = [], offset
    for cell in line.split(separator):
        cells.append((cell, at))
        at += len(cell) + 1
    return cells


def _credential_columns(header: list[str]) -> list[tuple[int, str]]:
    columns = []
    for at, cell in enumerate(header):
        name = cell.strip()
        english = _table_header_name().fullmatch(name) if name else None
        if english:
            columns.append((at, _kind_of(english.groupdict())))
        elif name and len(name) <= 8 and _holds(name, _CJK_NAME_WORDS):
            columns.append((at, SECRET if "钥" in name or "鑰" in name else PASSWORD))
    return columns


_NAME_WORDS = (
    "pass", "pwd", "pw", "p/w", "pasw", "secret", "key", "token", "auth", "psk", "identified", "pin", "code",
    "pssword",
)  # fmt: skip
_CJK_NAME_WORDS = ("密", "钥", "鑰", "口令", "令牌", "授权码", "授權碼", "權杖", "权杖", "門禁碼")
_CLI_WORDS = (
    "login", "sshpass", "mongo", "cqlsh", "rabbitmq", "influx", "smbclient", "ldap", "redis-cli", "pass",
    "zip", "7z", "rar", "vault", "htpasswd", "net user", "sql", "bcp", "mc ", "securestring",
)  # fmt: skip


def _holds(text: str, words: tuple[str, ...]) -> bool:
    return any(word in text for word in words)


def find(text: str, *, with_fallback: bool) -> Iterator[RuleFinding]:
    """The values these rules see in text, most certain first; they may overlap (the caller joins
    overlapping ones). Each rule runs only on a text holding the words it reads."""
    rules = compiled()
    low = text.lower()
    if "PRIVATE KEY" in text:
        for match in rules.pem.finditer(text):
            yield RuleFinding(PRIVATE_KEY, match.start(), match.end(), "-----BEGIN … PRIVATE KEY-----")
    if "-----BEGIN" in text:
        for match in rules.pem_like.finditer(text):
            yield RuleFinding(PRIVATE_KEY, match.start(), match.end(), "-----BEGIN … KEY-----")
    if "eyJ" in text:
        for match in rules.jwt.finditer(text):
            yield RuleFinding(JWT, match.start(), match.end(), "eyJ…")
    if _holds(text, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")):
        # An AWS key id is half of a pair: the catalogue reports it only beside its secret key,
        # but the id alone names the account and the key to anyone who finds the other half.
        for match in rules.aws_key_id.finditer(text):
            if not placeholder(match.group(), True):  # AWS's documented AKIAIOSFODNN7EXAMPLE
                yield RuleFinding(API_KEY, match.start(), match.end(), f"{match.group()[:4]}…")
    if _holds(text, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "[redacted: api key]")):
        for match in rules.aws_secret_beside.finditer(text):
            if random_looking(match.group("run")):
                yield RuleFinding(SECRET, match.start("run"), match.end("run"), "aws-secret-access-key")
    if ":AA" in text or "." in text or "1//0" in text:
        for match in rules.shaped_token.finditer(text):
            kind = next(name for name in ("telegram", "google", "discord") if match.group(name))
            yield RuleFinding(TOKEN, match.start(), match.end(), f"{kind} token")
    if _holds(low, ("discord", "telegram.org", "feishu", "larksuite", "webhook.office")):
        for match in rules.webhook.finditer(text):
            group = next(name for name in ("discord", "telegram", "feishu", "teams") if match.group(name))
            yield RuleFinding(TOKEN, match.start(group), match.end(group), f"{group} webhook")
    yield from _key_shaped(text)
    if with_fallback:
        for kind, hint, pattern in rules.fallback:
            for match in pattern.finditer(text):
                yield RuleFinding(kind, match.start(), match.end(), f"{hint}…")
    yield from _kept_codes(text, low)
    if rules.quick.search(text) is None:
        return
    yield from _structured(text, low)
    yield from _named(text, low)
    if "\n" in text:
        yield from _printed_by_a_command(text)
        yield from _said_next(text, low)
    if ("|" in text or "," in text) and (_holds(low, _NAME_WORDS) or _holds(text, _CJK_NAME_WORDS)):
        yield from _table_cells(text)


def _key_shaped(text: str) -> Iterator[RuleFinding]:
    for match in compiled().key_shaped.finditer(text):
        prefix, body = match.group("prefix"), match.group("body")
        if placeholder(match.group(), True):
            continue
        dotted = prefix.endswith(".")
        if prefix.startswith("pk") or len(body) < (20 if dotted else 28):
            continue  # pk_…, pk.…: publishable keys, public by design; pi_ and 24: an object's id
        if published_setting(text, match.start()):
            continue
        if len(prefix.strip("_.-")) > 4 and _HEX_BODY.match(body):
            continue  # node-modules-<sha256>: a hash after words (a vendor's hex key has a short prefix)
        separators = body.count("-") + body.count("_") + body.count(".")
        if random_looking(body) and separators <= len(body) // 16:
            yield RuleFinding(API_KEY, match.start(), match.end(), f"{prefix}…")


def _structured(text: str, low: str) -> Iterator[RuleFinding]:
    """Headers, URLs, command lines and configuration files: the credential's place in them."""
    rules = compiled()
    if "authorization" in low or "x-" in low:
        for match in rules.header.finditer(text):
            value, start, _ = _value(match)
            scheme = (match.group("scheme") or "").lower()
            if scheme in ("", "bearer", "token") and not looks_like_value(value, TOKEN, ":", False):
                continue
            run = match.group("run")
            kind = PASSWORD if scheme in ("basic", "digest", "ntlm") else TOKEN if run else API_KEY
            named = f"{scheme.capitalize()} " if scheme else ""
            yield RuleFinding(kind, start, start + len(value), f"Authorization: {named}…" if run else None)
    if "bearer" in low or "ssws" in low:
        for match in rules.bearer.finditer(text):
            yield RuleFinding(TOKEN, match.start("run"), match.end("run"), "Bearer …")
    if _holds(low, ("sig=", "signature=", "appid=", "app_id=", "ak=", "code=")):
        for match in rules.query_signature.finditer(text):
            if random_looking(match.group("run")):
                yield RuleFinding(TOKEN, match.start("run"), match.end("run"), "sig=…")
    everywhere = [(0, len(text))]
    passwords = (
        (everywhere if "://" in text else [], rules.url, "://user:…@"),
        (everywhere if "-u" in text or "--user" in text else [], rules.curl_user, "-u user:…"),
        (everywhere if "mysql" in low or "mariadb" in low else [], rules.mysql, "-p…"),
        (_windows(text, low, _CLI_WORDS), rules.cli, None),
        (everywhere if ":" in text else [], rules.pgpass, ".pgpass"),
        (_windows(text, low, ("password", "passwd", "密码", "授权码")), rules.app_password, None),
        (everywhere if "value=" in low else [], rules.key_value_attributes, None),
        (everywhere if "@tcp(" in low or "@unix(" in low else [], rules.dsn, "user:…@tcp("),
        (_windows(text, low, _NAME_WORDS) if ":\n" in text else [], rules.next_line, None),
    )
    callers = ("client", "credential", "auth", "login", "connect", "session")
    for match in _matches(rules.credential_call, text, _windows(text, low, callers) if "(" in text else []):
        args = match.group("args")
        for literal in re.finditer(r"([\"'])([^\"'\n]{16,300})\1", args):
            if random_looking(literal.group(2)) and not placeholder(literal.group(2), True):
                start = match.start("args") + literal.start(2)
                yield RuleFinding(SECRET, start, start + len(literal.group(2)), "a client's credential")
    for match in rules.cookie.finditer(text) if "cookie" in low else ():
        yield from _cookie_values(match.group("cookies"), match.start("cookies"))
    if '"value"' in low:
        yield from _json_pairs(text)
    for match in rules.short_pair.finditer(text) if _holds(text, (":", "/", "–", "—")) else ():
        value = _trim(match.group("run"))
        if strong(value) and any(not c.isalnum() for c in value) and not placeholder(value, True):
            yield RuleFinding(PASSWORD, match.start("run"), match.start("run") + len(value), "user / …")
    for match in rules.wifi.finditer(text) if _holds(low, ("wifi", "wi-fi")) else ():
        group = "qr" if match.group("qr") else "run"
        value = match.group(group)
        if group == "qr" or strong(value):
            yield RuleFinding(PASSWORD, match.start(group), match.start(group) + len(value), "Wi-Fi")
    for match in rules.link_token.finditer(text) if "://" in text else ():
        token = match.group("run")
        if random_looking(token) or (strong(token) and sum(c.isdigit() for c in token) >= 6):
            yield RuleFinding(TOKEN, match.start("run"), match.end("run"), "a link's token")
    for match in rules.key_pair.finditer(text) if "/" in text else ():
        for group, kind in (("ak", API_KEY), ("sk", SECRET)):
            if random_looking(match.group(group)):
                yield RuleFinding(kind, match.start(group), match.end(group), None)
    if "@" in text:
        for match in rules.app_password_after_email.finditer(text):
            yield RuleFinding(PASSWORD, match.start("run"), match.end("run"), "user@…:…")
    for windows, pattern, hint in passwords:
        for match in _every(pattern, text, windows):
            value, start, quoted = _value(match)
            if pattern is rules.url:
                value = match.group("run").rstrip(".,;")
            if pattern is rules.next_line and not _alone_on_its_line(text, match, value):
                continue
            if pattern is rules.app_password or looks_like_value(value, PASSWORD, ":", True):
                yield RuleFinding(PASSWORD, start, start + len(value), hint)


def _every(pattern: re.Pattern[str], text: str, windows: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
    """pattern's matches in the windows of text, none overlapping (as finditer)."""
    for first, last in windows:
        yield from pattern.finditer(text, first, last)


def _alone_on_its_line(text: str, match: re.Match[str], value: str) -> bool:
    """A value on the line after its label is one when it is strong and no path or link, and the
    label is no Markdown link's (`[the-secret-number]:⏎chapter.html#…`)."""
    label_line = text[text.rfind("\n", 0, match.start()) + 1 : match.start("run")]
    if _LINK_DEFINITION.match(label_line):
        return False
    return _lone_value(value)


def _lone_value(value: str) -> bool:
    """A word alone on its line that can be a password or a key: strong or generated, and no
    path or link (`chapter.html#compare`, `./db-password.txt`)."""
    return (strong(value) or random_looking(value)) and "/" not in value and not _PAGE_ANCHOR.search(value)


def _named(text: str, low: str) -> Iterator[RuleFinding]:
    """Values a sentence or a setting names: after a credential's name, or given as a pair."""
    rules = compiled()
    pairs = (
        (_holds(low, ("login", "log in", "log-in", "cred", "user", "account", "acct")), rules.pair),
        (" as " in low, rules.use_as),
    )
    for needed, pattern in pairs:
        for match in pattern.finditer(text) if needed else ():
            value, start, quoted = _value(match)
            if looks_like_value(value, PASSWORD, "is", quoted):
                yield RuleFinding(PASSWORD, start, start + len(value), None)
    windows = _windows(text, low, _NAME_WORDS)
    named = (rules.assignment, rules.phrase, rules.flag, rules.xml) if windows else ()
    for pattern in named:
        for match in _matches(pattern, text, windows):
            kind = _kind_of(_kinds_in(match.group("key")))
            value, start, quoted = _value(match)
            raw = match.groupdict().get("sep") or "="
            separator = raw.strip() or " "
            if separator.lower().startswith(("is", "was", "are", "是", "为", "為", "'s", "to", "into")):
                separator = "is"
            if pattern is rules.assignment and _named_away(text, match, value, separator, kind):
                continue
            if "\n" in raw and not (strong(value) or random_looking(value)):
                continue  # "Enter password:⏎Connected.": the next line is not the value
            bare = match.group("key").lower().replace("_", " ").replace("-", " ") in _LOOSE_NAMES
            if looks_like_value(value, kind, separator, quoted, bare_name=bare):
                yield RuleFinding(kind, start, start + len(value), None)
    if _holds(text, ("AK", "SK", "Key")) and any("\u4e00" <= c <= "\u9fff" for c in text):
        for match in rules.cjk_access_key.finditer(text):
            if random_looking(match.group("run")):
                kind = SECRET if match.group("name").upper().startswith("S") else API_KEY
                yield RuleFinding(kind, match.start("run"), match.end("run"), None)
    chinese = (rules.cjk, rules.cjk_pair, rules.cjk_use) if _holds(text, _CJK_NAME_WORDS) else ()
    for pattern in chinese:
        for match in _matches(pattern, text):
            groups = match.groupdict()
            kind = _kind_of(groups)
            value, start, quoted = _value(match)
            raw = (groups.get("sep") or "").strip()
            if pattern is not rules.cjk or (raw and raw[-1] in ":：="):
                separator = ":"
            else:
                separator = "is" if raw else " "
            if "授权码" in match.group() or "授權碼" in match.group():
                separator = ":"  # an authorisation code is always a credential, whatever its letters
            if not quoted:  # 184671了: the sentence's particle after an ASCII password is not its
                ascii_only = _TRAILING_CJK.sub("", value)
                if ascii_only and not any("\u4e00" <= c <= "\u9fff" for c in ascii_only):
                    value = ascii_only
            if looks_like_value(value, kind, separator, quoted):
                yield RuleFinding(kind, start, start + len(value), None)


def _json_pairs(text: str) -> Iterator[RuleFinding]:
    """{"name": "Authorization", "value": "Basic …"} in a HAR or a Postman collection, and a
    Terraform output's {"sensitive": true, "value": "…"} under a credential's name."""
    rules = compiled()
    for match in rules.json_pair.finditer(text):
        name = match.group("key") or match.group("outer") or ""
        group = "dq" if match.group("key") else "nested"
        value, start = match.group(group), match.start(group)
        if rules.header_name.match(name):
            if name.lower() in ("cookie", "set-cookie"):
                yield from _cookie_values(value, start)
                continue
            scheme = re.match(r"(?i)(?:basic|bearer|token|digest|apikey|ssws)[ \t]+", value)
            if scheme:
                value, start = value[scheme.end() :], start + scheme.end()
            if looks_like_value(value, TOKEN, ":", True):
                yield RuleFinding(TOKEN, start, start + len(value), f"{name}: …")
        elif (match.group("field") or "").lower() in ("keyname", "key_name"):  # az … keys list: key1, key2
            if random_looking(value):
                yield RuleFinding(API_KEY, start, start + len(value), None)
        elif _whole_name().fullmatch(name.strip()):
            kind = _kind_of(_kinds_in(name.strip()))
            if looks_like_value(value, kind, ":", True, bare_name=_loose(name)):
                yield RuleFinding(kind, start, start + len(value), None)


def _cookie_values(cookies: str, offset: int) -> Iterator[RuleFinding]:
    for pair in re.finditer(r"([^=;\s]{1,100})=([^;\s]{16,4000})", cookies):
        if _SESSION_COOKIE.search(pair.group(1)) or random_looking(pair.group(2)):
            yield RuleFinding(TOKEN, offset + pair.start(2), offset + pair.end(2), "cookie")


def _loose(name: str) -> bool:
    return name.lower().replace("_", " ").replace("-", " ").strip() in _LOOSE_NAMES


def _kept_codes(text: str, low: str) -> Iterator[RuleFinding]:
    """Backup and recovery codes, a TOTP setup key, a wallet's recovery phrase: after their label,
    on its line and the lines that follow until a blank line (at most 30)."""
    labels = (
        "backup", "recovery", "rescue", "emergency", "one-time", "single-use", "setup", "totp", "2fa", "mfa",
        "authenticator", "two-factor", "seed", "mnemonic", "恢复", "备用码", "备份码", "救援码", "助记词",
    )  # fmt: skip
    if not _holds(low, labels):
        return
    rules = compiled()
    for label in _every(rules.codes, text, _windows(text, low, labels)):
        # The rest of the label's line, then the lines after it (blank ones first skipped) up to
        # the next blank line: where a list of codes or a phrase stands.
        end, seen = text.find("\n", label.end()), 0
        end = len(text) if end < 0 else end
        while seen < 30 and end < len(text):
            line_end = text.find("\n", end + 1)
            line_end = len(text) if line_end < 0 else line_end
            if text[end + 1 : line_end].strip() == "":
                if seen:
                    break
            else:
                seen += 1
            end = line_end
        block, offset, kind = text[label.end() : end], label.end(), label.group().lower()
        if "phrase" in kind or "words" in kind or "mnemonic" in kind or "助记词" in kind or "短语" in kind:
            found = [(m.start(), m.end()) for m in rules.phrase_words.finditer(block)]
        elif "recovery key" in kind.replace("-", " "):  # BitLocker's: eight groups of six digits
            items = rules.code_item.finditer(block)
            found = [(m.start(), m.end()) for m in items if m.group().count("-") >= 3]
        elif "key" in kind or "secret" in kind:
            found = [(m.start(), m.end()) for m in rules.totp_key.finditer(block)]
        else:
            found = [(m.start(), m.end()) for m in rules.code_item.finditer(block)]
            found = found if len(found) >= 3 else []  # a list of codes, not a number in a sentence
        for start, stop in found:
            yield RuleFinding(PASSWORD, offset + start, offset + stop, "recovery code")


def _said_next(text: str, low: str) -> Iterator[RuleFinding]:
    """A chat where the password comes in the message after the one that names it ("the staging
    pw is" ⏎ "Puffin?2087", 服务器密码是 ⏎ 张伟 10:41 ⏎ KnXnaT1RkDVAYCsC): a message of one word
    that is strong (letters, digits and a symbol, or generated), within three lines of the name."""
    lines = text.split("\n")
    if len(lines) < 2:
        return
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    name = _name_pattern_anywhere()
    for at, line in enumerate(lines):
        if not line.rstrip().lower().endswith(_LABEL_ENDINGS):  # cheap: most lines end otherwise
            continue
        if not (name.search(line) or _holds(line, _CJK_NAME_WORDS)) or not _LABEL_END.search(line):
            continue
        if _LINK_DEFINITION.match(line):
            continue  # a Markdown link's definition, [the-secret-number]: ⏎ chapter.html#…
        for later in range(at + 1, min(at + 4, len(lines))):
            message = compiled().chat_line.match(lines[later])
            word = (message.group("message") if message else lines[later]).strip()
            if not word or " " in word or _CHAT_HEADER.fullmatch(lines[later].strip()):
                continue
            if _lone_value(word):
                if not placeholder(word, True) and not _ASSIGNED.match(word):
                    start = offsets[later] + lines[later].rindex(word)
                    yield RuleFinding(PASSWORD, start, start + len(word), "the next message")
            break


def _printed_by_a_command(text: str) -> Iterator[RuleFinding]:
    """What a command that reads a credential printed, one word a line (`cat …/master.key`,
    `terraform output -raw db_password`, `kubectl get secret … | base64 -d`)."""
    if not _holds(text, ("$", "#", ">", "❯", "Bash(")):
        return
    for match in compiled().command_line.finditer(text):
        at = match.start("output")
        for line in match.group("output").splitlines(keepends=True):
            word = line.strip().lstrip("⎿").strip()
            if _ASSIGNED.match(word):  # printenv's NAME=value: the assignment rule reads the name
                at += len(line)
                continue
            if word and (strong(word) or random_looking(word)) and not placeholder(word, True):
                start = at + line.index(word)
                yield RuleFinding(PASSWORD, start, start + len(word), "a command's output")
            at += len(line)


@cache
def _name_pattern_anywhere() -> re.Pattern[str]:
    return re.compile(rf"(?i){_EDGE}(?:{_name_alternatives()})(?![A-Za-z0-9])")


@cache
def _name_pattern() -> re.Pattern[str]:
    return re.compile(rf"(?i)(?:{_name_alternatives()})$")


@cache
def _table_header_name() -> re.Pattern[str]:
    """A column's header that names a credential: `password`, `Secret Access Key`."""
    return re.compile(rf"(?i)(?:[\w-]+[ _-])*(?:{_name_alternatives()})")


@cache
def _whole_name() -> re.Pattern[str]:
    return re.compile(rf"(?i)(?:[\w-]+[ _-])?(?:{_name_alternatives()})")


def _kinds_in(key: str) -> dict[str, str | None]:
    """The kind a credential's name says (the last part of `OPENAI_API_KEY` is `API_KEY`)."""
    match = _name_pattern().search(key.rstrip("s") if key.lower().endswith("tokens") else key)
    return match.groupdict() if match else {}
