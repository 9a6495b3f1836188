#!/usr/bin/env python3
"""Write the third blind held-out secret set: credentials.jsonl and lookalikes.jsonl beside this file.

    python bench/sets/secrets_heldout3/make_heldout3.py [OUT_DIR]

Written after the redactor had been tuned on three earlier sets, without their texts, the redactor's
code or its tests in view. Its angle is messy human conversation and the memory an assistant writes
about a person: credentials as people type them in chats, e-mails, tickets and dictated notes
(typos in the label, odd spacing, a value split over two messages, quoted replies, numbered lists,
bold/italic/code around the value, parentheses and dashes, a key pasted twice, keys in a browser's
address bar, OAuth redirects, magic and reset links, Wi-Fi cards, WeChat/DingTalk/Feishu logs,
mixed Chinese and English, traditional Chinese, full-width punctuation, emoji), sentences an
assistant would store ("The user's staging DB password is …", 用户的服务器 root 密码是 …), and
look-alikes from the same kind of talk with nothing secret in them.

Every value is fabricated at random (seeded) in its provider's documented shape: GitHub and npm
tokens carry a valid CRC32 checksum, the recovery phrases a valid BIP-39 checksum, JWTs are real
base64url JSON. No value holds EXAMPLE, test, xxxx, 1234 or another stand-in (`plausible`).

What counts as a credential here (decisions, so the figures can be read):
- a password, passphrase, PIN or code that opens something: account and Wi-Fi passwords, a bank
  card's or a payment PIN (银行卡密码, 支付密码), a phone's passcode, a door keypad, an alarm or a
  key lockbox code. Door PINs and alarm codes count: they open a home the way a password opens an
  account, and an assistant's memory is no place for them. They are short (4 to 6 digits), so
  they are few (provider `door-code`, `alarm-code`, `lockbox-code`, `bank-pin`, `phone-passcode`).
- a token in a URL that acts as the person: `?api_key=` / `&key=` / `appid=` in an address bar,
  the `code=` and `#access_token=` of an OAuth redirect, a magic sign-in link, a password-reset
  link, a Jupyter `?token=`, a presigned URL's signature, a webhook's secret path.
- NOT credentials (look-alikes): invite links and share codes meant to be handed to others (a
  discord.gg invite, a Baidu Pan 提取码, a meeting number), coupon and promo codes, booking
  references (PNR), order and tracking numbers, Chinese resident ID numbers and other personal
  identifiers (personal data, but not a credential: a redactor of secrets leaves them), a
  `session=` parameter naming a conference talk, tracking parameters (utm_*, gclid, fbclid, si=,
  vd_source), publishable keys, public keys and fingerprints, masked values, placeholders.
- values are ASCII: full-width punctuation (：，。（）「」) surrounds them in Chinese text, but no
  value is typed in full-width letters or digits (a system would not accept it as the same value).

Fields as in the earlier batches: credentials {"id", "provider", "format", "lang", "text",
"secret" (the exact substring, or a list of them), "fixed_prefix"? (the documented constant start
a redactor may keep, a list)}; look-alikes {"id", "category", "lang", "text"}.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 20240312

R = random.Random(SEED)

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
BASE32 = UPPER + "234567"
BASE62 = DIGITS + UPPER + LOWER

STAND_INS = (
    "example",
    "test",
    "xxxx",
    "1234",
    "dummy",
    "sample",
    "fake",
    "placeholder",
    "changeme",
    "your",
    "redact",
    "secret",
    "passw",
    "todo",
    "qwerty",
    "asdf",
)


def plausible(value: str) -> bool:
    """No stand-in word, no run of four equal characters (base64's `AAAA` of zero bytes aside), no
    run of four consecutive ones (`1234`, `dcba`)."""
    low = value.lower()
    if any(word in low for word in STAND_INS):
        return False
    if re.search(r"([^A])\1\1\1", value):
        return False
    for i in range(len(low) - 3):
        steps = {ord(low[j + 1]) - ord(low[j]) for j in range(i, i + 3)}
        if steps in ({1}, {-1}) and low[i].isalnum():
            return False
    return True


def fresh(make: Callable[[], str], skip: int = 0) -> str:
    """A value from `make` that is plausible past its first `skip` characters."""
    for _ in range(10_000):
        value = make()
        if plausible(value[skip:]):
            return value
    raise RuntimeError("no plausible value")


def tok(alphabet: str, n: int) -> str:
    return fresh(lambda: "".join(R.choice(alphabet) for _ in range(n)))


def digits(n: int) -> str:
    return fresh(lambda: R.choice("123456789") + "".join(R.choice(DIGITS) for _ in range(n - 1)))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def base62(number: int) -> str:
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = BASE62[rest] + out
    return out or "0"


# ---- provider values -------------------------------------------------------------------------


def checksummed(prefix: str) -> str:
    """GitHub's and npm's token format: 30 random base62 characters and their CRC32 in base62."""

    def make() -> str:
        body = "".join(R.choice(ALNUM) for _ in range(30))
        return prefix + body + base62(zlib.crc32(body.encode()) & 0xFFFFFFFF).rjust(6, "0")

    return fresh(make, len(prefix))


def ghp() -> str:
    return checksummed("ghp_")


def github_pat() -> str:
    return "github_pat_" + tok(ALNUM, 22) + "_" + tok(ALNUM, 59)


def openai_key() -> str:
    return "sk-proj-" + tok(B64URL, 74) + "T3BlbkFJ" + tok(B64URL, 74)


def anthropic_key() -> str:
    return "sk-ant-api03-" + tok(B64URL, 93) + "AA"


def aws_pair() -> tuple[str, str]:
    return "AKIA" + tok(BASE32, 16), tok(ALNUM + "+/", 40)


def google_key() -> str:
    return "AIza" + tok(ALNUM + "-_", 35)


def jwt(header: dict[str, Any], payload: dict[str, Any], sig_len: int = 43) -> str:
    def make() -> str:
        head = b64url(json.dumps(header, separators=(",", ":")).encode())
        body = b64url(json.dumps(payload, separators=(",", ":")).encode())
        return f"{head}.{body}." + "".join(R.choice(B64URL) for _ in range(sig_len))

    return fresh(make)


def uuid4() -> str:
    def make() -> str:
        h = "".join(R.choice(HEX) for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"

    return fresh(make)


def now_epoch() -> int:
    return R.randint(1_704_000_000, 1_730_000_000)


WORDS = (
    "marmot kestrel bluefin quokka saffron juniper tamarind halcyon obsidian walrus fennel harrier "
    "sorrel tundra basalt wombat nutmeg larkspur gannet sequoia thistle papaya vesper zephyr cinder "
    "ravine plover badger tansy heron gecko ibis lupine marigold narwhal ocelot puffin sable tapir "
    "umber vireo yarrow azalea bramble dingo egret fjord galago hazel jackal koala lichen nectar "
    "orchid pumice quince russet sienna toucan urchin willow caracal dormouse ermine ferret grackle"
).split()
PINYIN = ["liuyang", "wanglei", "chenjing", "zhaomin", "sunhao", "huangli", "zhouqi", "wufang", "xuming"]
SYMBOLS = "!@#$%&*?"


def word() -> str:
    return R.choice(WORDS)


def human_password(style: str | None = None) -> str:
    """A password a person picks: words, a year, a symbol; or a generated one."""
    style = style or R.choice("abcdefg")

    def make() -> str:
        if style == "a":
            return word().capitalize() + R.choice(SYMBOLS) + "".join(R.choice(DIGITS) for _ in range(4))
        if style == "b":
            return f"{word()}.{word()}.{R.randint(10, 99)}"
        if style == "c":
            return word().capitalize() + str(R.randint(10, 999)) + R.choice(SYMBOLS)
        if style == "d":
            return "".join(R.choice(ALNUM + SYMBOLS) for _ in range(R.randint(12, 16)))
        if style == "e":
            return R.choice(PINYIN) + R.choice("@_#") + str(R.randint(1975, 2003))
        if style == "f":
            w = word()
            return (
                w[0].upper()
                + w[1:].replace("e", "3").replace("a", "4").replace("o", "0")
                + "_"
                + str(R.randint(100, 9999))
            )
        return word().capitalize() + word().capitalize() + str(R.randint(10, 99))

    for _ in range(1000):
        value = make()
        if plausible(value) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value
    raise RuntimeError("no password")


def wifi_password() -> str:
    def make() -> str:
        shape = R.random()
        if shape < 0.4:
            return word() + word() + str(R.randint(10, 9999))
        if shape < 0.7:
            return word() + "-" + "".join(R.choice(DIGITS) for _ in range(4))
        return "".join(R.choice(LOWER + DIGITS) for _ in range(10))

    for _ in range(1000):
        value = make()
        if plausible(value) and any(c.isdigit() for c in value):
            return value
    raise RuntimeError("no wifi password")


def pin(n: int) -> str:
    def make() -> str:
        value = "".join(R.choice(DIGITS) for _ in range(n))
        return value if len(set(value)) >= 3 and value[0] != "0" else "0000"

    return fresh(make)


def letters_grouped(groups: int, sep: str) -> str:
    return fresh(lambda: sep.join("".join(R.choice(LOWER) for _ in range(4)) for _ in range(groups)))


BIP39_EVERY_13TH = (
    "abandon accuse addict agent alley amused antenna arena artist attitude aware ball bean benefit "
    "bitter blur borrow brick bubble bus calm captain cat century check chunk clean cloud collect "
    "connect cotton crash cross cup dance decline dentist destroy differ disorder donate dress dust "
    "echo elegant empty enlist erase evoke exile eyebrow fancy fee file fit floor force frequent "
    "furnace garment ghost glimpse gospel grid gym have hero hollow hub ice impact inflict insect "
    "issue joke ketchup knee large learn lesson link lonely luxury manage mass mechanic mesh miracle "
    "monitor mouse myself negative night now occur omit orchard oval palm path penalty picnic place "
    "polar poverty primary proof pupil question raise ready refuse render response rich road route "
    "sail save scrap seek seven shock side sister sleep smoke solar source spider spy stay story "
    "subway supply swarm tackle team theory tiger toe topple traffic trick tube two unhappy upon "
    "vacuum vendor video voice warfare weather where winner work you"
).split()
BIP39 = {13 * i: w for i, w in enumerate(BIP39_EVERY_13TH)}  # the BIP-39 English list's every 13th word


def recovery_phrase() -> str:
    """Twelve BIP-39 words with a valid checksum (drawn from every 13th word of the list)."""
    indexes = sorted(BIP39)
    while True:
        chosen = [R.choice(indexes) for _ in range(11)]
        last_bits = R.randrange(128)
        bits = "".join(f"{i:011b}" for i in chosen) + f"{last_bits:07b}"
        entropy = int(bits, 2).to_bytes(16, "big")
        check = hashlib.sha256(entropy).digest()[0] >> 4
        last = (last_bits << 4) | check
        if last in BIP39:
            words = [BIP39[i] for i in [*chosen, last]]
            if "secret" not in words:
                return " ".join(words)


def openssh_ed25519(comment: str) -> str:
    """The base64 body of an unencrypted OpenSSH ed25519 private key (random key material)."""

    def string_(raw: bytes) -> bytes:
        return len(raw).to_bytes(4, "big") + raw

    def make() -> str:
        pub = bytes(R.randrange(256) for _ in range(32))
        seed = bytes(R.randrange(256) for _ in range(32))
        pub_blob = string_(b"ssh-ed25519") + string_(pub)
        check = bytes(R.randrange(256) for _ in range(4))
        private = check + check + pub_blob + string_(seed + pub) + string_(comment.encode())
        private += bytes(range(1, 1 + (-len(private)) % 8))
        blob = (
            b"openssh-key-v1\0"
            + string_(b"none")
            + string_(b"none")
            + string_(b"")
            + (1).to_bytes(4, "big")
            + string_(pub_blob)
            + string_(private)
        )
        text = base64.b64encode(blob).decode()
        return "\n".join(text[i : i + 70] for i in range(0, len(text), 70))

    return fresh(make, 40)


PLATE = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # Chinese plates use no I or O


def ed25519_public() -> str:
    """The base64 of an OpenSSH ed25519 public key (random key material)."""
    blob = (11).to_bytes(4, "big") + b"ssh-ed25519" + (32).to_bytes(4, "big")
    return base64.b64encode(blob + bytes(R.randrange(256) for _ in range(32))).decode()


def china_id() -> str:
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    region = R.choice(["110105", "310104", "440305", "330106", "510107", "420106"])
    body = (
        region + f"{R.randint(1965, 2002)}{R.randint(1, 12):02d}{R.randint(1, 28):02d}{R.randint(100, 999)}"
    )
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


# ---- registration ----------------------------------------------------------------------------

Out = tuple[str, "str | list[str]"]
Builder = Callable[[], Out]
CREDENTIALS: list[tuple[str, str, str, list[str] | None, Builder]] = []
LOOKALIKES: list[tuple[str, str, Callable[[], str]]] = []


def cred(provider: str, fmt: str, lang: str, prefix: list[str] | None = None) -> Callable[[Builder], Builder]:
    def register(builder: Builder) -> Builder:
        CREDENTIALS.append((provider, fmt, lang, prefix, builder))
        return builder

    return register


def look(category: str, lang: str, *texts: str | Callable[[], str]) -> None:
    for text in texts:
        LOOKALIKES.append((category, lang, text if callable(text) else (lambda t=text: t)))


# ============================================================================================
# Credentials: English chat with typos and odd spacing
# ============================================================================================


@cred("openai", "chat-typo", "en", ["sk-proj-"])
def _() -> Out:
    k = openai_key()
    return f"ok so my opneai key is {k} dont share it lol, the billing is on my card", k


@cred("staging-db-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("a")
    return f"@dan staging db pasword: {p}  (rotate it after the demo pls)", p


@cred("server-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("d")
    return f"box is 10.0.4.17, user deploy, pw = {p}", p


@cred("router-admin", "chat-typo", "en")
def _() -> Out:
    p = human_password("c")
    return f"passwd {p} for the router admin page (192.168.0.1)", p


@cred("email-password", "email", "en")
def _() -> Out:
    p = human_password("g")
    return (
        f"Hi Sam,\n\nthe shared inbox passowrd is {p} - please don't forward this mail.\n\nThanks,\nRuth",
        p,
    )


@cred("vpn-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("f")
    return f"vpn p/w: {p}   user is your first.last", p


@cred("jenkins-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("d")
    return f"jenkins admin pwd {p} , dont change it its shared w/ the contractors", p


@cred("nas-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("b")
    return f"NAS login\nuser admin\nPass - {p}", p


@cred("portal-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("e")
    return f"login is maya.k and password {p} for the supplier portal", p


@cred("hosting-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("a")
    return f"HOSTING CPANEL PW: {p} SORRY CAPS LOCK", p


@cred("wordpress-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("c")
    return f"the pass is {p} for wp-admin, username is editor2", p


@cred("ftp-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("d")
    return f"ftp.larkfield.io  u: upload_bot  p: {p}", p


@cred("database-password", "chat-typo", "en")
def _() -> Out:
    p = human_password("g")
    return f"password  :   {p}\n(the spaces are from my phone, the password itself has none)", p


@cred("pword", "chat-typo", "en")
def _() -> Out:
    p = human_password("f")
    return f"pword for the kiosk laptop is {p} btw", p


# ---- split over two messages ----


@cred("jenkins-password", "chat-split", "en")
def _() -> Out:
    p = human_password("d")
    return f"[09:14] Priya: what's the jenkins password again?\n[09:15] Tom: one sec\n[09:15] Tom: {p}", p


@cred("staging-password", "chat-split", "en")
def _() -> Out:
    p = human_password("a")
    return f"[10:02] Tom: the staging pw is\n[10:02] Tom: {p}\n[10:03] Priya: ty", p


@cred("grafana", "chat-split", "en", ["glsa_"])
def _() -> Out:
    k = "glsa_" + tok(ALNUM, 32) + "_" + tok(HEX, 8)
    return f"Tom Reyes  11:20 AM\nhere's the grafana service account token\nTom Reyes  11:20 AM\n{k}", k


@cred("stripe", "chat-split", "en", ["sk_live_"])
def _() -> Out:
    k = "sk_live_51" + tok(ALNUM, 97)
    return (
        f"Ana: key for the prod webhook job, part 1 of my msg\nAna: {k}\nAna: (that was it, no part 2 lol)",
        k,
    )


@cred("wifi", "chat-split", "en")
def _() -> Out:
    p = wifi_password()
    return f"guest wifi is LarkHouse-5G\nand the pw\n{p}", p


# ---- quoted replies ----


@cred("sftp-password", "quoted-reply", "en")
def _() -> Out:
    p = human_password("d")
    return (
        f"On Tue, Mar 12, 2024 at 9:03 AM Dana Whit <dana@larkfield.io> wrote:\n"
        f"> Hi, the SFTP login is upload_bot / {p}\n> Let me know if it works.\n\nWorks, thanks!",
        p,
    )


@cred("email-password", "quoted-reply", "en")
def _() -> Out:
    p = human_password("b")
    return f"> password: {p}\n\nthanks, that worked. changing it now", p


@cred("vpn-password", "quoted-reply", "en")
def _() -> Out:
    p = human_password("a")
    return f"> > pw: {p}\n> is this still the current one?\nyes, until the 31st", p


@cred("slack-bot", "quoted-reply", "en", ["xoxb-"])
def _() -> Out:
    k = f"xoxb-{digits(12)}-{digits(13)}-{tok(ALNUM, 24)}"
    return f"> token: {k}\n\nmoved this to the vault, pls delete your message", k


# ---- lists ----


@cred("report-db-password", "list", "en")
def _() -> Out:
    p = human_password("d")
    return f"1) user: bob 2) pass: {p} 3) host: reports.internal:5432", p


@cred("postgres-password", "list", "en")
def _() -> Out:
    p = human_password("g")
    return f"- username: svc_report\n- password: {p}\n- port: 5432\n- db: analytics", p


@cred("kiosk-passcode", "list", "en")
def _() -> Out:
    p = human_password("c")
    return f"a. Email: front-desk@larkfield.io\nb. Passcode: {p}\nc. Printer: 3rd floor", p


@cred("mailchimp", "list", "en")
def _() -> Out:
    k = tok(HEX, 32) + "-us" + str(R.randint(2, 21))
    return f"Setup steps:\n1. install the plugin\n2. API key: {k}\n3. pick the audience 'Newsletter'", k


# ---- Markdown around the value ----


@cred("vpn-password", "markdown-bold", "en")
def _() -> Out:
    p = human_password("a")
    return f"VPN password is **{p}**", p


@cred("mysql-password", "markdown-code", "en")
def _() -> Out:
    p = human_password("d")
    return f"new mysql root pw: `{p}`", p


@cred("wifi", "markdown-italic", "en")
def _() -> Out:
    p = wifi_password()
    return f"office wifi: *{p}*", p


@cred("huggingface", "markdown-codeblock", "en", ["hf_"])
def _() -> Out:
    k = "hf_" + tok(string.ascii_letters, 34)
    return f"here's the token for the space:\n```\n{k}\n```\nread-only, should be fine", k


@cred("smtp-password", "markdown-bold", "en")
def _() -> Out:
    p = human_password("g")
    return f"SMTP: smtp.larkfield.io:587, user alerts@larkfield.io, pass __{p}__", p


@cred("gitlab", "markdown-code", "en", ["glpat-"])
def _() -> Out:
    k = "glpat-" + tok(ALNUM + "-_", 20)
    return f"- CI token: `{k}` (expires in June)", k


@cred("admin-password", "markdown-strike", "en")
def _() -> Out:
    old, new = human_password("a"), human_password("a")
    return f"admin pw ~~{old}~~ **{new}** (changed today)", [old, new]


# ---- parentheses and dashes ----


@cred("shared-account", "parenthesized", "en")
def _() -> Out:
    p = human_password("b")
    return f"use the shared account (password {p}) for now, I'll make you one next week", p


@cred("router-admin", "parenthesized", "en")
def _() -> Out:
    p = human_password("c")
    return f"Router is the white one in the closet (pw: {p}).", p


@cred("admin-password", "em-dash", "en")
def _() -> Out:
    p = human_password("d")
    return f"Admin password — {p}", p


@cred("alarm-panel", "em-dash", "en")
def _() -> Out:
    p = human_password("f")
    return f"Alarm app login: maya@larkfield.io – {p} – don't lose it", p


@cred("sendgrid", "arrow", "en", ["SG."])
def _() -> Out:
    k = "SG." + tok(B64URL, 22) + "." + tok(B64URL, 43)
    return f"sendgrid key -> {k}", k


# ---- pasted twice ----


@cred("huggingface", "pasted-twice", "en", ["hf_"])
def _() -> Out:
    k = "hf_" + tok(string.ascii_letters, 34)
    return f"HF_TOKEN={k}\nHF_TOKEN={k}\noops pasted twice", k


@cred("anthropic", "pasted-twice", "en", ["sk-ant-api03-"])
def _() -> Out:
    k = anthropic_key()
    return f"key: {k} {k}\nsorry my clipboard manager doubled it", k


@cred("office-password", "pasted-twice", "en")
def _() -> Out:
    p = human_password("a")
    return f"pw {p}\n\npw {p}\n\n(did that send? sending again)", p


# ---- keys in the browser's address bar ----


@cred("openweathermap", "url-query", "en")
def _() -> Out:
    k = tok(HEX, 32)
    return (
        f"this works in the browser: https://api.openweathermap.org/data/2.5/weather?q=Shenzhen&appid={k}&units=metric",
        k,
    )


@cred("google-maps", "url-query", "en", ["AIza"])
def _() -> Out:
    k = google_key()
    return f"https://maps.googleapis.com/maps/api/geocode/json?address=1600+Harbour+Rd&key={k}", k


@cred("newsapi", "url-query", "en")
def _() -> Out:
    k = tok(HEX, 32)
    return f"try https://newsapi.org/v2/top-headlines?country=us&apiKey={k} — returns 20 articles", k


@cred("nasa", "url-query", "en")
def _() -> Out:
    k = tok(ALNUM, 40)
    return f"https://api.nasa.gov/planetary/apod?api_key={k}&date=2024-03-12", k


@cred("alphavantage", "url-query", "en")
def _() -> Out:
    k = tok(UPPER + DIGITS, 16)
    return f"https://www.alphavantage.co/query?function=TIME_SERIES_DAILY&symbol=IBM&apikey={k}", k


@cred("tmdb", "url-query", "en")
def _() -> Out:
    k = tok(HEX, 32)
    return f"address bar: api.themoviedb.org/3/movie/550?api_key={k}&language=en-US", k


@cred("jupyter", "url-query", "en")
def _() -> Out:
    k = tok(HEX, 48)
    return (
        f"    To access the server, open this file in a browser:\n    Or copy and paste one of these "
        f"URLs:\n        http://127.0.0.1:8888/lab?token={k}",
        k,
    )


@cred("aws-presigned", "url-query", "en")
def _() -> Out:
    key_id, _ = aws_pair()
    sig = tok(HEX, 64)
    return (
        "download link (valid 7 days): https://larkfield-exports.s3.ap-southeast-1.amazonaws.com/reports/q1.csv"
        f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={key_id}%2F20240312%2Fap-southeast-1%2Fs3%2Faws4_request"
        f"&X-Amz-Date=20240312T104105Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}",
        sig,
    )


@cred("nas-url-password", "url-userinfo", "en")
def _() -> Out:
    p = human_password("d").replace("@", "!").replace("#", "*").replace("?", "!").replace("%", "&")
    return f"bookmark this: https://admin:{p}@nas.home.lan:5001/ (self-signed cert, click through)", p


# ---- OAuth redirects, magic links, reset links ----


@cred("google-oauth-code", "oauth-redirect", "en", ["4/0A"])
def _() -> Out:
    code = "4/0A" + tok(B64URL, 69)
    return (
        f"it redirected to http://localhost:8080/callback?state={tok(ALNUM, 30)}&code={code}"
        "&scope=email%20profile%20openid&authuser=0&prompt=consent and then hung",
        code,
    )


@cred("github-oauth-code", "oauth-redirect", "en")
def _() -> Out:
    code = tok(HEX, 20)
    return (
        f"callback url was http://127.0.0.1:8765/auth/github/callback?code={code}&state={tok(HEX, 16)}",
        code,
    )


@cred("microsoft-access-token", "url-fragment", "en", ["eyJ"])
def _() -> Out:
    t = jwt(
        {"typ": "JWT", "alg": "RS256", "kid": tok(B64URL, 27)},
        {
            "aud": "00000003-0000-0000-c000-000000000000",
            "iss": f"https://sts.windows.net/{uuid4()}/",
            "iat": (iat := now_epoch()),
            "exp": iat + 3600,
            "name": "Maya Kowalski",
            "scp": "openid profile User.Read email",
            "upn": "maya@larkfield.io",
        },
        342,
    )
    return (
        f"https://larkfield.io/auth/callback#access_token={t}&token_type=Bearer&expires_in=3599&state=12ac",
        t,
    )


@cred("twitch-access-token", "url-fragment", "en")
def _() -> Out:
    t = tok(LOWER + DIGITS, 30)
    return f"http://localhost:3000/#access_token={t}&scope=chat%3Aread&token_type=bearer", t


@cred("facebook-access-token", "url-fragment", "en", ["EAA"])
def _() -> Out:
    t = "EAAG" + tok(ALNUM, 180)
    return (
        f"the login popup ended on https://www.larkfield.io/fb/#access_token={t}&data_access_expiration_time=1718000000&expires_in=5183",
        t,
    )


@cred("spotify-access-token", "url-fragment", "en")
def _() -> Out:
    t = "BQ" + tok(B64URL, 170)
    return (
        f"copied from the address bar: http://127.0.0.1:8888/callback#access_token={t}&token_type=Bearer&expires_in=3600",
        t,
    )


@cred("supabase-magic-link", "magic-link", "en")
def _() -> Out:
    t = tok(HEX, 56)
    ref = tok(LOWER, 20)
    return (
        f"magic link from the email: https://{ref}.supabase.co/auth/v1/verify?token={t}&type=magiclink&redirect_to=https://app.tallyboard.io",
        t,
    )


@cred("magic-link", "magic-link", "en")
def _() -> Out:
    t = tok(B64URL, 43)
    return (
        f"Sign in to Tallyboard\nClick here to sign in: "
        f"https://app.tallyboard.io/auth/magic?token={t}&email=maya%40larkfield.io\nThis link "
        f"expires in 15 minutes.",
        t,
    )


@cred("django-reset-link", "reset-link", "en")
def _() -> Out:
    t = tok(LOWER + DIGITS, 6) + "-" + tok(HEX, 32)
    return f"Reset link from the portal: https://portal.larkfield.io/accounts/reset/MTg/{t}/", t


@cred("devise-reset-link", "reset-link", "en")
def _() -> Out:
    t = tok(ALNUM + "-_", 20)
    return (
        f"Someone has requested a link to change your password. https://crm.larkfield.io/users/password/edit?reset_password_token={t}",
        t,
    )


@cred("laravel-reset-link", "reset-link", "en")
def _() -> Out:
    t = tok(HEX, 64)
    return (
        f"ticket 5521: customer forwarded "
        f"https://shop.larkfield.io/password/reset/{t}?email=jo%40mailbox.org asking if it's phishing",
        t,
    )


@cred("firebase-reset-link", "reset-link", "en")
def _() -> Out:
    t = tok(B64URL, 54)
    return (
        f"https://larkfield-app.firebaseapp.com/__/auth/action?mode=resetPassword&oobCode={t}"
        f"&apiKey={google_key()}&lang=en",
        t,
    )


# ---- webhooks in chat ----


@cred("slack-webhook", "chat", "en")
def _() -> Out:
    path = f"T{tok(UPPER + DIGITS, 10)}/B{tok(UPPER + DIGITS, 10)}/{tok(ALNUM, 24)}"
    return f"alerts go to https://hooks.slack.com/services/{path} (the #ops-alerts channel)", path


@cred("discord-webhook", "chat", "en")
def _() -> Out:
    t = tok(B64URL, 68)
    return f"discord webhook for the build bot: https://discord.com/api/webhooks/{digits(19)}/{t}", t


# ---- Wi-Fi cards ----


@cred("wifi", "wifi-card", "en")
def _() -> Out:
    p = wifi_password()
    return f"GUEST WI-FI\nNetwork: Larkfield-Guest\nPassword: {p}\nEnjoy your stay!", p


@cred("wifi", "wifi-qr", "en")
def _() -> Out:
    p = wifi_password()
    return f"the QR on the fridge decodes to WIFI:T:WPA;S:Casa_Moreno;P:{p};;", p


@cred("wifi", "chat", "en")
def _() -> Out:
    p = wifi_password()
    return f"Hi! Wifi is 'Moreno5G' and the code is {p}. Checkout is at 11. Enjoy Lisbon!", p


@cred("wifi", "wifi-card", "en")
def _() -> Out:
    p = wifi_password()
    return f"☕ Bean There Café ☕\nWiFi: BeanThere_Free\nPW: {p}\nPlease limit to 2 hours", p


# ---- PINs and codes (they count: see the module docstring) ----


@cred("door-code", "chat", "en")
def _() -> Out:
    p = pin(4)
    return f"the pin for the side door is {p}, it beeps twice then you push hard", p


@cred("alarm-code", "chat", "en")
def _() -> Out:
    p = pin(6)
    return f"Alarm code: {p}# — you have 30s to disarm after opening the door", p


@cred("lockbox-code", "chat", "en")
def _() -> Out:
    p = pin(4)
    return f"Keys are in the lockbox by the gate, code {p}. Please scramble the dials after!", p


@cred("phone-passcode", "memory", "en")
def _() -> Out:
    p = pin(6)
    return f"The user's phone passcode is {p}; they asked to be reminded if they forget it.", p


@cred("garage-keypad", "voice-note", "en")
def _() -> Out:
    p, w = pin(6), wifi_password()
    return (
        f"Voice memo 14:02: okay so the garage keypad code is {p} and the wifi for the studio is "
        f"{w}, uh, all lowercase",
        [p, w],
    )


# ---- voice-dictated notes ----


@cred("vpn-password", "voice-note", "en")
def _() -> Out:
    p = human_password("a")
    return f"Note to self comma the VPN password is {p} period call Dan about the firewall", p


@cred("bank-login", "voice-note", "en")
def _() -> Out:
    p = human_password("g")
    return (
        f"transcribed: remind me the bank login is my email and the password is {p} capital letters "
        f"where you see them",
        p,
    )


# ---- tickets, SMS, e-mail ----


@cred("temp-password", "ticket", "en")
def _() -> Out:
    p = human_password("d")
    return (
        f"SUP-4821 Customer can't log in. Temp password set to {p}, asked them to change it on first login.",
        p,
    )


@cred("mailgun", "ticket", "en", ["key-"])
def _() -> Out:
    k = "key-" + tok(HEX, 32)
    return (
        f"Ticket #88213: our API calls return 401 Forbidden with key {k} since this morning, domain "
        f"mg.larkfield.io",
        k,
    )


@cred("cohere", "ticket", "en")
def _() -> Out:
    k = tok(ALNUM, 40)
    return (
        f"GitHub issue #412: here's my config\n```yaml\nprovider: cohere\napi_key: {k}\nmodel: "
        f"command-r\n```\nit fails with 'invalid api token'",
        k,
    )


@cred("temp-password", "sms", "en")
def _() -> Out:
    p = human_password("d")
    return f"Larkfield IT: Your temporary password is {p}. It expires in 24 hours.", p


@cred("account-password", "email", "en")
def _() -> Out:
    p = human_password("d")
    return (
        f"Hi Mark,\nYour account has been created.\nUsername: mark.t\nTemporary password: {p}\n"
        f"Please sign in and change it.",
        p,
    )


@cred("stripe-restricted", "email", "en", ["rk_live_"])
def _() -> Out:
    k = "rk_live_51" + tok(ALNUM, 97)
    return (
        f"Subject: new creds\n\nHey — the new Stripe restricted key (read-only on charges) is {k}\nCheers",
        k,
    )


# ---- provider keys as people paste them in chat ----


@cred("slack-user", "ticket", "en", ["xoxp-"])
def _() -> Out:
    k = f"xoxp-{digits(12)}-{digits(12)}-{digits(13)}-{tok(HEX, 32)}"
    return f"INC-2210: the export script uses my user token {k}, revoke it when I leave", k


@cred("slack-app", "chat", "en", ["xapp-"])
def _() -> Out:
    k = f"xapp-1-A{tok(UPPER + DIGITS, 10)}-{digits(13)}-{tok(HEX, 64)}"
    return f"socket mode needs the app-level token: {k} 👍", k


@cred("stripe", "chat", "en", ["sk_live_"])
def _() -> Out:
    k = "sk_live_" + tok(ALNUM, 24)
    return f"pls dont commit this again: {k}", k


@cred("twilio", "chat", "en", ["AC"])
def _() -> Out:
    sid, token = "AC" + tok(HEX, 32), tok(HEX, 32)
    return f"twilio sid {sid} / auth token {token}", [sid, token]


@cred("telegram-bot", "chat", "en")
def _() -> Out:
    t = digits(10) + ":AA" + tok(B64URL, 33)
    return (
        f"BotFather said:\nDone! Congratulations on your new bot.\nUse this token to access the HTTP "
        f"API:\n{t}\nKeep your token secure",
        t,
    )


@cred("discord-bot", "chat", "en")
def _() -> Out:
    uid = base64.b64encode(("1" + digits(18)).encode()).decode().rstrip("=")
    t = fresh(lambda: f"{uid}.{tok(B64URL, 6)}.{tok(B64URL, 38)}")
    return f"bot token for the raid helper: {t}", t


@cred("digitalocean", "chat", "en", ["dop_v1_"])
def _() -> Out:
    k = "dop_v1_" + tok(HEX, 64)
    return f"DO token (write scope): {k}", k


@cred("shopify", "chat", "en", ["shpat_"])
def _() -> Out:
    k = "shpat_" + tok(HEX, 32)
    return f"admin api access token for the store is {k} - only shown once so I copied it here", k


@cred("atlassian", "chat", "en", ["ATATT3"])
def _() -> Out:
    k = "ATATT3xFfGF0" + tok(B64URL, 170) + "=" + tok("0123456789ABCDEF", 8)
    return f"jira api token {k}", k


@cred("notion", "chat", "en", ["ntn_"])
def _() -> Out:
    k = "ntn_" + digits(11) + tok(ALNUM, 35)
    return f"notion integration secret is {k}, shared with the Roadmap page", k


@cred("linear", "chat", "en", ["lin_api_"])
def _() -> Out:
    k = "lin_api_" + tok(ALNUM, 40)
    return f"Linear personal key → {k}", k


@cred("groq", "chat", "en", ["gsk_"])
def _() -> Out:
    k = "gsk_" + tok(ALNUM, 52)
    return f"groq is free for now, use mine: {k}", k


@cred("replicate", "chat", "en", ["r8_"])
def _() -> Out:
    k = "r8_" + tok(ALNUM, 37)
    return f"REPLICATE_API_TOKEN {k}", k


@cred("supabase-service-role", "chat", "en", ["eyJ"])
def _() -> Out:
    iat = now_epoch()
    t = jwt(
        {"alg": "HS256", "typ": "JWT"},
        {
            "iss": "supabase",
            "ref": tok(LOWER, 20),
            "role": "service_role",
            "iat": iat,
            "exp": iat + 315_360_000,
        },
    )
    return f"service_role key (server only!!): {t}", t


@cred("doppler", "chat", "en", ["dp.st."])
def _() -> Out:
    k = "dp.st.prd." + tok(ALNUM, 40)
    return f"doppler service token for prd: {k}", k


@cred("pypi", "chat", "en", ["pypi-AgEIcHlwaS5vcmc"])
def _() -> Out:
    k = "pypi-AgEIcHlwaS5vcmc" + tok(B64URL, 160)
    return f"upload token, scoped to the larkfield-sdk project:\n{k}", k


@cred("docker-hub", "chat", "en", ["dckr_pat_"])
def _() -> Out:
    k = "dckr_pat_" + tok(B64URL, 27)
    return f"docker login -u larkfieldci, then paste {k} when it asks", k


@cred("figma", "chat", "en", ["figd_"])
def _() -> Out:
    k = "figd_" + tok(B64URL, 40)
    return f"Figma PAT: {k} (expires in 90 days)", k


@cred("postman", "chat", "en", ["PMAK-"])
def _() -> Out:
    k = "PMAK-" + tok(HEX, 24) + "-" + tok(HEX, 34)
    return f"postman key {k} for the monitor", k


@cred("pinecone", "chat", "en", ["pcsk_"])
def _() -> Out:
    k = "pcsk_" + tok(ALNUM, 6) + "_" + tok(ALNUM, 63)
    return f"pinecone: {k}\nindex is docs-prod, us-east-1", k


@cred("openrouter", "chat", "en", ["sk-or-v1-"])
def _() -> Out:
    k = "sk-or-v1-" + tok(HEX, 64)
    return f"openrouter key {k} has $20 on it", k


@cred("xai", "chat", "en", ["xai-"])
def _() -> Out:
    k = "xai-" + tok(ALNUM, 80)
    return f"grok api key xai: {k}", k


@cred("perplexity", "chat", "en", ["pplx-"])
def _() -> Out:
    k = "pplx-" + tok(ALNUM, 48)
    return f"perplexity ({k}) for the research bot", k


@cred("langsmith", "chat", "en", ["lsv2_pt_"])
def _() -> Out:
    k = "lsv2_pt_" + tok(HEX, 32) + "_" + tok(HEX, 10)
    return f"LANGCHAIN_API_KEY — {k}", k


@cred("resend", "chat", "en", ["re_"])
def _() -> Out:
    k = "re_" + tok(ALNUM, 8) + "_" + tok(ALNUM, 24)
    return f"resend key is {k}, domain verified", k


@cred("netlify", "chat", "en", ["nfp_"])
def _() -> Out:
    k = "nfp_" + tok(ALNUM, 36)
    return f"netlify pat: {k}", k


@cred("neon", "chat", "en", ["napi_"])
def _() -> Out:
    k = "napi_" + tok(LOWER + DIGITS, 64)
    return f"neon api key for branching previews {k}", k


@cred("planetscale", "chat", "en", ["pscale_pw_"])
def _() -> Out:
    k = "pscale_pw_" + tok(ALNUM + "_", 43)
    return f"PlanetScale password for main branch: {k}", k


@cred("elevenlabs", "chat", "en", ["sk_"])
def _() -> Out:
    k = "sk_" + tok(HEX, 48)
    return f"elevenlabs key {k} (the voice clone account)", k


@cred("mistral", "chat", "en")
def _() -> Out:
    k = tok(ALNUM, 32)
    return f"mistral api key: {k}", k


@cred("gemini", "chat", "en", ["AIza"])
def _() -> Out:
    k = google_key()
    return f"gemini key from ai studio {k} - free tier", k


@cred("vault", "chat", "en", ["hvs."])
def _() -> Out:
    k = "hvs.CAESI" + tok(B64URL, 86)
    return f"root token after unseal: {k}\nrevoke after setup!!", k


@cred("tailscale", "chat", "en", ["tskey-auth-"])
def _() -> Out:
    k = "tskey-auth-" + tok(ALNUM, 11) + "CNTRL-" + tok(ALNUM, 33)
    return f"reusable auth key for the pi: {k}", k


@cred("ngrok", "chat", "en")
def _() -> Out:
    k = "2" + tok(ALNUM, 26) + "_" + tok(ALNUM, 21)
    return f"ngrok config add-authtoken {k}", k


@cred("terraform-cloud", "chat", "en")
def _() -> Out:
    k = tok(ALNUM, 14) + ".atlasv1." + tok(ALNUM, 67)
    return f"TFC team token {k}", k


@cred("sentry", "chat", "en", ["sntryu_"])
def _() -> Out:
    k = "sntryu_" + tok(HEX, 64)
    return f"sentry auth token for sourcemaps upload: {k}", k


@cred("new-relic", "chat", "en", ["NRAK-"])
def _() -> Out:
    k = "NRAK-" + tok(UPPER + DIGITS, 27)
    return f"new relic user key {k}", k


@cred("datadog", "chat", "en")
def _() -> Out:
    api, app = tok(HEX, 32), tok(HEX, 40)
    return f"DD api key {api}\nDD app key {app}", [api, app]


@cred("mapbox-secret", "chat", "en", ["sk.eyJ1Ijoi"])
def _() -> Out:
    head = b64url(json.dumps({"u": "mayakow", "a": tok(LOWER + DIGITS, 25)}, separators=(",", ":")).encode())
    k = fresh(lambda: f"sk.{head}.{tok(B64URL, 22)}")
    return f"mapbox secret token (downloads:read) {k}", k


@cred("azure-storage", "chat", "en")
def _() -> Out:
    key = fresh(lambda: base64.b64encode(bytes(R.randrange(256) for _ in range(64))).decode())
    return (
        f"conn string: "
        f"DefaultEndpointsProtocol=https;AccountName=larkfieldlogs;AccountKey={key};EndpointSuffix=core.windows.net",
        key,
    )


@cred("azure-openai", "chat", "en")
def _() -> Out:
    k = tok(HEX, 32)
    return f"azure openai endpoint https://larkfield-eu.openai.azure.com, api-key {k}", k


@cred("heroku", "chat", "en", ["HRKU-"])
def _() -> Out:
    k = "HRKU-AA" + tok(B64URL, 58)
    return f"heroku authorizations:create gave me {k}", k


@cred("bitbucket", "chat", "en", ["ATBB"])
def _() -> Out:
    k = "ATBB" + tok(ALNUM, 28) + tok("0123456789ABCDEF", 8)
    return f"bitbucket app password: {k}", k


@cred("flyio", "chat", "en", ["FlyV1 fm2_"])
def _() -> Out:
    k = "FlyV1 fm2_lJPE" + tok(B64, 200)
    return f"fly deploy token (paste the whole thing incl. FlyV1): {k}", k


@cred("square", "chat", "en", ["EAAA"])
def _() -> Out:
    k = "EAAA" + tok(B64URL, 60)
    return f"square prod access token {k}", k


@cred("dropbox", "chat", "en", ["sl."])
def _() -> Out:
    k = "sl.B" + tok(B64URL, 135)
    return f"dropbox short-lived token: {k}", k


@cred("google-refresh-token", "chat", "en", ["1//0"])
def _() -> Out:
    k = "1//0" + tok(B64URL, 99)
    return f"refresh token from the playground is {k}", k


@cred("google-access-token", "chat", "en", ["ya29."])
def _() -> Out:
    k = "ya29.a0A" + tok(B64URL, 160)
    return f"curl -H 'Authorization: Bearer {k}' https://www.googleapis.com/drive/v3/files", k


@cred("mongodb-uri", "chat", "en")
def _() -> Out:
    p = tok(ALNUM, 16)
    return f"mongodb+srv://maya:{p}@cluster0.k2x8p.mongodb.net/?retryWrites=true&w=majority", p


@cred("postgres-uri", "chat", "en")
def _() -> Out:
    p = human_password("b")
    return f"DATABASE_URL is postgres://app:{p}@db.larkfield.internal:5432/app", p


@cred("redis-uri", "chat", "en")
def _() -> Out:
    p = tok(ALNUM, 32)
    return f"redis://default:{p}@redis-14092.c8.ap-southeast-1.cloud.redislabs.com:14092", p


@cred("ssh-private-key", "chat", "en")
def _() -> Out:
    body = openssh_ed25519("deploy@build01")
    return (
        f"here's the deploy key, put it in ~/.ssh/id_ed25519:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"{body}\n-----END OPENSSH PRIVATE KEY-----",
        body,
    )


@cred("cloudflare", "chat", "en")
def _() -> Out:
    k = tok(ALNUM + "_-", 40)
    return f"CF api token (zone:dns edit) {k}", k


@cred("github", "chat", "en", ["github_pat_"])
def _() -> Out:
    k = github_pat()
    return f"fine-grained PAT, read-only on the infra repo: {k}", k


@cred("okta", "chat", "en")
def _() -> Out:
    k = "00" + tok(B64URL, 40)
    return f"okta api token: SSWS {k}", k


@cred("npm", "chat", "en", ["npm_"])
def _() -> Out:
    k = checksummed("npm_")
    return f"//registry.npmjs.org/:_authToken={k}\n^ that's my ~/.npmrc, publishing works now", k


@cred("wordpress-password", "chat", "en")
def _() -> Out:
    p = human_password("a")
    return f"wp-admin: admin / {p}", p


# ============================================================================================
# Memory an assistant would write about a person (English)
# ============================================================================================


@cred("staging-db-password", "memory", "en")
def _() -> Out:
    p = human_password("a")
    return f"The user's staging DB password is {p}.", p


@cred("aws", "memory", "en", ["AKIA"])
def _() -> Out:
    key_id, secret = aws_pair()
    return f"User keeps their AWS keys in ~/.aws; key id {key_id}, secret {secret}.", [key_id, secret]


@cred("router-admin", "memory", "en")
def _() -> Out:
    p = human_password("c")
    return f"The user's home router admin login is admin / {p}.", p


@cred("anthropic", "memory", "en", ["sk-ant-api03-"])
def _() -> Out:
    k = anthropic_key()
    return f"User's Anthropic API key (personal account): {k}", k


@cred("streaming-password", "memory", "en")
def _() -> Out:
    p = human_password("g")
    return f"The user mentioned their Netflix password is {p} (shared with their sister).", p


@cred("gitlab-deploy-token", "memory", "en", ["gldt-"])
def _() -> Out:
    k = "gldt-" + tok(ALNUM + "-_", 20)
    return f"Remember: the user's GitLab deploy token for the docs site is {k}.", k


@cred("npm", "memory", "en", ["npm_"])
def _() -> Out:
    k = checksummed("npm_")
    return f"User publishes with the npm token {k} stored in their .npmrc.", k


@cred("gmail-app-password", "memory", "en")
def _() -> Out:
    p = letters_grouped(4, " ")
    return f"User's Gmail app password for the mail-merge script: {p}", p


@cred("apple-app-password", "memory", "en")
def _() -> Out:
    p = letters_grouped(4, "-")
    return f"The user's Apple app-specific password (for Thunderbird) is {p}.", p


@cred("recovery-phrase", "memory", "en")
def _() -> Out:
    p = recovery_phrase()
    return f"User's hardware wallet recovery phrase: {p}", p


@cred("ssh-passphrase", "memory", "en")
def _() -> Out:
    p = human_password("b")
    return f"The user's SSH key passphrase is {p}; the key itself lives in ~/.ssh/id_ed25519.", p


@cred("master-password", "memory", "en")
def _() -> Out:
    p = human_password("g") + R.choice(SYMBOLS)
    return f"User's 1Password master password: {p} (they asked me to keep it in case they forget).", p


@cred("github", "memory", "en", ["ghp_"])
def _() -> Out:
    k = ghp()
    return f"- The user's GitHub classic token for the release script is {k} (repo scope).", k


@cred("openai", "memory", "en", ["sk-proj-"])
def _() -> Out:
    k = openai_key()
    return f"User prefers their OpenAI key set as OPENAI_API_KEY={k} in the project's .env.", k


@cred("school-portal", "memory", "en")
def _() -> Out:
    p = human_password("c")
    return f"Their daughter's school portal login: parent account, password {p}.", p


@cred("bank-pin", "memory", "en")
def _() -> Out:
    p = pin(4)
    return f"The user's debit card PIN is {p} — they said not to share it with anyone else.", p


# ============================================================================================
# Emoji and full-width punctuation in English
# ============================================================================================


@cred("sentry-org-token", "emoji", "en", ["sntrys_"])
def _() -> Out:
    claims = {
        "iat": now_epoch(),
        "url": "https://sentry.io",
        "region_url": "https://us.sentry.io",
        "org": "larkfield",
    }
    k = "sntrys_" + b64url(json.dumps(claims, separators=(",", ":")).encode()) + "_" + tok(B64URL, 43)
    return f"🔑 {k}", k


@cred("vpn-password", "emoji", "en")
def _() -> Out:
    p = human_password("a")
    return f"pw 👉 {p} 🙏", p


@cred("linear", "emoji", "en", ["lin_api_"])
def _() -> Out:
    k = "lin_api_" + tok(ALNUM, 40)
    return f"✅ token: {k} 🎉 works now", k


@cred("email-password", "fullwidth", "en")
def _() -> Out:
    p = human_password("d")
    return f"password：{p}（IME was still on, sorry）", p


# ============================================================================================
# Chinese: WeChat, DingTalk and Feishu logs
# ============================================================================================


@cred("alibaba-cloud", "wechat-log", "zh", ["LTAI"])
def _() -> Out:
    ak, sk = "LTAI5t" + tok(ALNUM, 18), tok(ALNUM, 30)
    return (
        f"2024-03-12 10:41:05 张伟\n阿里云 AccessKey 发你：\n{ak}\n2024-03-12 10:41:20 张伟\nSecret: "
        f"{sk}\n2024-03-12 10:42:01 李娜\n收到",
        [ak, sk],
    )


@cred("test-db-password", "dingtalk-log", "zh")
def _() -> Out:
    p = human_password("e")
    return f"李娜 14:02\n@王磊 测试库密码 {p}\n王磊 14:05\n好的，连上了", p


@cred("feishu-webhook", "feishu-log", "zh")
def _() -> Out:
    u = uuid4()
    return (
        f"陈静  3月12日 16:20\n飞书机器人 webhook：https://open.feishu.cn/open-apis/bot/v2/hook/{u}\n"
        f"陈静  3月12日 16:21\n告警就往这个群推",
        u,
    )


@cred("bastion-password", "wechat-log", "zh")
def _() -> Out:
    p = human_password("d")
    return f"[运维群] 刘洋: 堡垒机账号 liuyang 密码 {p} 别外传", p


@cred("dingtalk-robot", "dingtalk-log", "zh")
def _() -> Out:
    t, s = tok(HEX, 64), "SEC" + tok(HEX, 64)
    return f"赵敏 09:30\n钉钉机器人：https://oapi.dingtalk.com/robot/send?access_token={t}\n加签密钥 {s}", [
        t,
        s,
    ]


@cred("wecom-webhook", "wechat-log", "zh")
def _() -> Out:
    u = uuid4()
    return (
        f"孙浩 2024/3/12 11:08\n企业微信群机器人地址 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={u}",
        u,
    )


@cred("wechat-appsecret", "wechat-log", "zh")
def _() -> Out:
    appid, secret = "wx" + tok(HEX, 16), tok(HEX, 32)
    return f"黄丽: 小程序 AppID {appid}\n黄丽: AppSecret {secret}\n黄丽: 别发到大群里", secret


@cred("feishu-app", "feishu-log", "zh")
def _() -> Out:
    app_id, secret = "cli_" + tok(HEX, 16), tok(ALNUM, 32)
    return f"周琦  昨天 18:40\n飞书应用凭证：App ID {app_id}，App Secret {secret}", secret


@cred("dingtalk-app", "dingtalk-log", "zh")
def _() -> Out:
    key, secret = "ding" + tok(LOWER + DIGITS, 16), tok(B64URL, 64)
    return f"吴芳 15:12\n钉钉应用 AppKey：{key}\nAppSecret：{secret}", secret


@cred("server-password", "chat-split", "zh")
def _() -> Out:
    p = human_password("d")
    return f"张伟 10:41\n服务器密码是\n张伟 10:41\n{p}\n李娜 10:42\n👌", p


@cred("wifi", "wechat-log", "zh")
def _() -> Out:
    p = wifi_password()
    return f"2024-03-15 19:02:11 妈妈\n家里的wifi密码改了，新的是{p}\n2024-03-15 19:05:40 我\n好的", p


@cred("duty-account", "dingtalk-log", "zh")
def _() -> Out:
    p = human_password("a")
    return f"【群公告】本周值班账号 duty01 / {p}，周日晚上统一改密码", p


@cred("navicat-connection", "wechat-log", "zh")
def _() -> Out:
    p = human_password("e")
    return f"许明: Navicat 连接：主机 10.20.3.8 端口 3306 用户 root 密码 {p}", p


# ============================================================================================
# Chinese with English mixed in
# ============================================================================================


@cred("github", "mixed-zh-en", "zh", ["ghp_"])
def _() -> Out:
    k = ghp()
    return f"我的 github token 是 {k}，你先用着", k


@cred("openai", "mixed-zh-en", "zh", ["sk-proj-"])
def _() -> Out:
    k = openai_key()
    return f"把 OPENAI_API_KEY 设成 {k} 就行", k


@cred("deepseek", "mixed-zh-en", "zh", ["sk-"])
def _() -> Out:
    k = "sk-" + tok(HEX, 32)
    return f"DeepSeek 的 key 我放这了 {k}，额度不多省着用", k


@cred("moonshot", "mixed-zh-en", "zh", ["sk-"])
def _() -> Out:
    k = "sk-" + tok(ALNUM, 48)
    return f"Kimi 的 api key：{k}", k


@cred("dashscope", "mixed-zh-en", "zh", ["sk-"])
def _() -> Out:
    k = "sk-" + tok(HEX, 32)
    return f"通义千问用 DashScope，key 是 {k}，模型选 qwen-plus", k


@cred("zhipu", "mixed-zh-en", "zh")
def _() -> Out:
    k = tok(HEX, 32) + "." + tok(ALNUM, 16)
    return f"智谱的 key 是 {k}", k


@cred("tencent-cloud", "mixed-zh-en", "zh", ["AKID"])
def _() -> Out:
    sid, skey = "AKID" + tok(ALNUM, 32), tok(ALNUM, 32)
    return f"腾讯云 SecretId {sid} SecretKey {skey}，只开了 COS 权限", [sid, skey]


@cred("volcengine", "mixed-zh-en", "zh", ["AKLT"])
def _() -> Out:
    ak = "AKLT" + tok(ALNUM, 40)
    sk = fresh(lambda: base64.b64encode(tok(HEX, 40).encode()).decode())
    return f"火山引擎 AK：{ak}\nSK：{sk}", [ak, sk]


@cred("qiniu", "mixed-zh-en", "zh")
def _() -> Out:
    ak, sk = tok(B64URL, 40), tok(B64URL, 40)
    return f"七牛的 AK/SK 分别是 {ak} 和 {sk}", [ak, sk]


@cred("baidu-map", "url-query", "zh")
def _() -> Out:
    k = tok(ALNUM, 32)
    return (
        f"浏览器里直接打开 "
        "https://api.map.baidu.com/geocoding/v3/?address=北京市海淀区上地十街10号"
        f"&output=json&ak={k} 能返回坐标",
        k,
    )


@cred("amap", "url-query", "zh")
def _() -> Out:
    k = tok(HEX, 32)
    return f"高德天气接口：https://restapi.amap.com/v3/weather/weatherInfo?city=110101&key={k}", k


@cred("baidu-ai", "mixed-zh-en", "zh")
def _() -> Out:
    api, secret = tok(ALNUM, 24), tok(ALNUM, 32)
    return f"百度智能云 OCR：API Key {api}，Secret Key {secret}", [api, secret]


@cred("wechat-pay", "mixed-zh-en", "zh")
def _() -> Out:
    k = tok(ALNUM, 32)
    return f"微信支付商户平台的 APIv2 密钥（32位）：{k}", k


@cred("qq-mail-authcode", "mixed-zh-en", "zh")
def _() -> Out:
    k = tok(LOWER, 16)
    return f"QQ邮箱 SMTP 授权码：{k}，不是登录密码", k


@cred("github", "pasted-twice", "zh", ["ghp_"])
def _() -> Out:
    k = ghp()
    return f"GitHub 的 token 我贴两遍怕你漏掉 {k}\n{k}", k


@cred("huggingface", "markdown-code", "zh", ["hf_"])
def _() -> Out:
    k = "hf_" + tok(string.ascii_letters, 34)
    return f"下载模型前先 `huggingface-cli login`，token 用这个：`{k}`", k


@cred("server-password", "markdown-bold", "zh")
def _() -> Out:
    p = human_password("a")
    return f"服务器 root 密码：**{p}**", p


@cred("ops-account", "list", "zh")
def _() -> Out:
    p = human_password("d")
    return f"1. 账号：ops\n2. 密码：{p}\n3. 地址：https://jump.larkfield.cn", p


@cred("vpn-password", "quoted-reply", "zh")
def _() -> Out:
    p = human_password("a")
    return f"> 张伟：VPN 密码 {p}\n收到，谢谢", p


@cred("reset-link", "reset-link", "zh")
def _() -> Out:
    t = tok(HEX, 40)
    return f"重置密码链接：https://account.larkfield.cn/reset?token={t} 30分钟内有效", t


@cred("magic-link", "magic-link", "zh")
def _() -> Out:
    t = tok(B64URL, 43)
    return f"点这个链接直接登录，不用输密码：https://app.tallyboard.io/auth/magic?token={t}", t


@cred("wechat-oauth-code", "oauth-redirect", "zh")
def _() -> Out:
    code = tok(ALNUM, 32)
    return (
        f"微信授权回调地址 "
        f"https://m.larkfield.cn/wx/callback?code={code}&state=STATE#wechat_redirect 拿到了 code",
        code,
    )


@cred("wifi", "wifi-card", "zh")
def _() -> Out:
    p = wifi_password()
    return f"【访客网络】\nWiFi名称：Larkfield-5G\n密码：{p}\n如需帮助请联系前台", p


@cred("door-code", "chat", "zh")
def _() -> Out:
    p = pin(6)
    return f"门禁密码 {p}#，进门后记得关好", p


@cred("bank-pin", "memory", "zh")
def _() -> Out:
    p = pin(6)
    return f"用户的银行卡密码是 {p}，他让我提醒他别忘了", p


@cred("payment-pin", "chat", "zh")
def _() -> Out:
    p = pin(6)
    return f"支付密码我改成{p}了，你帮我记一下", p


# ---- full-width punctuation and corner brackets ----


@cred("account-password", "fullwidth", "zh")
def _() -> Out:
    p = human_password("a")
    return f"账号：admin，密码：{p}，记得改", p


@cred("database-password", "fullwidth", "zh")
def _() -> Out:
    p = human_password("c")
    return f"数据库密码：{p}。", p


@cred("github", "fullwidth", "zh", ["ghp_"])
def _() -> Out:
    k = ghp()
    return f"CI 用的 Token（{k}）已经配好了", k


@cred("email-password", "fullwidth", "zh")
def _() -> Out:
    p = human_password("g")
    return f"邮箱密码是「{p}」，登录后先开两步验证", p


@cred("nas-password", "fullwidth", "zh")
def _() -> Out:
    p = human_password("f")
    return f"群晖：用户名 admin；密码：{p}；端口 5001。", p


# ---- emoji ----


@cred("server-password", "emoji", "zh")
def _() -> Out:
    p = human_password("d")
    return f"密码👉{p}", p


@cred("alibaba-cloud", "emoji", "zh", ["LTAI"])
def _() -> Out:
    ak, sk = "LTAI5t" + tok(ALNUM, 18), tok(ALNUM, 30)
    return f"🔑AK：{ak}\n🔒SK：{sk}\n用完记得删🙏", [ak, sk]


# ---- memory in Chinese ----


@cred("server-root-password", "memory", "zh")
def _() -> Out:
    p = human_password("d")
    return f"用户的服务器 root 密码是 {p}", p


@cred("wifi", "memory", "zh")
def _() -> Out:
    p = wifi_password()
    return f"用户说他家 Wi-Fi 密码是 {p}。", p


@cred("alibaba-cloud", "memory", "zh", ["LTAI"])
def _() -> Out:
    ak, sk = "LTAI5t" + tok(ALNUM, 18), tok(ALNUM, 30)
    return f"用户的阿里云 AccessKey Secret 为 {sk}（ID：{ak}）。", [ak, sk]


@cred("email-password", "memory", "zh")
def _() -> Out:
    p = human_password("e")
    return f"记住：用户公司邮箱的登录密码是{p}，每 90 天要改一次。", p


@cred("deepseek", "memory", "zh", ["sk-"])
def _() -> Out:
    k = "sk-" + tok(HEX, 32)
    return f"- 用户在 DeepSeek 开放平台的 API key：{k}", k


@cred("ssh-passphrase", "memory", "zh")
def _() -> Out:
    p = human_password("b")
    return f"用户的 SSH 私钥口令为 {p}", p


@cred("recovery-phrase", "memory", "zh")
def _() -> Out:
    p = recovery_phrase()
    return f"用户的钱包助记词：{p}", p


# ---- voice notes in Chinese ----


@cred("database-password", "voice-note", "zh")
def _() -> Out:
    p = human_password("e")
    return f"语音转文字：那个数据库密码是{p}你记一下然后明天上线前改掉", p


@cred("wifi", "voice-note", "zh")
def _() -> Out:
    p = wifi_password()
    return f"[语音转文字] 到了以后连那个工作室的wifi密码是{p}全是小写", p


# ---- traditional Chinese ----


@cred("database-password", "zh-traditional", "zh")
def _() -> Out:
    p = human_password("a")
    return f"資料庫密碼：{p}，請勿外流", p


@cred("google-maps", "zh-traditional", "zh", ["AIza"])
def _() -> Out:
    k = google_key()
    return f"地圖 API 金鑰是 {k}，已限制網域", k


@cred("line-channel-token", "zh-traditional", "zh")
def _() -> Out:
    t = tok(B64, 171) + "="
    return f"LINE Bot 的 Channel 存取權杖：{t}", t


@cred("wifi", "zh-traditional", "zh")
def _() -> Out:
    p = wifi_password()
    return f"Wi-Fi 密碼 {p}（訪客用）", p


@cred("line-notify", "zh-traditional", "zh")
def _() -> Out:
    t = tok(ALNUM, 43)
    return f"LINE Notify 權杖 {t} 已發行，請貼到排程設定裡", t


@cred("shopee-partner-key", "zh-traditional", "zh")
def _() -> Out:
    k = tok(HEX, 64)
    return f"蝦皮開放平台 Partner Key：{k}", k


@cred("router-admin", "zh-traditional", "zh")
def _() -> Out:
    p = human_password("c")
    return f"分享器管理密碼改成 {p} 了喔", p


@cred("bank-login", "zh-traditional", "zh")
def _() -> Out:
    p = human_password("g")
    return f"網銀的使用者代號是 maya0312，密碼是 {p}", p


# ---- more Chinese chat ----


@cred("bastion-password", "chat", "zh")
def _() -> Out:
    p = human_password("d")
    return f"堡垒机 root 密码改成 {p} 了", p


@cred("gitlab", "chat", "zh", ["glpat-"])
def _() -> Out:
    k = "glpat-" + tok(ALNUM + "-_", 20)
    return f"内网 GitLab 的访问令牌：{k}，只给了 read_repository 权限", k


@cred("jenkins-password", "chat-typo", "zh")
def _() -> Out:
    p = human_password("a")
    return f"jenkins 密吗是 {p}（打错字了，是密码）", p


@cred("openai", "mixed-zh-en", "zh", ["sk-proj-"])
def _() -> Out:
    k = openai_key()
    return f"export OPENAI_API_KEY={k} 这样写进 .zshrc 就可以了", k


@cred("anthropic", "mixed-zh-en", "zh", ["sk-ant-api03-"])
def _() -> Out:
    k = anthropic_key()
    return f"Claude 的 key 给你：{k}，月底前有效", k


@cred("slack-bot", "mixed-zh-en", "zh", ["xoxb-"])
def _() -> Out:
    k = f"xoxb-{digits(11)}-{digits(13)}-{tok(ALNUM, 24)}"
    return f"Slack bot token 是 {k}，装到 #告警 频道", k


@cred("telegram-bot", "mixed-zh-en", "zh")
def _() -> Out:
    t = digits(10) + ":AA" + tok(B64URL, 33)
    return f"TG 机器人 token：{t}", t


@cred("aws", "mixed-zh-en", "zh", ["AKIA"])
def _() -> Out:
    key_id, secret = aws_pair()
    return f"AWS 的 access key 是 {key_id}，secret 是 {secret}，别提交到 git", [key_id, secret]


@cred("jupyter", "url-query", "zh")
def _() -> Out:
    k = tok(HEX, 48)
    return f"服务器上的 Jupyter：http://10.20.3.8:8888/?token={k} 直接打开就行", k


@cred("temp-password", "sms", "zh")
def _() -> Out:
    p = human_password("d")
    return f"【云服务】您的初始密码为{p}，请登录后及时修改。", p


# ============================================================================================
# Look-alikes: talk about passwords and keys with none in it
# ============================================================================================

look(
    "chat-no-value",
    "en",
    "I changed my password yesterday, so the old one won't work.",
    "the key is in the drawer next to the printer",
    "can you pass me the token from the meeting? the blue plastic one",
    "Password reset worked, I'm in now 👍",
    "Did you get the API key I asked IT for? still waiting on them",
    "I'll DM you the password later tonight.",
    "forgot my pw again lol, locked out for 30 min",
    "We need to rotate the AWS keys before Friday.",
    "Who has the key to the server room?",
    "The token expired so I logged in again.",
    "new laptop, so I have to set up my SSH keys again ugh",
    "my password has a dollar sign in it and the script chokes on it",
    "pls don't paste passwords in this channel, use a 1Password share link",
    "I'll send the Wi-Fi password when you get here",
    "the secret is out — we're moving offices in June",
    "Do you know the door code? I'm outside in the rain",
    "what's the guest wifi? nvm found the card",
    "my pin got blocked after three tries, going to the branch tomorrow",
    "Can you reset my password? I'm on the 3rd floor, desk 14.",
    "> what's the password?\nask Priya, she set it up",
)
look(
    "chat-no-value",
    "zh",
    "密码我明天发你",
    "钥匙在前台",
    "我把密码改了，旧的不能用了",
    "token 过期了，重新登录一下就好",
    "wifi 密码贴在冰箱上",
    "别在群里发密码，私聊",
    "你的 API key 申请下来了吗？",
    "密钥要定期轮换，下周一起弄",
    "忘记密码了，找运维重置一下",
    "门禁卡丢了，去物业补办",
    "验证码收不到怎么办",
    "我把 key 放在 1Password 里了，你去那边找",
    "密碼我晚點傳給你",
    "鑰匙放在信箱裡",
    "口令红包抢到了吗",
    "张伟 10:41\n服务器密码是多少来着？\n李娜 10:42\n我也不知道，问一下刘洋",
    "[运维群] 刘洋: 堡垒机密码这周五统一改，改完在群里通知",
    "支付密码输错三次被锁了😭",
)
look(
    "idiom",
    "en",
    "The key takeaway from the retro: smaller PRs.",
    "Keep it under your hat — it's a secret until the launch.",
    "By the same token, we should cut the Tuesday sync.",
    "That's the secret sauce of their onboarding.",
    "She passed with flying colors.",
    "Boarding pass: seat 14C, gate B22, group 3",
    "Token Ring networks were common in the 90s.",
    "Low-key the best pizza in town.",
    "Keynote starts at 9:30 in Hall A.",
    "Secret Santa: draw names on Friday, $25 limit",
    "Password-protected PDFs can't be indexed by the search tool.",
    "The passphrase approach (four random words) is easier to remember.",
    "Pass the salt, please.",
    "He holds the keys to the kingdom in that team.",
)
look(
    "idiom",
    "zh",
    "关键在于先把需求对齐",
    "成功的秘诀是坚持",
    "令牌桶算法用来限流",
    "密码学是一门古老的学科",
    "通行证在安检口领取",
    "他一语道破了其中的奥秘",
    "军训时教官喊口令",
    "這是金鑰交換協定的基本原理",
    "權杖是國王權力的象徵",
    "密碼學導論 第三版",
    "解锁新技能：做红烧肉",
    "钥匙扣是纪念品",
    "这道题的突破口在第二问",
)
look(
    "product-name",
    "en",
    "I moved from LastPass to Bitwarden after the breach.",
    "KeePassXC 2.7.9 can open the old Passwords.kdbx file.",
    "1Password 8 for Mac has a new Watchtower page.",
    "Does Bitwarden's free plan support TOTP?",
    "We use HashiCorp Vault for app secrets and AWS Secrets Manager for RDS.",
    "Dashlane vs NordPass: which one has better family sharing?",
    "Keychain Access shows 3 items for github.com",
    "Google Password Manager flagged 12 reused passwords",
)
look(
    "product-name",
    "zh",
    "公司统一用 1Password 管理密码",
    "Authy 和 Google Authenticator 哪个好用",
    "KeePass 的数据库文件放在坚果云上同步",
)
look(
    "error-message",
    "en",
    "Error: Invalid API key provided. Check your dashboard.",
    lambda: (
        "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key "
        "provided: sk-proj-"
        + "*" * 156
        + tok(ALNUM, 4)
        + ". You can find your API key at https://platform.openai.com/account/api-keys.', 'type': "
        "'invalid_request_error', 'code': 'invalid_api_key'}}"
    ),
    "403 Forbidden: token does not have the required scope (repo)",
    "ssh: Permission denied (publickey,password).",
    'FATAL:  password authentication failed for user "report_ro"',
    "remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/larkfield/infra.git/'",
    "AccessDenied: The AWS Access Key Id you provided does not exist in our records.",
    "Your password must be at least 12 characters and include a number.",
    "The security token included in the request is expired",
    lambda: f"401 Unauthorized (request id {uuid4()}): API key missing or revoked",
)
look(
    "error-message",
    "zh",
    "登录失败：密码错误，还可以尝试 4 次",
    "令牌已过期，请重新登录",
    lambda: (
        '{"errcode":40125,"errmsg":"invalid appsecret, rid: '
        + f"{tok(HEX, 8)}-{tok(HEX, 8)}-{tok(HEX, 8)}"
        + '"}'
    ),
    "密碼錯誤，請重新輸入",
    "签名验证失败(sign error)，请检查密钥配置",
    "AccessKeyId 不存在或已被禁用 (InvalidAccessKeyId.NotFound)",
)

# ---- URLs with harmless parameters ----
look(
    "url-harmless",
    "en",
    "https://www.larkfield.io/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring_launch",
    lambda: f"https://www.amazon.com/dp/B0{tok(UPPER + DIGITS, 8)}?ref=ppx_yo2ov_dt_b_fed_asin_title&th=1",
    lambda: f"https://youtu.be/{tok(B64URL, 11)}?si={tok(B64URL, 16)}",
    lambda: f"https://open.spotify.com/track/{tok(ALNUM, 22)}?si={tok(HEX, 16)}",
    lambda: f"https://shop.larkfield.io/?gclid=Cj0KCQjw{tok(B64URL, 80)}_BwE",
    lambda: f"https://blog.larkfield.io/post/42?fbclid=IwAR{tok(B64URL, 57)}",
    "https://conf.pyconasia.org/2024/schedule?session=day2-keynote",
    "https://github.com/larkfield/api/pull/482#discussion_r1512093384",
    lambda: f"https://docs.google.com/document/d/1{tok(B64URL, 43)}/edit?usp=sharing",
    "https://www.google.com/search?q=how+to+reset+router+password",
    "https://maps.google.com/?q=31.2304,121.4737",
    "https://arxiv.org/abs/2403.01187v2",
    "https://news.ycombinator.com/item?id=39681320",
    "https://www.larkfield.io/login?next=%2Fsettings%2Fsecurity&lang=en",
    "https://www.reddit.com/r/selfhosted/comments/1bd3k9x/best_password_manager_2024/",
)
look(
    "url-harmless",
    "zh",
    lambda: (
        f"https://www.bilibili.com/video/BV1{tok(ALNUM, 9)}/"
        f"?spm_id_from=333.1007.tianma.1-1-1.click&vd_source={tok(HEX, 32)}"
    ),
    "https://www.zhihu.com/question/58723194/answer/2893011742",
    "https://item.jd.com/100038004353.html?spm=a2c4g.11186623.0.0",
    lambda: f"https://mp.weixin.qq.com/s/{tok(B64URL, 22)} 这篇讲密码管理的文章不错",
    "https://www.baidu.com/s?wd=忘记密码怎么办&ie=utf-8",
)

# ---- numbers and codes that are no credential ----
look(
    "tracking-number",
    "en",
    lambda: f"UPS tracking: 1Z{tok(UPPER + DIGITS, 6)}03{digits(8)}",
    lambda: f"FedEx {digits(12)} — out for delivery",
    lambda: f"USPS 9400 {digits(4)} {digits(4)} {digits(4)} {digits(4)} {digits(2)}",
    lambda: f"DHL waybill {digits(10)}",
    lambda: f"Royal Mail: {tok(UPPER, 2)}{digits(9)}GB",
)
look(
    "tracking-number",
    "zh",
    lambda: f"顺丰单号 SF{digits(13)}，预计明天到",
    lambda: f"中通快递 7{digits(13)} 已签收",
    lambda: f"EMS 运单号：E{tok(UPPER, 1)}{digits(9)}CN",
    lambda: f"京东物流 JDV{digits(12)}",
)
look(
    "order-id",
    "en",
    lambda: f"Amazon order {digits(3)}-{digits(7)}-{digits(7)}",
    lambda: f"eBay order number {digits(2)}-{digits(5)}-{digits(5)}",
    "Your Shopify order #1042 has shipped.",
    lambda: f"Apple order W{digits(10)} — ready for pickup",
    lambda: f"payment pi_3{tok(ALNUM, 23)} succeeded",
)
look(
    "order-id",
    "zh",
    lambda: f"订单编号：{digits(19)}",
    lambda: f"拼多多订单 {R.randint(230101, 241231)}-{digits(15)}",
    lambda: f"发票号码 {digits(8)}，开票日期 2024-03-12",
)
look(
    "flight-booking",
    "en",
    "CA1831 PEK→SHA 08:00, terminal 3",
    "UA 857 SFO-PVG departs 11:25",
    lambda: f"booking ref {tok(UPPER, 6)}, last name KOWALSKI",
    lambda: f"Confirmation code: {tok(UPPER + DIGITS, 6)}",
    lambda: f"e-ticket 999-{digits(10)}",
    lambda: f"Amtrak reservation {tok(UPPER + DIGITS, 6)}, car 4 seat 12D",
    lambda: f"Booking.com confirmation {digits(4)}.{digits(3)}.{digits(3)}",
)
look(
    "flight-booking",
    "zh",
    lambda: f"确认码 {tok(UPPER, 6)}，明早 8 点值机",
    "G1372 次列车 北京南→上海虹桥 二等座 05车12F",
    lambda: f"酒店订单号 {digits(10)}，入住 3月15日",
)
look(
    "coupon-code",
    "en",
    "use code SPRING25 at checkout for 25% off",
    lambda: f"Promo code: WELCOME-{tok(UPPER + DIGITS, 4)} (new customers)",
    "FREESHIP50 works on orders over $50",
    lambda: f"your referral code is MAYA{tok(UPPER + DIGITS, 4)}",
)
look(
    "coupon-code",
    "zh",
    "优惠码 HAPPY618，满300减50",
    lambda: f"饿了么红包口令：{tok(UPPER + DIGITS, 6)}",
)
look(
    "phone-number",
    "en",
    lambda: f"call me at +1 (415) {digits(3)}-{digits(4)}",
    lambda: f"UK office: +44 20 {digits(4)} {digits(4)}",
    lambda: f"ext. {digits(4)} for the help desk",
    lambda: f"WhatsApp +351 9{digits(2)} {digits(3)} {digits(3)}",
)
look(
    "phone-number",
    "zh",
    lambda: f"我的手机号 13{R.randint(0, 9)}{digits(8)}",
    lambda: f"客服电话 400-{digits(3)}-{digits(4)}",
    lambda: f"香港號碼 +852 {digits(4)} {digits(4)}",
)
look(
    "license-plate",
    "en",
    lambda: f"the car is a grey Civic, CA plate {R.randint(5, 9)}{tok(UPPER, 3)}{digits(3)}",
    lambda: f"UK plate {tok(UPPER, 2)}{R.randint(10, 24)} {tok(UPPER, 3)}",
)
look(
    "license-plate",
    "zh",
    lambda: f"车牌 京A·{tok(PLATE, 2)}{digits(3)}，停在 B2",
    lambda: f"粤B {digits(3)}{tok(PLATE, 2)} 的车挡住出口了",
    lambda: f"沪C-{tok(PLATE, 1)}{digits(4)}",
)
look(
    "isbn",
    "en",
    "ISBN 978-0-13-468599-1",
    "ISBN-13: 9781492051367 (paperback)",
    "isbn 0-596-52068-9",
)
look(
    "isbn",
    "zh",
    "《密码编码学与网络安全》ISBN 978-7-121-40152-3",
    "书号 ISBN 978-7-115-54608-1",
)
look(
    "git",
    "en",
    lambda: f"git checkout -b fix/token-refresh-{tok(HEX, 7)}",
    lambda: f"Merge {tok(HEX, 7)} into main",
    lambda: f"v2.3.1-3-g{tok(HEX, 7)}",
    lambda: (
        f'commit {tok(HEX, 40)}\nAuthor: Maya K <maya@larkfield.io>\n\n    Revert "store api key in keychain"'
    ),
    lambda: f"{tok(HEX, 7)} auth: the password reset flow sends one email, not two",
    "git rebase -i HEAD~3",
    lambda: f"branch feature/LARK-{R.randint(100, 999)}-rotate-secrets",
    lambda: f"cherry-picked {tok(HEX, 12)} onto release/2024.03",
)
look(
    "git",
    "zh",
    lambda: f"我把 {tok(HEX, 7)} 回滚了，那个提交把密码校验改坏了",
    lambda: f"分支 hotfix/登录密钥-{tok(HEX, 6)} 已合并",
)
look(
    "docker",
    "en",
    "FROM python:3.12-slim-bookworm",
    lambda: f"ghcr.io/larkfield/api:sha-{tok(HEX, 7)}",
    lambda: f"nginx@sha256:{tok(HEX, 64)}",
    "docker pull redis:7.2-alpine",
    lambda: f"CONTAINER ID   IMAGE          STATUS\n{tok(HEX, 12)}   postgres:16    Up 3 hours",
    lambda: f"docker image rm {tok(HEX, 12)}",
)
look(
    "docker",
    "zh",
    lambda: f"镜像 registry.cn-hangzhou.aliyuncs.com/larkfield/web:20240312-{tok(HEX, 7)} 已推送",
)
look(
    "date-time",
    "en",
    "2024-03-12T10:41:05+08:00",
    "Mar 12, 2024 10:41 AM",
    "12/03/2024 (that's March, not December)",
    "last login: Tue Mar 12 10:41:05 2024 from 10.0.4.17",
    "epoch 1710211265 → 2024-03-12 02:41:05 UTC",
    "Q1 FY24 close is 2024-03-29",
    "10:41:05.123Z",
)
look(
    "date-time",
    "zh",
    "2024年3月12日 上午10:41",
    "周二 14:00-15:30 开会",
    "下午三点半在前台集合",
    "民國113年3月12日",
)
look(
    "money",
    "en",
    "$1,249.99 incl. tax",
    "€12.50 per seat per month",
    "USD 4.2M ARR, up 38% YoY",
    "Venmo @maya-k $42.10 for the pizza",
    "₹2,499 on sale",
)
look(
    "money",
    "zh",
    "¥3,280.00 已付款",
    "人民币壹万贰仟捌佰元整（12,800）",
    "HK$388 一位",
)
look(
    "coordinates",
    "en",
    "meet at 37.7749° N, 122.4194° W",
    "lat/lng: -33.8688, 151.2093",
    "geo:51.5074,-0.1278",
)
look(
    "coordinates",
    "zh",
    "坐标 39.9042, 116.4074（天安门）",
    "GPS：北纬31°14′ 东经121°28′",
)
look(
    "hex-colour",
    "en",
    "primary button: #1F6FEB, hover #1158C7",
    "--brand: #0B3D91;",
    "rgb(31, 111, 235) / hsl(215, 84%, 52%)",
    "Pantone 19-4052 Classic Blue",
)
look(
    "hex-colour",
    "zh",
    "主色用 #FF6A00，辅助色 #1677FF",
)
look(
    "personal-id",
    "zh",
    lambda: f"身份证号 {china_id()}，用于开发票",
    lambda: f"报名需要身份证号：{china_id()}",
    lambda: f"统一社会信用代码 91110108MA0{tok(UPPER + DIGITS, 6)}",
    lambda: f"护照号 E{digits(8)}",
    lambda: f"工号 {digits(8)}，部门 研发中心",
)
look(
    "personal-id",
    "en",
    lambda: f"employee ID E-{digits(5)}, badge {digits(7)}",
    lambda: f"Apple serial number C02{tok(UPPER + DIGITS, 9)}",
    lambda: f"IMEI {digits(15)}",
    lambda: "MAC address " + ":".join(tok(HEX, 2) for _ in range(6)),
)
look(
    "markdown",
    "en",
    "**Password policy**: min 12 chars, no reuse of the last 5.",
    "`passwd` changes your login password.",
    "## Rotating keys\n1. Open the console\n2. Create the new key\n3. Delete the old one",
    "| Field | Where |\n|---|---|\n| password | in Vault, `secret/staging/db` |\n| api key | "
    '1Password, "Prod" |',
    "> Note: never commit `.env` files",
    "- [x] rotate API keys\n- [ ] revoke old tokens\n- [ ] tell the team",
    "the *secret* ingredient is patience",
    "~~old password rules~~ see the new policy",
    "```bash\nexport OPENAI_API_KEY=$(op read op://dev/openai/key)\n```",
    'Use `ssh-keygen -t ed25519 -C "maya@laptop"` to make a new key.',
)
look(
    "markdown",
    "zh",
    "**密码规则**：至少 8 位，包含大小写字母和数字",
    "- [ ] 轮换 AK/SK\n- [x] 删除离职员工账号",
    "> 注意：不要把 `.env` 提交到仓库",
)
look(
    "emoji",
    "en",
    "🔑 keys handed over to the new tenant 🏠",
    "🎉 Password reset flow shipped!",
    "🔐🔐 Security week 🔐🔐",
    "🙈 forgot my pin again",
    "👉 see pinned message for the agenda",
)
look(
    "emoji",
    "zh",
    "密码改好啦✅",
    "🔑钥匙我放你桌上了",
    "新门禁系统上线啦🎉 刷脸就能进",
)
look(
    "memory-benign",
    "en",
    "The user stores all passwords in Bitwarden and never wants them written down.",
    "User rotated the staging DB password on 2024-03-02; the new one is in Vault under secret/staging/db.",
    "User's GitHub username is maya-k; she signs commits with an SSH key.",
    "The user prefers API keys to be read from environment variables (OPENAI_API_KEY).",
    "User's AWS profile is named 'larkfield-dev' (region ap-southeast-1).",
    "The user's Wi-Fi network is called Moreno5G.",
    "User asked to be reminded to renew the TLS certificate before 2024-06-30.",
    "The user's door code was changed last week; they will tell the cleaner directly.",
    "The user keeps their AWS keys in ~/.aws/credentials and uses aws-vault to load them.",
    "User's password manager is 1Password; the shared vault is called Family.",
)
look(
    "memory-benign",
    "zh",
    "用户的服务器 root 密码存在 1Password 里，不要询问。",
    "用户习惯用钥匙串保存 token",
    lambda: f"用户的 SSH 公钥指纹是 SHA256:{tok(B64, 43)}",
    "用户每 90 天改一次邮箱密码，下次是 6 月 10 日。",
    "用户的阿里云账号开了 MFA，AK 由运维统一管理。",
)
look(
    "placeholder",
    "en",
    "password: ask Priya",
    "pw: same as the old one",
    'token: see 1Password item "Prod deploy"',
    "API key: <paste yours here>",
    "password: ******** (hidden)",
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "pass: (the usual)",
    'key = os.environ["STRIPE_SECRET_KEY"]',
)
look(
    "placeholder",
    "zh",
    "密码：问运维要",
    "密码：******",
    "密码：见飞书文档《环境信息》",
    "AK/SK：找张伟要，别自己建",
)
look(
    "invite-share",
    "en",
    lambda: f"join us on discord: https://discord.gg/{tok(ALNUM, 8)}",
    "you've been invited: https://github.com/orgs/larkfield/invitation",
    lambda: f"Zoom meeting ID: {digits(3)} {digits(4)} {digits(4)}",
)
look(
    "invite-share",
    "zh",
    lambda: f"链接: https://pan.baidu.com/s/1{tok(B64URL, 22)} 提取码: {tok(LOWER + DIGITS, 4)}",
    lambda: f"腾讯会议 会议号：{digits(3)} {digits(3)} {digits(3)}，会议密码见日历邀请",
)
look(
    "hash-id",
    "en",
    lambda: f"sha256sum: {tok(HEX, 64)}  ubuntu-24.04-desktop-amd64.iso",
    lambda: f"md5 {tok(HEX, 32)} matches the vendor's",
    lambda: f"trace id {tok(HEX, 32)}, span {tok(HEX, 16)}",
    lambda: f'ETag: "{tok(HEX, 32)}"',
    lambda: f"Sentry event {tok(HEX, 32)} — TypeError in checkout",
    lambda: f"integrity sha512-{tok(B64, 86)}==",
)
look(
    "hash-id",
    "zh",
    lambda: f"请求 ID：{uuid4()}，请提供给客服",
    lambda: f"文件 MD5：{tok(HEX, 32)}",
)
look(
    "public-key",
    "en",
    lambda: f"here's my public key: ssh-ed25519 {ed25519_public()} maya@laptop",
    lambda: f"Stripe publishable key for the checkout page: pk_live_51{tok(ALNUM, 97)}",
    lambda: "age recipient: age1" + tok("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
    lambda: "GPG fingerprint " + " ".join(tok("0123456789ABCDEF", 4) for _ in range(10)),
)
look(
    "public-key",
    "zh",
    lambda: f"我的公钥：ssh-ed25519 {ed25519_public()} zhangwei@mbp",
)
look(
    "version-build",
    "en",
    "v2.14.3-rc.1",
    lambda: f"build 20240312.4 (commit {tok(HEX, 7)})",
    "Chrome 122.0.6261.112 (Official Build) (arm64)",
    "node v20.11.1, npm 10.2.4",
)
look(
    "version-build",
    "zh",
    "版本号 3.8.12，构建号 20240312-0941",
)
look(
    "file-path",
    "en",
    "~/.ssh/id_ed25519 has the wrong permissions (0644)",
    "don't touch /etc/shadow",
    "C:\\Users\\maya\\AppData\\Roaming\\Bitwarden\\data.json",
    "secrets.yaml is in .gitignore",
    "config/master.key is missing, ask Tom for it",
)
look(
    "file-path",
    "zh",
    "密钥文件在 /etc/nginx/ssl/server.key，别删",
)
look(
    "password-policy",
    "en",
    "Passwords expire every 90 days.",
    "Use at least 16 characters; a passphrase of four words is fine.",
    "MFA is required for all admin accounts from April 1.",
)
look(
    "password-policy",
    "zh",
    "密码长度至少8位，需包含大小写字母、数字和特殊字符",
    "连续输错5次密码，账号锁定30分钟",
    "密碼每三個月需更換一次",
)
look(
    "network",
    "en",
    "SSID: Cafe_Guest (open network, no password)",
    "server is at 10.0.4.17, port 22",
    "IPv6 2001:db8:85a3::8a2e:370:7334",
    "Wi-Fi: Larkfield-Guest — ask the front desk for the password",
)
look(
    "network",
    "zh",
    "WiFi 名称 Larkfield-5G，密码在前台",
    "内网网关 192.168.1.1，DNS 223.5.5.5",
)


# ============================================================================================


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    credentials: list[dict[str, Any]] = []
    for n, (provider, fmt, lang, prefix, builder) in enumerate(CREDENTIALS, 1):
        text, secret = builder()
        secrets = secret if isinstance(secret, list) else [secret]
        for s in secrets:
            if s not in text:
                raise AssertionError(f"h3c-{n:03d}: secret not in text")
        row: dict[str, Any] = {"id": f"h3c-{n:03d}", "provider": provider, "format": fmt, "lang": lang}
        row.update({"text": text, "secret": secret})
        if prefix:
            row["fixed_prefix"] = prefix
        credentials.append(row)
    lookalikes = [
        {"id": f"h3l-{n:03d}", "category": category, "lang": lang, "text": make()}
        for n, (category, lang, make) in enumerate(LOOKALIKES, 1)
    ]
    return credentials, lookalikes


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else HERE
    out.mkdir(parents=True, exist_ok=True)
    R.seed(SEED)
    credentials, lookalikes = build()
    for name, rows in (("credentials.jsonl", credentials), ("lookalikes.jsonl", lookalikes)):
        with (out / name).open("w", encoding="utf-8", newline="\n") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(credentials)} credentials, {len(lookalikes)} look-alikes → {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
