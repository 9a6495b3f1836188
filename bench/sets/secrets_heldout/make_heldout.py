#!/usr/bin/env python3
# ruff: noqa: E501  (a set of texts: one text a line reads better than texts cut to fit)
"""Writes the held-out secret-redaction set beside this file: credentials.jsonl and lookalikes.jsonl.

Run:  python bench/sets/secrets_heldout/make_heldout.py   (deterministic: one seeded generator)

The set was written blind (without the redactor's code, tests or tuning set in view) to give an
honest figure: texts are what people and tools produce (chat pastes, logs, config files, shell
commands, Chinese prose). Every value is fabricated here, drawn with the documented shape of its
kind (prefix, charset, length, fixed parts such as `T3BlbkFJ` in OpenAI keys or the CRC32 tail of
GitHub tokens), never a real key, and never one with EXAMPLE, test, or a run of 4 sequential or
repeated characters outside the fixed parts (real keys are random).

credentials.jsonl  {"id", "provider", "format", "lang", "text", "secret"}: `secret` is the exact
                   substring (or list of them) that must disappear; `fixed_prefix` (optional) lists
                   documented constant starts of a secret (`ghp_`, `sk-ant-api03-`) a redactor may keep.
lookalikes.jsonl   {"id", "category", "lang", "text"}: texts holding no secret at all.

Decisions on the borderline: a Stripe publishable key, a Mapbox public `pk.` token, a Sentry DSN,
an OAuth client_id, an age recipient, SSH/PGP/WireGuard public keys, certificates and Ansible
Vault ciphertext are public by design (look-alikes); one-time codes and commercial licence keys are
in neither file. An AWS access key id is listed as a secret beside its secret key.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import struct
import urllib.parse
import uuid
import zlib
from pathlib import Path
from typing import Any

SEED = 20250807
HERE = Path(__file__).resolve().parent
rng = random.Random(SEED)

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
LOWER_ALNUM = LOWER + DIGITS
UPPER_ALNUM = UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BASE62 = DIGITS + UPPER + LOWER
K8S = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes name suffixes

BAD_WORDS = ("example", "test", "sample", "dummy", "fake", "demo", "xxxx", "redact", "secret", "passw", "token")
PREFIXES: dict[str, str] = {}  # generated value -> its documented constant start


def _bad(value: str) -> bool:
    """A value no real key would be: a placeholder word, or 4 sequential or repeated characters."""
    low = value.lower()
    if any(word in low for word in BAD_WORDS):
        return True
    for i in range(len(value) - 3):
        a, b, c, d = (ord(ch) for ch in value[i : i + 4])
        if b - a == c - b == d - c and abs(b - a) <= 1:
            return True
    return False


def rand(charset: str, length: int) -> str:
    while True:
        value = "".join(rng.choice(charset) for _ in range(length))
        if not _bad(value):
            return value


def rbytes(count: int) -> bytes:
    while True:
        data = rng.randbytes(count)
        if not _bad(base64.b64encode(data).decode()):
            return data


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def keyed(prefix: str, rest: str) -> str:
    value = prefix + rest
    PREFIXES[value] = prefix
    return value


def digits(length: int) -> str:
    return rand(DIGITS[1:], 1) + rand(DIGITS, length - 1)


# ---- provider keys, in their documented shapes ------------------------------------------------


def base62(number: int, width: int) -> str:
    out = ""
    while number:
        number, rem = divmod(number, 62)
        out = BASE62[rem] + out
    return out.rjust(width, "0")


def github(prefix: str) -> str:
    """ghp_/gho_/ghs_/ghu_/ghr_: 30 random base62 characters and their CRC32 in 6 base62 ones."""
    body = rand(ALNUM, 30)
    return keyed(prefix, body + base62(zlib.crc32(body.encode()), 6))


def github_fine() -> str:
    return keyed("github_pat_", "11" + rand(UPPER_ALNUM, 20) + "_" + rand(ALNUM, 59))


def npm() -> str:
    body = rand(ALNUM, 30)
    return keyed("npm_", body + base62(zlib.crc32(body.encode()), 6))


def openai_proj() -> str:
    return keyed("sk-proj-", rand(B64URL, 74) + "T3BlbkFJ" + rand(B64URL, 74))


def openai_svcacct() -> str:
    return keyed("sk-svcacct-", rand(B64URL, 74) + "T3BlbkFJ" + rand(B64URL, 74))


def openai_legacy() -> str:
    return keyed("sk-", rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20))


def anthropic() -> str:
    return keyed("sk-ant-api03-", rand(B64URL, 93) + "AA")


def anthropic_admin() -> str:
    return keyed("sk-ant-admin01-", rand(B64URL, 93) + "AA")


def aws_id(prefix: str = "AKIA") -> str:
    return keyed(prefix, rand(B32, 16))


def aws_secret() -> str:
    return rand(B64, 40)


def aws_session() -> str:
    return keyed("IQoJb3JpZ2luX2Vj", rand(B64, 340) + "==")


def google_api() -> str:
    return keyed("AIzaSy", rand(B64URL, 33))


def google_oauth_secret() -> str:
    return keyed("GOCSPX-", rand(B64URL, 28))


def google_refresh() -> str:
    return keyed("1//0", rand(B64URL, 1) + "g" + rand(B64URL, 99))


def google_access() -> str:
    return keyed("ya29.", "a0" + rand(B64URL, 150))


def slack_bot() -> str:
    return keyed("xoxb-", f"{digits(12)}-{digits(13)}-{rand(ALNUM, 24)}")


def slack_user() -> str:
    return keyed("xoxp-", f"{digits(12)}-{digits(12)}-{digits(13)}-{rand(HEX, 32)}")


def slack_webhook() -> tuple[str, str]:
    """The webhook URL and its secret part (the workspace and bot ids are not secret)."""
    token = rand(ALNUM, 24)
    return f"https://hooks.slack.com/services/T{rand(UPPER_ALNUM, 8)}/B{rand(UPPER_ALNUM, 10)}/{token}", token


def stripe(prefix: str = "sk_live_") -> str:
    return keyed(prefix, "51" + rand(ALNUM, 97))


def stripe_whsec() -> str:
    return keyed("whsec_", rand(ALNUM, 32))


def twilio_sid() -> str:
    return "AC" + rand(HEX, 32)


def twilio_api_key() -> str:
    return keyed("SK", rand(HEX, 32))


def sendgrid() -> str:
    return keyed("SG.", rand(B64URL, 22) + "." + rand(B64URL, 43))


def mailgun() -> str:
    return keyed("key-", rand(HEX, 32))


def huggingface() -> str:
    return keyed("hf_", rand(UPPER + LOWER, 34))


def discord_bot() -> str:
    user_id = digits(18)
    return b64(user_id.encode()).rstrip("=") + "." + rand(B64URL, 6) + "." + rand(B64URL, 38)


def discord_webhook() -> tuple[str, str]:
    """The webhook URL and its secret part (the webhook id is not secret)."""
    token = rand(B64URL, 68)
    return f"https://discord.com/api/webhooks/{digits(19)}/{token}", token


def telegram() -> str:
    return digits(10) + ":AA" + rand(B64URL, 33)


def shopify() -> str:
    return keyed("shpat_", rand(HEX, 32))


def digitalocean() -> str:
    return keyed("dop_v1_", rand(HEX, 64))


def databricks() -> str:
    return keyed("dapi", rand(HEX, 32))


def doppler() -> str:
    return keyed("dp.pt.", rand(ALNUM, 43))


def linear() -> str:
    return keyed("lin_api_", rand(ALNUM, 40))


def notion() -> str:
    return keyed("ntn_", digits(11) + rand(ALNUM, 35))


def notion_legacy() -> str:
    return keyed("secret_", rand(ALNUM, 43))


def atlassian() -> str:
    return keyed("ATATT3xFfGF0", rand(B64URL, 171) + "=" + rand("0123456789ABCDEF", 8))


def postman() -> str:
    return keyed("PMAK-", rand(HEX, 24) + "-" + rand(HEX, 34))


def groq() -> str:
    return keyed("gsk_", rand(ALNUM, 20) + "WGdyb3FY" + rand(ALNUM, 24))


def replicate() -> str:
    return keyed("r8_", rand(ALNUM, 37))


def perplexity() -> str:
    return keyed("pplx-", rand(ALNUM, 48))


def xai() -> str:
    return keyed("xai-", rand(ALNUM, 80))


def openrouter() -> str:
    return keyed("sk-or-v1-", rand(HEX, 64))


def deepseek() -> str:
    return keyed("sk-", rand(HEX, 32))


def moonshot() -> str:
    return keyed("sk-", rand(ALNUM, 48))


def zhipu() -> str:
    return rand(HEX, 32) + "." + rand(ALNUM, 16)


def alibaba_id() -> str:
    return keyed("LTAI5t", rand(ALNUM, 18))


def tencent_id() -> str:
    return keyed("AKID", rand(ALNUM, 32))


def azure_storage_key() -> str:
    return b64(rbytes(64))


def azure_ad_secret() -> str:
    return rand(ALNUM, 3) + rand(DIGITS, 1) + "Q~" + rand(ALNUM + "_~.-", 34)


def heroku() -> str:
    return keyed("HRKU-AA", rand(B64URL, 58))


def vault_token() -> str:
    return keyed("hvs.", "CAESI" + rand(B64URL, 86))


def tfc_token() -> str:
    return rand(ALNUM, 14) + ".atlasv1." + rand(ALNUM, 67)


def sentry_user() -> str:
    return keyed("sntryu_", rand(HEX, 64))


def grafana() -> str:
    return keyed("glsa_", rand(ALNUM, 32) + "_" + rand(HEX, 8))


def dynatrace() -> str:
    return keyed("dt0c01.", rand(UPPER_ALNUM, 24) + "." + rand(UPPER_ALNUM, 64))


def airtable() -> str:
    return keyed("pat", rand(ALNUM, 14) + "." + rand(HEX, 64))


def age_secret() -> str:
    return keyed("AGE-SECRET-KEY-1", rand(BECH32.upper(), 58))


def flyio() -> str:
    return keyed("fo1_", rand(B64URL, 43))


def pulumi() -> str:
    return keyed("pul-", rand(HEX, 40))


def dockerhub() -> str:
    return keyed("dckr_pat_", rand(B64URL, 27))


def square() -> str:
    return keyed("EAAA", rand(B64URL, 60))


def braintree() -> str:
    return keyed("access_token$production$", rand(LOWER_ALNUM, 16) + "$" + rand(HEX, 32))


def mailchimp() -> str:
    return rand(HEX, 32) + "-us" + str(rng.randint(2, 21))


def newrelic() -> str:
    return keyed("NRAK-", rand(UPPER_ALNUM, 27))


def okta() -> str:
    return keyed("00", rand(B64URL, 40))


def langsmith() -> str:
    return keyed("lsv2_pt_", rand(HEX, 32) + "_" + rand(HEX, 10))


def supabase_pat() -> str:
    return keyed("sbp_", rand(HEX, 40))


def figma() -> str:
    return keyed("figd_", rand(B64URL, 40))


def tailscale() -> str:
    return keyed("tskey-auth-", "k" + rand(ALNUM, 11) + "CNTRL-" + rand(ALNUM, 32))


def fcm_server() -> str:
    return keyed("AAAA", rand(B64URL, 7) + ":APA91b" + rand(B64URL, 134))


def gitlab() -> str:
    return keyed("glpat-", rand(B64URL, 20))


def pypi() -> str:
    return keyed("pypi-AgEIcHlwaS5vcmc", "CJ" + rand(B64URL, 150))


def sendinblue() -> str:
    return keyed("xkeysib-", rand(HEX, 64) + "-" + rand(ALNUM, 16))


def cloudflare() -> str:
    return rand(B64URL, 40)


def wireguard_private() -> str:
    return b64(rbytes(32))


def jwt(payload: dict[str, Any], alg: str = "HS256") -> str:
    header = b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    value = f"{header}.{body}.{b64url(rbytes(32 if alg == 'HS256' else 256))}"
    PREFIXES[value] = "eyJ"
    return value


def pem(label: str, der_prefix: str, nbytes: int, width: int = 64) -> tuple[str, str]:
    """A PEM block and its body (the base64 lines, joined by newlines)."""
    raw = der_prefix + b64(rbytes(nbytes))
    body = "\n".join(raw[i : i + width] for i in range(0, len(raw), width))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body


def rsa_private() -> tuple[str, str]:
    return pem("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1180)


def rsa_private_pkcs1() -> tuple[str, str]:
    return pem("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 1170)


def openssh_private() -> tuple[str, str]:
    head = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACA"
    return pem("OPENSSH PRIVATE KEY", head, 236, width=70)


def ec_private() -> tuple[str, str]:
    return pem("EC PRIVATE KEY", "MHcCAQEEI", 112)


# ---- human passwords -------------------------------------------------------------------------

WORDS = (
    "marigold tundra copper lantern quarry falcon harbor juniper velvet orchid glacier pepper nimbus "
    "saffron walnut ember cobalt meadow raven thistle bramble sparrow granite willow cinder maple "
    "otter basil plum hazel badger lagoon pebble dune cactus heron mango kettle"
).split()
PINYIN = "xiaoyu wangfang chenlong liuyang zhangwei huanghe taishan meimei xingxing dabao qingdao hangzhou".split()
SYMBOLS = "!@#$%^&*?"


def in_url(value: str) -> str:
    """A password as it stands in a working URL: percent-encoded."""
    return urllib.parse.quote(value, safe="")


def password(style: str = "words", must: str = "") -> str:
    while True:
        if style == "words":
            first, second = rng.sample(WORDS, 2)
            value = f"{first.capitalize()}{rng.choice(SYMBOLS)}{second.capitalize()}{rng.randint(10, 99)}"
        elif style == "dashed":
            first, second = rng.sample(WORDS, 2)
            value = f"{first}-{rng.randint(100, 999)}-{second}"
        elif style == "typed":
            value = rand(ALNUM, 1) + rand(ALNUM + SYMBOLS, rng.randint(11, 15))
        elif style == "pinyin":
            value = f"{rng.choice(PINYIN).capitalize()}@{rng.randint(1978, 2004)}"
        elif style == "phrase":
            value = " ".join(rng.sample(WORDS, 5))
        elif style == "gmail_app":
            value = " ".join(rand(LOWER, 4) for _ in range(4))
        elif style == "qq_auth":
            value = rand(LOWER, 16)
        else:
            raise ValueError(style)
        if must:
            cut = rng.randint(2, len(value) - 2)
            value = value[:cut] + must + value[cut:]
        if not _bad(value.replace(" ", "")):
            return value


# ---- look-alike values -------------------------------------------------------------------------


def hexs(length: int) -> str:
    return "".join(rng.choice(HEX) for _ in range(length))


def uuid4() -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def uuid_key() -> str:
    """A UUID that is a credential (a webhook key): drawn like the other secrets."""
    while True:
        value = uuid4()
        if not _bad(value.replace("-", "")):
            return value


def issued_at() -> int:
    return rng.randint(1_700_000_000, 1_760_000_000)


def k8s_rs(name: str) -> str:
    return f"{name}-{''.join(rng.choice(K8S) for _ in range(rng.choice((9, 10))))}"


def k8s_pod(name: str, replicaset: str = "") -> str:
    return f"{replicaset or k8s_rs(name)}-{''.join(rng.choice(K8S) for _ in range(5))}"


def iban_de() -> str:
    bban = "".join(rng.choice(DIGITS) for _ in range(18))
    numeric = int(bban + "131400")  # D=13 E=14 and 00
    check = 98 - numeric % 97
    raw = f"DE{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def png_data_uri() -> str:
    """A real 4x4 PNG (random pixels), base64."""
    width = height = 4
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + b64(png)


def stripe_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(rng.choice(ALNUM) for _ in range(length))


def cert_pem() -> str:
    raw = "MIIDdzCCAl+gAwIBAgIU" + b64(rng.randbytes(880))
    return (
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))
        + "\n-----END CERTIFICATE-----"
    )


def public_key_pem() -> str:
    raw = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + b64(rng.randbytes(250)) + "IDAQAB"
    return (
        "-----BEGIN PUBLIC KEY-----\n"
        + "\n".join(raw[i : i + 64] for i in range(0, len(raw), 64))
        + "\n-----END PUBLIC KEY-----"
    )


def ssh_ed25519_pub() -> str:
    return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + b64(rng.randbytes(32))[:43].replace("=", "A")


def ssh_rsa_pub() -> str:
    return "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + b64(rng.randbytes(384))[:511]



# ---- credentials ---------------------------------------------------------------------------------


class Rows:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.rows: list[dict[str, Any]] = []

    def cred(self, provider: str, fmt: str, lang: str, text: str, secret: str | list[str]) -> None:
        secrets = secret if isinstance(secret, list) else [secret]
        for value in secrets:
            if value not in text:
                raise AssertionError(f"{provider}: {value!r} not in its text")
        row: dict[str, Any] = {
            "id": f"{self.prefix}-{len(self.rows) + 1:03d}",
            "provider": provider,
            "format": fmt,
            "lang": lang,
            "text": text,
            "secret": secret,
        }
        prefixes = sorted({PREFIXES[value] for value in secrets if value in PREFIXES})
        if prefixes:
            row["fixed_prefix"] = prefixes
        self.rows.append(row)

    def look(self, category: str, lang: str, text: str) -> None:
        self.rows.append({"id": f"{self.prefix}-{len(self.rows) + 1:03d}", "category": category, "lang": lang, "text": text})


def build_credentials() -> list[dict[str, Any]]:  # noqa: PLR0915 - one long list, read top to bottom
    r = Rows("cred")
    c = r.cred

    # OpenAI
    k = openai_proj()
    c("openai", "chat", "en", f"hey, can you check why my script keeps getting 401? I'm using {k}, it worked fine yesterday", k)
    k = openai_proj()
    c("openai", "env", "en", f"# copied from 1password, don't commit\nOPENAI_API_KEY={k}\nOPENAI_MODEL=gpt-4o-mini\nLOG_LEVEL=info\n", k)
    k = openai_proj()
    c("openai", "code", "en", f'from openai import OpenAI\n\nclient = OpenAI(api_key="{k}")\nresp = client.chat.completions.create(model="gpt-4o", messages=msgs)\nprint(resp.choices[0].message.content)', k)
    k = openai_proj()
    c("openai", "chat", "zh", f"帮我看下这个报错，key 是 {k}，是不是额度用完了？", k)
    k = openai_proj()
    c("openai", "log", "en", f"2024-11-02 09:14:55,201 DEBUG httpx: Request headers: {{'host': 'api.openai.com', 'authorization': 'Bearer {k}', 'content-type': 'application/json', 'user-agent': 'OpenAI/Python 1.51.0'}}", k)
    k = openai_legacy()
    c("openai", "prose", "en", f"Notes from the hackathon: the team key was {k} (Ben says he revoked it but I can't confirm).", k)
    k = openai_svcacct()
    c("openai", "yaml", "en", f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: llm-gateway\n  namespace: ml\ntype: Opaque\nstringData:\n  OPENAI_API_KEY: "{k}"\n', k)
    k = openai_proj()
    c("openai", "header", "en", f"POST /v1/responses HTTP/1.1\nHost: api.openai.com\nAuthorization: Bearer {k}\nContent-Type: application/json\nContent-Length: 212", k)

    # Anthropic
    k = anthropic()
    c("anthropic", "chat", "en", f"just use mine for now ({k}) and I'll rotate it tonight", k)
    k = anthropic()
    c("anthropic", "env", "en", f"ANTHROPIC_API_KEY={k}\nCLAUDE_MODEL=claude-sonnet-4-5\nMAX_TOKENS=4096", k)
    k = anthropic()
    c("anthropic", "code", "en", f"import Anthropic from '@anthropic-ai/sdk';\n\nconst anthropic = new Anthropic({{ apiKey: '{k}' }});\nconst msg = await anthropic.messages.create({{ model, max_tokens: 1024, messages }});", k)
    k = anthropic()
    c("anthropic", "chat", "zh", f"我把token换成{k}了，你再跑一下", k)
    k = anthropic()
    config = {"mcpServers": {"research": {"command": "uvx", "args": ["research-mcp"], "env": {"ANTHROPIC_API_KEY": k, "LOG_LEVEL": "warning"}}}}
    c("anthropic", "json", "en", json.dumps(config, indent=2), k)
    k = anthropic_admin()
    c("anthropic", "cli", "en", f'curl "https://api.anthropic.com/v1/organizations/users?limit=20" \\\n  --header "anthropic-version: 2023-06-01" \\\n  --header "x-api-key: {k}"', k)

    # GitHub
    k = github("ghs_")
    c("github", "cli", "en", f"$ git remote -v\norigin\thttps://x-access-token:{k}@github.com/acme/payments.git (fetch)\norigin\thttps://x-access-token:{k}@github.com/acme/payments.git (push)", k)
    k = github("ghp_")
    c("github", "chat", "en", f"clone it with `git clone https://lmorales:{k}@github.com/acme/billing-service.git` and you're set", k)
    k = github_fine()
    c("github", "env", "en", f"GH_TOKEN={k}\nGH_REPO=acme/infra-live\n", k)
    k = github("ghp_")
    c("github", "chat", "en", f"PAT is {k}. scopes: repo, read:org. expires in 30 days", k)
    k = github("gho_")
    c("github", "yaml", "en", f"github.com:\n    users:\n        lmorales:\n            oauth_token: {k}\n    git_protocol: https\n    oauth_token: {k}\n    user: lmorales\n", k)
    k = github("ghp_")
    c("github", "env", "en", f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={k}\nalways-auth=true\n", k)
    k = github("ghp_")
    c("github", "prose", "zh", f"GitHub 的 token：{k}（只读权限，仓库 infra-configs）", k)
    k = github("ghp_")
    c("github", "cli", "en", f"echo {k} | docker login ghcr.io -u deploy-bot --password-stdin", k)
    k = github("ghs_")
    c("github", "log", "en", json.dumps({"level": "info", "ts": "2025-03-14T08:01:22.913Z", "msg": "minted installation token", "installation_id": 51873302, "token": k, "expires_at": "2025-03-14T09:01:22Z"}), k)
    k1, k2 = github("ghu_"), github("ghr_")
    c("github", "json", "en", json.dumps({"access_token": k1, "expires_in": 28800, "refresh_token": k2, "refresh_token_expires_in": 15811200, "scope": "", "token_type": "bearer"}), [k1, k2])
    k = github("ghp_")
    c("github", "url", "en", f"$ cat ~/.git-credentials\nhttps://mchen:{k}@github.com\n", k)

    # GitLab
    k = gitlab()
    c("gitlab", "cli", "en", f"git remote set-url origin https://oauth2:{k}@gitlab.com/platform/terraform-modules.git", k)
    k = gitlab()
    c("gitlab", "cli", "en", f'curl --header "PRIVATE-TOKEN: {k}" "https://gitlab.acme-corp.net/api/v4/projects/412/pipelines?status=failed"', k)
    k = gitlab()
    c("gitlab", "env", "en", f"[global]\nindex-url = https://__token__:{k}@gitlab.com/api/v4/projects/31877/packages/pypi/simple\ntimeout = 60\n", k)
    k = gitlab()
    c("gitlab", "chat", "zh", f"gitlab 的访问令牌给你：{k}，只开了 read_api。", k)

    # AWS
    i, s = aws_id(), aws_secret()
    c("aws", "env", "en", f"[default]\naws_access_key_id = {i}\naws_secret_access_key = {s}\nregion = eu-west-1\n\n[prod-readonly]\nrole_arn = arn:aws:iam::482910377165:role/ReadOnly\nsource_profile = default\n", [i, s])
    i, s = aws_id(), aws_secret()
    c("aws", "cli", "en", f"docker run --rm -e AWS_ACCESS_KEY_ID={i} -e AWS_SECRET_ACCESS_KEY={s} -e AWS_DEFAULT_REGION=us-east-1 amazon/aws-cli s3 ls s3://acme-build-artifacts/", [i, s])
    i, s = aws_id(), aws_secret()
    c("aws", "chat", "en", f"here's the IAM user for the CI runner: {i} / {s} (read-only on the artifacts bucket)", [i, s])
    i, s = aws_id(), aws_secret()
    c("aws", "json", "en", json.dumps({"AccessKey": {"UserName": "ci-deployer", "AccessKeyId": i, "Status": "Active", "SecretAccessKey": s, "CreateDate": "2025-01-09T16:42:11+00:00"}}, indent=4), [i, s])
    i, s, t = aws_id("ASIA"), aws_secret(), aws_session()
    c("aws", "cli", "en", f'export AWS_ACCESS_KEY_ID="{i}"\nexport AWS_SECRET_ACCESS_KEY="{s}"\nexport AWS_SESSION_TOKEN="{t}"', [i, s, t])
    i, s = aws_id(), aws_secret()
    c("aws", "chat", "zh", f"AK：{i}，SK：{s}。用完记得删。", [i, s])
    i, s = aws_id(), aws_secret()
    c("aws", "env", "en", f'# terraform.tfvars\naws_region     = "ap-southeast-1"\naws_access_key = "{i}"\naws_secret_key = "{s}"\ncluster_name   = "prod-sg"\n', [i, s])

    # Google
    k = google_api()
    c("google", "log", "en", f"[geo] GET https://maps.googleapis.com/maps/api/geocode/json?address=10+Rue+de+Rivoli+Paris&key={k} -> 200 (143 ms)", k)
    k = google_api()
    c("google", "chat", "en", f"Gemini key for the prototype: {k}", k)
    pem_text, body = rsa_private()
    sa = {
        "type": "service_account",
        "project_id": "acme-analytics-prod",
        "private_key_id": hexs(40),
        "private_key": pem_text + "\n",
        "client_email": "bq-loader@acme-analytics-prod.iam.gserviceaccount.com",
        "client_id": digits(21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    c("google", "json", "en", json.dumps(sa, indent=2), body.replace("\n", "\\n"))
    k = google_oauth_secret()
    installed = {"installed": {"client_id": f"{digits(12)}-{rand(LOWER_ALNUM, 32)}.apps.googleusercontent.com", "project_id": "photo-sync-4471", "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token", "client_secret": k, "redirect_uris": ["http://localhost"]}}
    c("google", "json", "en", json.dumps(installed), k)
    a, rt = google_access(), google_refresh()
    token_json = json.dumps({"access_token": a, "token_type": "Bearer", "refresh_token": rt, "expiry": "2025-02-11T10:52:07.117+01:00"})
    c("google", "env", "en", f"[gdrive]\ntype = drive\nscope = drive\ntoken = {token_json}\nteam_drive = \n", [a, rt])
    k = google_api()
    c("google", "prose", "zh", f"谷歌地图的 API key 为 {k}。前端别直接用这个。", k)
    k = google_api()
    c("google", "env", "en", f"GEMINI_API_KEY='{k}'", k)

    # Slack
    k = slack_bot()
    c("slack", "env", "en", f"SLACK_BOT_TOKEN={k}\nSLACK_CHANNEL=#deploys", k)
    url, k = slack_webhook()
    c("slack", "code", "en", f'import requests\n\nWEBHOOK = "{url}"\n\ndef notify(text):\n    requests.post(WEBHOOK, json={{"text": text}}, timeout=5)', k)
    k = slack_user()
    c("slack", "chat", "en", f"use my user token for the export script: {k}!", k)
    k = slack_bot()
    c("slack", "chat", "zh", f"Slack 机器人的 token 是 {k}，别外传。", k)
    url, k = slack_webhook()
    c("slack", "yaml", "en", f"receivers:\n  - name: oncall\n    slack_configs:\n      - api_url: '{url}'\n        channel: '#alerts-prod'\n        send_resolved: true\n", k)

    # Stripe
    k = stripe()
    c("stripe", "env", "en", f"STRIPE_SECRET_KEY={k}\nSTRIPE_PRICE_PRO=price_1Q8xJ2Kf0aLmZ3cD", k)
    k = stripe("rk_live_")
    c("stripe", "chat", "en", f"Restricted key for the reporting job (read-only on charges): {k}.", k)
    k = stripe_whsec()
    c("stripe", "yaml", "en", f"services:\n  api:\n    image: acme/api:2.8.1\n    environment:\n      STRIPE_WEBHOOK_SECRET: {k}\n      NODE_ENV: production\n", k)
    k = stripe()
    c("stripe", "prose", "zh", f"Stripe 的 secret key 为 {k}，上线后我会换掉", k)
    k = stripe()
    c("stripe", "cli", "en", f"curl https://api.stripe.com/v1/refunds \\\n  -u {k}: \\\n  -d charge=ch_3PqL8o2eZvKYlo2C0mWn7b1a", k)

    # Twilio
    k = rand(HEX, 32)
    c("twilio", "code", "en", f'from twilio.rest import Client\n\nclient = Client("{twilio_sid()}", "{k}")\nclient.messages.create(to="+14155550142", from_="+14155550199", body="Your order shipped")', k)
    s = rand(ALNUM, 32)
    c("twilio", "env", "en", f"TWILIO_API_KEY={twilio_api_key()}\nTWILIO_API_SECRET={s}\nTWILIO_ACCOUNT_SID={twilio_sid()}", s)
    k = rand(HEX, 32)
    c("twilio", "chat", "en", f"twilio auth token {k} (account {twilio_sid()})", k)

    # Email senders
    k = sendgrid()
    c("sendgrid", "env", "en", f"EMAIL_BACKEND=sendgrid\nSENDGRID_API_KEY={k}\nDEFAULT_FROM_EMAIL=no-reply@acme.io", k)
    k = sendgrid()
    c("sendgrid", "chat", "en", f"sendgrid says the key is invalid?? {k}", k)
    k = mailgun()
    c("mailgun", "cli", "en", f"curl -s --user 'api:{k}' https://api.mailgun.net/v3/mg.acme.io/messages -F from='Ops <ops@mg.acme.io>' -F to=ana@acme.io -F subject=ping -F text=ok", k)
    k = f"{rand(HEX, 32)}-{rand(HEX, 8)}-{rand(HEX, 8)}"
    c("mailgun", "env", "en", f"MAILGUN_DOMAIN=mg.acme.io\nMAILGUN_API_KEY={k}", k)
    k = sendinblue()
    c("brevo", "code", "en", f"const client = SibApiV3Sdk.ApiClient.instance;\nclient.authentications['api-key'].apiKey = '{k}';", k)

    # Hugging Face
    k = huggingface()
    c("huggingface", "cli", "en", f"huggingface-cli login --token {k} --add-to-git-credential", k)
    k = huggingface()
    c("huggingface", "chat", "zh", f"HF 的 token：{k}（有 write 权限，小心点）", k)
    k = huggingface()
    c("huggingface", "code", "en", f'from huggingface_hub import login\nlogin(token="{k}")\nmodel = AutoModel.from_pretrained("acme/private-ranker")', k)

    # Discord, Telegram
    k = discord_bot()
    c("discord", "code", "en", f"bot = commands.Bot(command_prefix='!', intents=intents)\n...\nbot.run('{k}')", k)
    url, k = discord_webhook()
    c("discord", "chat", "en", f"drop the release notes into the channel (webhook: {url})", k)
    k = telegram()
    c("telegram", "log", "en", f"2025-04-02 21:17:03 ERROR requests: HTTPSConnectionPool(host='api.telegram.org', port=443): Max retries exceeded with url: /bot{k}/sendMessage?chat_id=-100187265530&text=disk+full", k)
    k = telegram()
    c("telegram", "chat", "zh", f"机器人 token 发你了：{k}。群 id 是 -1001872655301", k)

    # package registries
    k = npm()
    c("npm", "env", "en", f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={k}\nsave-exact=true\n", k)
    k = npm()
    c("npm", "code", "en", f'FROM node:20-alpine\nWORKDIR /app\nCOPY package*.json ./\nRUN echo "//registry.npmjs.org/:_authToken={k}" > .npmrc && npm ci && rm .npmrc\nCOPY . .', k)
    k = pypi()
    c("pypi", "env", "en", f"[distutils]\nindex-servers =\n    pypi\n\n[pypi]\n  username = __token__\n  password = {k}\n", k)
    k = pypi()
    c("pypi", "cli", "en", f"twine upload -u __token__ -p {k} dist/*", k)

    # .netrc
    k = heroku()
    c("heroku", "env", "en", f"machine api.heroku.com\n  login ops@acme.io\n  password {k}\nmachine git.heroku.com\n  login ops@acme.io\n  password {k}\n", k)
    k = github("ghp_")
    c("github", "env", "en", f"machine github.com login ci-bot password {k}", k)
    p = password("typed")
    c("netrc", "env", "en", f"machine ftp.partner-logistics.de\nlogin acme_upload\npassword {p}\n", p)

    # SaaS developer tokens
    k = databricks()
    c("databricks", "env", "en", f"[DEFAULT]\nhost  = https://adb-4471902251733610.14.azuredatabricks.net\ntoken = {k}\n", k)
    k = digitalocean()
    c("digitalocean", "cli", "en", f"doctl auth init --context acme -t {k}", k)
    k = digitalocean()
    c("digitalocean", "env", "en", f'do_token   = "{k}"\nregion     = "fra1"\ndroplet_sz = "s-2vcpu-4gb"\n', k)
    k = shopify()
    c("shopify", "env", "en", f"SHOPIFY_STORE=acme-outdoor.myshopify.com\nSHOPIFY_ADMIN_TOKEN={k}", k)
    k = doppler()
    c("doppler", "cli", "en", f"docker run --rm -e DOPPLER_TOKEN={k} acme/worker:latest doppler run -- ./start.sh", k)
    k = linear()
    c("linear", "code", "en", f"const linear = new LinearClient({{ apiKey: \"{k}\" }});", k)
    k = notion()
    c("notion", "chat", "en", f"integration secret for the wiki sync is {k}, it has access to the Eng space only", k)
    k = notion_legacy()
    c("notion", "env", "en", f"NOTION_TOKEN={k}\nNOTION_DATABASE_ID={hexs(32)}", k)
    k = atlassian()
    c("atlassian", "cli", "en", f"curl -s -u dana.kim@acme.io:{k} -H 'Accept: application/json' https://acme.atlassian.net/rest/api/3/issue/PAY-1423", k)
    k = postman()
    c("postman", "chat", "en", f"Postman API key if you want to pull the collection via CLI: {k}", k)

    # AI platforms
    k = groq()
    c("groq", "code", "en", f'client = OpenAI(base_url="https://api.groq.com/openai/v1", api_key="{k}")', k)
    k = groq()
    c("groq", "chat", "zh", f"groq 免费的 key 先用我的：{k}", k)
    k = replicate()
    c("replicate", "env", "en", f"export REPLICATE_API_TOKEN={k}", k)
    k = perplexity()
    c("perplexity", "chat", "en", f"pplx key -> {k} (the $5 credit one)", k)
    k = xai()
    c("xai", "header", "en", f"Authorization: Bearer {k}", k)
    k = openrouter()
    c("openrouter", "json", "en", json.dumps({"models": [{"provider": "openrouter", "apiKey": k, "model": "anthropic/claude-3.5-sonnet"}]}, indent=2), k)
    k = openrouter()
    c("openrouter", "chat", "zh", f"用 openrouter 吧，key：{k}，额度还剩 20 刀", k)
    k = deepseek()
    c("deepseek", "code", "zh", f'# 调 DeepSeek 接口\nclient = OpenAI(api_key="{k}", base_url="https://api.deepseek.com")', k)
    k = deepseek()
    c("deepseek", "chat", "zh", f"我的 deepseek key（{k}）你先拿去测一下速度", k)
    k = moonshot()
    c("moonshot", "env", "zh", f"# Kimi\nMOONSHOT_API_KEY={k}\nMOONSHOT_BASE_URL=https://api.moonshot.cn/v1", k)
    k = zhipu()
    c("zhipu", "chat", "zh", f"智谱的 API key 为 {k}，模型用 glm-4-plus。", k)
    k = deepseek()
    c("dashscope", "cli", "zh", f"export DASHSCOPE_API_KEY={k}  # 通义千问，阿里云百炼控制台拿的", k)
    k = rand(ALNUM, 40)
    c("cohere", "env", "en", f"CO_API_KEY={k}", k)
    k = rand(ALNUM, 32)
    c("mistral", "code", "en", f'from mistralai import Mistral\nclient = Mistral(api_key="{k}")', k)

    # Chinese clouds
    i, s = alibaba_id(), rand(ALNUM, 30)
    c("alibaba", "yaml", "zh", f"# 阿里云 OSS 配置\noss:\n  endpoint: oss-cn-hangzhou.aliyuncs.com\n  bucket: acme-static\n  access-key-id: {i}\n  access-key-secret: {s}\n", [i, s])
    i, s = alibaba_id(), rand(ALNUM, 30)
    c("alibaba", "prose", "zh", f"阿里云子账号的 AccessKey ID 是 {i}，AccessKey Secret 是 {s}，只授权了 OSS 读写。", [i, s])
    i, s = tencent_id(), rand(ALNUM, 32)
    c("tencent", "code", "zh", f'cred = credential.Credential("{i}", "{s}")  # 腾讯云 COS 上传用\nclient = cos_client.CosS3Client(config)', [i, s])
    i, s = tencent_id(), rand(ALNUM, 32)
    c("tencent", "chat", "zh", f"SecretId：{i}\nSecretKey：{s}\n用完我就禁用。", [i, s])

    # Azure
    k = azure_storage_key()
    conn = f"DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey={k};EndpointSuffix=core.windows.net"
    c("azure", "json", "en", json.dumps({"Logging": {"LogLevel": {"Default": "Information"}}, "ConnectionStrings": {"Blob": conn}}, indent=2), k)
    k = azure_storage_key()
    c("azure", "log", "en", f"fail: Acme.Ingest.BlobWriter[0]\n      Upload failed for container 'raw' using DefaultEndpointsProtocol=https;AccountName=acmeingest;AccountKey={k};EndpointSuffix=core.windows.net\n      Azure.RequestFailedException: Server failed to authenticate the request.", k)
    k = azure_ad_secret()
    c("azure", "env", "en", f"AZURE_TENANT_ID={uuid4()}\nAZURE_CLIENT_ID={uuid4()}\nAZURE_CLIENT_SECRET={k}", k)
    k = b64(rbytes(32))
    c("azure", "code", "en", f'var client = new ServiceBusClient("Endpoint=sb://acme-orders.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={k}");', k)
    k = rand(HEX, 32)
    c("azure", "cli", "en", f'curl "https://acme-oai-swe.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01" -H "Content-Type: application/json" -H "api-key: {k}" -d @req.json', k)

    # Infra and observability
    k = vault_token()
    c("vault", "cli", "en", f"$ vault login {k}\nSuccess! You are now authenticated.", k)
    k = vault_token()
    c("vault", "env", "en", f"VAULT_ADDR=https://vault.acme.internal:8200\nVAULT_TOKEN={k}", k)
    k = tfc_token()
    c("terraform-cloud", "json", "en", json.dumps({"credentials": {"app.terraform.io": {"token": k}}}, indent=2), k)
    k = sentry_user()
    c("sentry", "env", "en", f"SENTRY_ORG=acme\nSENTRY_PROJECT=web\nSENTRY_AUTH_TOKEN={k}", k)
    k = grafana()
    c("grafana", "cli", "en", f'curl -H "Authorization: Bearer {k}" https://acme.grafana.net/api/dashboards/uid/k8s-overview', k)
    k = dynatrace()
    c("dynatrace", "yaml", "en", f"oneagent:\n  apiUrl: https://abc12345.live.dynatrace.com/api\n  apiToken: {k}\n", k)
    k = newrelic()
    c("newrelic", "chat", "en", f"the NR user key is {k} - use it for nerdgraph only", k)
    k = okta()
    c("okta", "header", "en", f"GET /api/v1/users?limit=25 HTTP/1.1\nHost: acme.okta.com\nAccept: application/json\nAuthorization: SSWS {k}", k)
    k = pulumi()
    c("pulumi", "cli", "en", f"PULUMI_ACCESS_TOKEN={k} pulumi up --stack prod --yes", k)
    k = flyio()
    c("flyio", "yaml", "en", f"      - name: Deploy\n        run: flyctl deploy --remote-only\n        env:\n          FLY_API_TOKEN: {k}\n", k)
    k = cloudflare()
    c("cloudflare", "env", "en", f"CLOUDFLARE_API_TOKEN={k}\nCLOUDFLARE_ZONE_ID={hexs(32)}", k)
    k = tailscale()
    c("tailscale", "cli", "en", f"sudo tailscale up --authkey={k} --advertise-tags=tag:ci --ssh", k)
    k = dockerhub()
    c("dockerhub", "cli", "en", f"docker login -u acmebuild -p {k}\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded", k)
    k = dockerhub()
    c("dockerhub", "chat", "zh", f"dockerhub 的 PAT：{k}。CI 里配成 DOCKERHUB_TOKEN", k)
    k = heroku()
    c("heroku", "cli", "en", f"heroku config:set -a acme-api HEROKU_API_KEY={k}", k)
    k = age_secret()
    c("age", "env", "en", f"# created: 2025-02-03T11:20:44+01:00\n# public key: age1{rand(BECH32, 58)}\n{k}\n", k)
    k = langsmith()
    c("langsmith", "env", "en", f"LANGSMITH_TRACING=true\nLANGSMITH_API_KEY={k}\nLANGSMITH_PROJECT=support-bot", k)
    k = supabase_pat()
    c("supabase", "cli", "en", f"npx supabase login --token {k}", k)
    k = jwt({"iss": "supabase", "ref": rand(LOWER, 20), "role": "service_role", "iat": 1712040311, "exp": 2027616311})
    c("supabase", "env", "en", f"NEXT_PUBLIC_SUPABASE_URL=https://{rand(LOWER, 20)}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={k}", k)
    k = figma()
    c("figma", "chat", "en", f"Figma token for the icon export: {k} (expires in 90 days)", k)
    k = airtable()
    c("airtable", "code", "en", f"const base = new Airtable({{ apiKey: '{k}' }}).base('app{rand(ALNUM, 14)}');", k)
    k = postman()
    c("postman", "env", "en", f"POSTMAN_API_KEY={k}", k)

    # payments and commerce
    k = square()
    c("square", "env", "en", f"SQUARE_ENVIRONMENT=production\nSQUARE_ACCESS_TOKEN={k}", k)
    k = braintree()
    c("braintree", "code", "en", f'gateway = braintree.BraintreeGateway(access_token="{k}")', k)
    k = mailchimp()
    c("mailchimp", "code", "en", f'mailchimp.setConfig({{\n  apiKey: "{k}",\n  server: "{k.rsplit("-", 1)[1]}",\n}});', k)

    # push, chat-ops webhooks (China)
    k = fcm_server()
    c("firebase", "header", "en", f"POST /fcm/send HTTP/1.1\nHost: fcm.googleapis.com\nContent-Type: application/json\nAuthorization: key={k}", k)
    k = rand(HEX, 64)
    c("dingtalk", "url", "zh", f"钉钉告警机器人：https://oapi.dingtalk.com/robot/send?access_token={k}", k)
    k = uuid_key()
    c("feishu", "code", "zh", f'FEISHU_WEBHOOK = "https://open.feishu.cn/open-apis/bot/v2/hook/{k}"  # 飞书群机器人', k)
    k = uuid_key()
    c("wecom", "chat", "zh", f"企业微信群机器人地址 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={k} ，报警都推这里", k)
    k = rand(HEX, 32)
    c("wechat", "yaml", "zh", f"wechat:\n  mp:\n    app-id: wx{rand(HEX, 16)}\n    secret: {k}   # 公众号 AppSecret\n", k)
    k = rand(HEX, 32)
    c("openweather", "url", "en", f"https://api.openweathermap.org/data/2.5/weather?q=Lyon,fr&units=metric&appid={k}", k)
    k = wireguard_private()
    c("wireguard", "env", "en", f"[Interface]\nPrivateKey = {k}\nAddress = 10.8.0.2/32\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {b64(rng.randbytes(32))}\nEndpoint = vpn.acme.io:51820\nAllowedIPs = 0.0.0.0/0", k)

    # tokens in headers, cookies and JWTs
    iat = issued_at()
    k = jwt({"sub": digits(9), "name": "Priya N", "roles": ["admin"], "iat": iat, "exp": iat + 3600}, alg="RS256")
    c("jwt", "log", "en", f'10.2.14.7 - - [05/Dec/2024:10:41:12 +0000] "GET /api/admin/users HTTP/1.1" 200 5123 "-" "python-requests/2.32.3" auth="Bearer {k}"', k)
    iat = issued_at()
    k = jwt({"user_id": rng.randint(1000, 99999), "scope": "orders:write", "iat": iat, "exp": iat + 86400})
    c("jwt", "cli", "en", f"curl -X POST https://api.acme.io/v2/orders -H 'Authorization: Bearer {k}' -H 'Content-Type: application/json' -d '{{\"sku\": \"TENT-2P\", \"qty\": 1}}'", k)
    iat = issued_at()
    k = jwt({"uid": rand(LOWER_ALNUM, 24), "iat": iat, "exp": iat + 604800})
    c("jwt", "chat", "zh", f"登录态的 token 给你：{k} ，七天有效", k)
    session, csrf = rand(LOWER_ALNUM, 32), rand(ALNUM, 64)
    c("django", "header", "en", f"GET /admin/ HTTP/1.1\nHost: shop.acme.io\nCookie: csrftoken={csrf}; sessionid={session}\nUser-Agent: Mozilla/5.0", [session, csrf])
    user, p = "svc-backup", password("words")
    basic = b64(f"{user}:{p}".encode())
    c("basic-auth", "header", "en", f"Authorization: Basic {basic}", basic)
    k = rand(HEX, 48)
    c("jupyter", "log", "en", f"[I 2025-01-22 14:03:51.210 ServerApp] Jupyter Server 2.14.2 is running at:\n[I 2025-01-22 14:03:51.210 ServerApp] http://gpu-box-3:8888/lab?token={k}\n[I 2025-01-22 14:03:51.210 ServerApp]     http://127.0.0.1:8888/lab?token={k}", k)

    # private keys
    pem_text, body = openssh_private()
    c("ssh", "chat", "en", f"ok here's the deploy key, put it in ~/.ssh/id_ed25519:\n{pem_text}\nthen chmod 600 it", body)
    pem_text, body = rsa_private_pkcs1()
    c("ssh", "prose", "en", f"## Bastion access\n\nThe old bastion still uses this key (TODO move to SSM):\n\n```\n{pem_text}\n```\n", body)
    pem_text, body = ec_private()
    block = "\n".join("    " + line for line in pem_text.splitlines())
    c("tls", "yaml", "en", f"tls:\n  cert_file: /etc/nginx/certs/api.crt\n  key: |\n{block}\n", [line for line in body.splitlines()])
    pem_text, body = openssh_private()
    c("ssh", "json", "en", json.dumps({"host": "10.20.0.4", "username": "deploy", "privateKey": pem_text + "\n", "port": 22}), body.replace("\n", "\\n"))

    build_passwords(r)
    return r.rows


def build_passwords(r: Rows) -> None:  # noqa: PLR0915
    c = r.cred
    p = in_url(password("words"))
    c("postgres", "env", "en", f"spring.datasource.url=jdbc:postgresql://db-prod-2.internal:5432/ledger?user=ledger_app&password={p}&ssl=true\nspring.jpa.hibernate.ddl-auto=validate", p)
    p = in_url(password("typed"))
    c("mysql", "log", "en", f"2025-05-06 03:12:44.019 ERROR 1 --- [main] com.zaxxer.hikari.pool.HikariPool : HikariPool-1 - Exception during pool initialization.\njava.sql.SQLException: Access denied for user 'crm'@'10.4.1.19' (using password: YES)\n\tjdbcUrl=jdbc:mysql://10.4.0.12:3306/crm?user=crm&password={p}&useSSL=false\n\tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:130)", p)
    encoded = in_url(password("words", must="&"))
    c("postgres", "url", "en", f"DATABASE_URL=postgresql://reporting:{encoded}@pg-analytics.acme.internal:5432/reporting?sslmode=require", encoded)
    p = password("typed")
    c("mssql", "json", "en", json.dumps({"ConnectionStrings": {"Default": f"Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=orders;Persist Security Info=False;User ID=orders_rw;Password={p};MultipleActiveResultSets=False;Encrypt=True;"}}, indent=2), p)
    p = password("typed", must=";")
    c("mssql", "code", "en", f'conn = pyodbc.connect("Driver={{ODBC Driver 18 for SQL Server}};Server=sql-rpt.acme.local;Database=finance;Uid=report;Pwd={{{p}}};TrustServerCertificate=yes")', p)
    p = password("words", must="'")
    c("postgres", "yaml", "en", f'database:\n  host: db.internal\n  user: billing\n  password: "{p}"\n  pool: 10\n', p)
    p = in_url(password("typed"))
    c("mongodb", "log", "en", f"MongoServerSelectionError: connection <monitor> to 18.133.22.41:27017 closed\n    at Timeout._onTimeout (/app/node_modules/mongodb/lib/sdam/topology.js:285:38) {{\n  uri: 'mongodb+srv://app:{p}@cluster0.x7ke2.mongodb.net/prod?retryWrites=true&w=majority',\n  reason: TopologyDescription {{ type: 'ReplicaSetNoPrimary' }}\n}}", p)
    p = password("typed")
    c("postgres", "cli", "en", f"docker run -d --name pg -e POSTGRES_USER=app -e POSTGRES_PASSWORD='{p}' -p 5432:5432 postgres:16", p)
    p = password("dashed")
    c("mysql", "yaml", "en", f"services:\n  db:\n    image: mysql:8.4\n    environment:\n      MYSQL_ROOT_PASSWORD: {p}\n      MYSQL_DATABASE: shop\n    volumes:\n      - db:/var/lib/mysql\n", p)
    p = password("typed")
    c("kubernetes", "cli", "en", f"kubectl create secret generic db-creds -n prod --from-literal=username=app --from-literal=password='{p}'", p)
    p = password("words")
    enc = b64(p.encode())
    c("kubernetes", "yaml", "en", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: pg-auth\ndata:\n  username: {b64(b'orders')}\n  password: {enc}\n", enc)
    p = password("dashed")
    c("helm", "cli", "en", f"helm upgrade --install pg bitnami/postgresql -n data --set auth.username=app --set auth.password={p} --set primary.persistence.size=50Gi", p)
    p = password("typed")
    c("terraform", "env", "en", f'# terraform.tfvars\nenvironment    = "prod"\ndb_username    = "admin"\ndb_password    = "{p}"\ninstance_class = "db.r6g.large"\n', p)
    p, b = password("words"), password("typed")
    c("ansible", "env", "en", f"[web]\nweb01 ansible_host=10.0.1.11\nweb02 ansible_host=10.0.1.12\n\n[web:vars]\nansible_user=deploy\nansible_ssh_pass={p}\nansible_become_pass={b}\n", [p, b])
    p = password("typed")
    c("mysql", "cli", "en", f"mysql -h 10.0.3.7 -u root -p'{p}' shop < dump-2025-05-01.sql", p)
    p = password("dashed")
    c("postgres", "cli", "en", f"PGPASSWORD={p} psql -h pg-replica.internal -U readonly -d analytics -c 'select count(*) from events'", p)
    p = password("typed")
    c("ssh", "cli", "en", f"sshpass -p '{p}' ssh -o StrictHostKeyChecking=no deploy@203.0.113.25 'sudo systemctl restart app'", p)
    p1, p2 = password("typed"), password("words")
    c("generic-password", "prose", "en", f"| env | host | user | password |\n|---|---|---|---|\n| staging | db-stg.internal | app_rw | `{p1}` |\n| prod | db-prod.internal | app_rw | `{p2}` |", [p1, p2])
    p = password("words")
    c("generic-password", "prose", "en", f"| Service | Login | Password | Notes |\n| --- | --- | --- | --- |\n| Grafana | admin | {p} | reset after onboarding |\n| Sonar | admin | (SSO) | |", p)
    p = password("phrase")
    c("borg", "cli", "en", f'export BORG_REPO=ssh://backup@nas.home:22/volume1/borg\nexport BORG_PASSPHRASE="{p}"\nborg create ::{{hostname}}-{{now}} ~/Documents', p)
    p = password("phrase")
    c("keepass", "chat", "en", f'the master password for the team KeePass is "{p}" (all lowercase, spaces included)', p)
    p = password("typed")
    c("wifi", "chat", "zh", f"WiFi 密码：{p}", p)
    p = password("dashed")
    c("wifi", "chat", "en", f"guest wifi is CafeNomad_5G, pw: {p}", p)
    p = password("pinyin")
    c("generic-password", "chat", "zh", f"我的数据库密码是 {p}，别告诉别人", p)
    p = password("typed")
    c("generic-password", "chat", "zh", f"账号 admin 密码 {p}", p)
    p = password("typed")
    c("generic-password", "chat", "zh", f"服务器 root 密码改成了 {p}。", p)
    p = password("qq_auth")
    c("email", "chat", "zh", f"QQ邮箱的授权码：{p}，SMTP 用 smtp.qq.com:465", p)
    p = password("gmail_app")
    c("email", "prose", "en", f"Subject: ops mailbox\n\nApp password for ops@acme.io (IMAP + SMTP): {p}\nDon't forward this.", p)
    p = password("words")
    c("generic-password", "prose", "en", f"Hi Sam,\n\nYour temporary password for the VPN portal is {p} — please change it at first login.\n\nThanks,\nIT Helpdesk", p)
    p = password("typed")
    c("router", "chat", "en", f"router login is admin / {p}", p)
    p = in_url(password("typed"))
    c("redis", "env", "en", f"REDIS_URL=redis://default:{p}@redis-12873.c250.eu-central-1-1.ec2.redns.redis-cloud.com:12873", p)
    p = password("dashed")
    c("rabbitmq", "log", "en", f"[2025-03-09 11:02:17,118: ERROR/MainProcess] consumer: Cannot connect to amqp://orders:{p}@rabbit-1.internal:5672/orders: [Errno 111] Connection refused.\nTrying again in 4.00 seconds... (2/100)", p)
    p = password("gmail_app")
    c("email", "env", "en", f"EMAIL_HOST=smtp.gmail.com\nEMAIL_PORT=587\nEMAIL_HOST_USER=alerts@acme.io\nEMAIL_HOST_PASSWORD='{p}'", p)
    p = password("typed")
    c("maven", "code", "en", f"<settings>\n  <servers>\n    <server>\n      <id>acme-releases</id>\n      <username>deployer</username>\n      <password>{p}</password>\n    </server>\n  </servers>\n</settings>", p)
    p = password("typed")
    c("nuget", "code", "en", f'<packageSourceCredentials>\n  <AcmeFeed>\n    <add key="Username" value="build" />\n    <add key="ClearTextPassword" value="{p}" />\n  </AcmeFeed>\n</packageSourceCredentials>', p)
    p = password("words")
    c("postgres", "code", "en", f'conn = psycopg2.connect(host="10.1.4.20", dbname="crm", user="etl", password="{p}")', p)
    p = password("typed")
    c("mysql", "code", "en", f'dsn := "shop:{p}@tcp(10.1.2.3:3306)/shop?parseTime=true&loc=UTC"\ndb, err := sql.Open("mysql", dsn)', p)
    p = password("typed")
    c("mysql", "code", "en", f"/** Database password */\ndefine( 'DB_PASSWORD', '{p}' );\n\n/** Database hostname */\ndefine( 'DB_HOST', 'localhost' );", p)
    p = password("dashed")
    c("postgres", "yaml", "en", f"production:\n  adapter: postgresql\n  database: storefront_production\n  username: storefront\n  password: {p}\n  host: <%= ENV['DB_HOST'] %>\n", p)
    p = password("typed")
    c("postgres", "yaml", "en", f"spring:\n  datasource:\n    url: jdbc:postgresql://pg.internal:5432/inventory\n    username: inventory\n    password: {p}\n", p)
    p = password("words")
    c("postgres", "env", "en", f"# ~/.pgpass\npg-prod.internal:5432:*:reporting:{p}\n", p)
    p = in_url(password("words"))
    c("grafana", "chat", "en", f"grafana is up: https://admin:{p}@grafana.lab.local:3000/d/node-exporter", p)
    p = f"{rng.choice(['Straße', 'Grüße', 'Fußball', 'Maßkrug'])}-{rng.choice(['Köln', 'Zürich', 'Düsseldorf'])}-{rng.randint(10, 99)}"
    c("generic-password", "chat", "en", f"new vault password: {p} (yes with the ß)", p)
    p = password("typed", must="#")
    c("generic-password", "env", "en", f'DB_HOST=10.0.0.5\nDB_USER=app\nDB_PASS="{p}"\n', p)
    p = password("words", must="%")
    c("generic-password", "yaml", "en", f"smtp:\n  host: mail.acme.io\n  user: notifier\n  password: '{p}'\n", p)
    p = password("words", must="'")
    c("generic-password", "chat", "en", f"the password is {p}, apostrophe included", p)
    p = "春眠" + rand(ALNUM, 2) + "#" + str(rng.randint(10, 99)) + "晓"
    c("generic-password", "chat", "zh", f"新密码是 {p}，中文字符也算在里面。", p)
    p = password("pinyin")
    c("vpn", "chat", "zh", f"VPN 账号 zhangwei，密码 {p}。", p)
    p = password("typed")
    c("generic-password", "chat", "zh", f"我把测试库的密码（{p}）写在白板上了", p)
    p = in_url(password("typed"))
    c("mongodb", "code", "en", f"const client = new MongoClient('mongodb://admin:{p}@mongo-0.mongo:27017,mongo-1.mongo:27017/?replicaSet=rs0&authSource=admin');", p)
    p = password("typed")
    c("mssql", "cli", "en", f"sqlcmd -S tcp:10.0.8.4,1433 -U sa -P '{p}' -Q \"SELECT name FROM sys.databases\"", p)
    p = password("dashed")
    c("nexus", "log", "en", f"[Pipeline] sh\n+ curl -sf -u deploy:{p} --upload-file build/app-2.3.1.jar https://nexus.acme.internal/repository/releases/com/acme/app/2.3.1/app-2.3.1.jar", p)
    p = password("typed")
    c("ldap", "yaml", "en", f"ldap:\n  url: ldaps://dc1.corp.acme.local:636\n  bindDN: CN=svc-gitlab,OU=Service Accounts,DC=corp,DC=acme,DC=local\n  bindPassword: {p}\n  base: DC=corp,DC=acme,DC=local\n", p)
    p = rand(ALNUM + "_*=+-", 20)
    c("elasticsearch", "log", "en", f"━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n✅ Elasticsearch security features have been automatically configured!\n✅ Authentication is enabled and cluster connections are encrypted.\n\nℹ️  Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):\n  {p}\n", p)
    p = password("words")
    c("generic-password", "chat", "en", f"Login for the staging admin panel: ops@acme.io / {p}", p)
    p = password("typed")
    c("generic-password", "chat", "zh", f"堡垒机密码：{p}（下周一会改）", p)
    p = password("dashed")
    c("generic-password", "prose", "zh", f"交接文档：测试环境 MySQL 地址 10.3.2.8:3306，用户名 qa_user，密码为 {p}，只读权限。", p)

    # connection URLs, and more Chinese
    p = in_url(password("typed"))
    c("mysql", "url", "zh", f"数据库连接串：mysql://root:{p}@10.0.0.8:3306/erp?charset=utf8mb4，别外传。", p)
    p = password("dashed")
    c("rabbitmq", "url", "en", f"amqps://orders_svc:{p}@b-{uuid4()}.mq.us-east-1.amazonaws.com:5671", p)
    k = keyed("ATBB", rand(ALNUM, 28) + rand("0123456789ABCDEF", 8))
    c("bitbucket", "url", "en", f"https://ci-bot:{k}@bitbucket.org/acme/mobile-app.git", k)
    p = in_url(password("typed"))
    c("ftp", "url", "en", f"upload the exports to ftp://exports:{p}@files.partner-co.net/incoming/ before 6am", p)
    k = keyed("gldt-", rand(B64URL, 20))
    c("gitlab", "url", "en", f"https://gitlab+deploy-token-2291:{k}@gitlab.com/acme/charts.git", k)
    p = rand(ALNUM + "_*=+-", 20)
    c("elasticsearch", "log", "en", f"elastic_transport.ConnectionError: Connection error caused by: NewConnectionError(<urllib3.connection.HTTPSConnection object at 0x7f3a2c1b9d90>) while connecting to https://elastic:{p}@es-hot-1.internal:9200/_bulk", p)
    p = in_url(password("typed"))
    c("redis", "prose", "zh", f"缓存地址 redis://:{p}@10.0.0.3:6379/2 ，线上别用 keys *。", p)
    p = in_url(password("words"))
    c("mysql", "log", "zh", f"2025-06-03 10:00:01.218 ERROR [order-service] 连接数据库失败 url=jdbc:mysql://10.1.1.5:3306/order?user=order&password={p}&useUnicode=true", p)
    i, s = alibaba_id(), rand(ALNUM, 30)
    c("alibaba", "yaml", "zh", f"# 短信服务\naliyun:\n  sms:\n    sign-name: 某某科技\n    access-key-id: {i}\n    access-key-secret: {s}\n", [i, s])
    k = rand(HEX, 32)
    c("wechat", "chat", "zh", f"小程序 AppID：wx{rand(HEX, 16)}，AppSecret：{k}，后台「开发管理」里能重置。", k)
    k = rand(ALNUM, 32)
    c("baidu", "chat", "zh", f"百度地图 AK 是 {k}，配额一天 30 万次", k)
    k = uuid_key()
    c("volcengine", "env", "zh", f"# 火山方舟\nARK_API_KEY={k}\nARK_MODEL=doubao-1-5-pro-32k-250115", k)
    a, s = rand(B64URL, 40), rand(B64URL, 40)
    c("qiniu", "env", "zh", f"# 七牛云存储\nQINIU_ACCESS_KEY={a}\nQINIU_SECRET_KEY={s}\nQINIU_BUCKET=acme-img", [a, s])
    k = gitlab()
    c("gitlab", "chat", "zh", f"仓库地址带了 token：https://oauth2:{k}@jihulab.com/acme/app.git ，直接 clone 就行", k)
    p = password("words")
    c("email", "chat", "zh", f"邮箱 ops@acme.cn 的密码是 {p}，登录后去改一下", p)


# ---- look-alikes -------------------------------------------------------------------------------


def build_lookalikes() -> list[dict[str, Any]]:  # noqa: PLR0915
    r = Rows("look")
    x = r.look

    # request ids, trace ids
    x("log_ids", "en", f'2025-06-03T12:44:09.118Z INFO  api  request_id={uuid4()} trace_id={hexs(32)} span_id={hexs(16)} method=POST path=/v1/orders status=201 duration_ms=84')
    x("log_ids", "en", f'{{"level":"error","time":"2025-06-03T12:44:10Z","msg":"upstream timeout","x_request_id":"{hexs(32)}","upstream":"inventory:8080","retry":2}}')
    x("log_ids", "en", f"traceparent: 00-{hexs(32)}-{hexs(16)}-01\ntracestate: congo=t61rcWkgMzE")
    x("log_ids", "en", f"HTTP/2 502\ndate: Tue, 03 Jun 2025 12:45:01 GMT\ncontent-type: text/html\ncf-ray: {hexs(16)}-FRA\nserver: cloudflare")
    x("log_ids", "en", f"botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: Access Denied (RequestId: {rand(UPPER_ALNUM, 16)}, HostId: {b64(rng.randbytes(57))})")
    x("log_ids", "en", f"[2025-06-01 08:00:00,004] INFO celery.worker.strategy: Task reports.build_daily[{uuid4()}] received")
    x("log_ids", "en", f"x-amzn-RequestId: {uuid4()}\nx-amz-apigw-id: {rand(ALNUM, 16)}=\nX-Amzn-Trace-Id: Root=1-{hexs(8)}-{hexs(24)};Sampled=0")
    x("log_ids", "en", f"Sentry event {hexs(32)} captured: TypeError: Cannot read properties of undefined (reading 'map')")
    x("log_ids", "en", f"W0603 12:50:11.402113       1 reflector.go:539] k8s.io/client-go/informers/factory.go:160: watch of *v1.Pod ended with: an error on the server (\"unable to decode an event from the watch stream\") has prevented the request from succeeding, resourceVersion={rng.randint(10**7, 10**8)}")
    x("log_ids", "zh", f"2025-06-03 20:01:33 [INFO] 订单创建成功 order_id={digits(19)} trace={hexs(32)} 用户={digits(8)}")
    x("log_ids", "en", f"Stripe request failed: No such customer: 'cus_{rand(ALNUM, 14)}' (request id: req_{rand(ALNUM, 14)})")
    x("log_ids", "en", f"ETag: \"{hexs(32)}\"\nLast-Modified: Mon, 02 Jun 2025 17:21:09 GMT\nx-goog-generation: {digits(16)}")

    # git
    x("git_log", "en", "\n".join(f"{hexs(7)} {msg}" for msg in ("Fix rounding in invoice totals", "Bump axios from 1.6.8 to 1.7.4", "Merge pull request #812 from acme/feat/export-csv", "Add retry to webhook sender", "Revert \"Enable HTTP/3 on edge\"")))
    sha = hexs(40)
    x("git_log", "en", f"commit {sha}\nAuthor: Dana Kim <dana@acme.io>\nDate:   Wed Jun 4 10:12:55 2025 +0200\n\n    payments: stop logging the full card BIN\n\n    Reviewed-by: Marco Ruiz\n    Change-Id: I{hexs(40)}")
    x("git_log", "en", f"$ git rev-parse HEAD\n{hexs(40)}\n$ git describe --tags\nv3.14.2-7-g{hexs(7)}")
    x("git_log", "en", f"Merge: {hexs(7)} {hexs(7)}\nAuthor: dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>")
    x("git_log", "en", f"$ git stash list\nstash@{{0}}: WIP on main: {hexs(7)} wip: token refresh\nstash@{{1}}: On feat/auth: {hexs(7)} password reset form")
    x("git_log", "en", f"$ git show --stat {hexs(10)}\n src/auth/password_reset.py | 42 ++++++++++++++++++++++++++----------\n tests/test_password_reset.py | 18 ++++++++++++\n 2 files changed, 47 insertions(+), 13 deletions(-)")
    x("git_log", "zh", f"{hexs(7)} 修复登录页密码框不能粘贴的问题\n{hexs(7)} 新增 token 过期自动刷新\n{hexs(7)} 重构：把密钥读取挪到配置中心")
    x("git_log", "en", f"$ git reflog\n{hexs(7)} HEAD@{{0}}: rebase (finish): returning to refs/heads/fix/token-expiry\n{hexs(7)} HEAD@{{1}}: rebase (pick): Refresh OAuth token before expiry\n{hexs(7)} HEAD@{{2}}: checkout: moving from main to fix/token-expiry")

    # docker
    x("docker_digest", "en", "REPOSITORY          TAG       DIGEST                                                                    IMAGE ID       CREATED        SIZE\n" + "\n".join(f"{name:<19} {tag:<9} sha256:{hexs(64)}   {hexs(12)}   {age:<14} {size}" for name, tag, age, size in (("acme/api", "2.8.1", "3 days ago", "187MB"), ("postgres", "16", "2 weeks ago", "432MB"), ("redis", "7-alpine", "5 weeks ago", "41MB"))))
    x("docker_digest", "en", f"FROM python:3.12-slim@sha256:{hexs(64)}\nRUN pip install --no-cache-dir -r requirements.txt")
    x("docker_digest", "en", f"latest: digest: sha256:{hexs(64)} size: 2413\nThe push refers to repository [ghcr.io/acme/worker]")
    x("docker_digest", "en", f"CONTAINER ID   IMAGE              COMMAND                  STATUS          NAMES\n{hexs(12)}   acme/api:2.8.1     \"gunicorn app:app\"       Up 3 hours      api_1\n{hexs(12)}   postgres:16        \"docker-entrypoint.s…\"   Up 3 hours      db_1")
    x("docker_digest", "en", f"image: registry.k8s.io/ingress-nginx/controller:v1.11.2@sha256:{hexs(64)}")
    x("docker_digest", "en", f"Step 7/12 : RUN npm ci\n ---> Running in {hexs(12)}\nadded 812 packages in 21s\nRemoving intermediate container {hexs(12)}\n ---> {hexs(12)}")

    # lockfiles and checksums
    x("lockfile", "en", json.dumps({"node_modules/lodash": {"version": "4.17.21", "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz", "integrity": "sha512-" + b64(rng.randbytes(64)), "license": "MIT"}}, indent=2))
    x("lockfile", "en", f'[[package]]\nname = "serde"\nversion = "1.0.203"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{hexs(64)}"\ndependencies = [\n "serde_derive",\n]')
    x("lockfile", "en", f"golang.org/x/crypto v0.24.0 h1:{b64(rng.randbytes(32))}\ngolang.org/x/crypto v0.24.0/go.mod h1:{b64(rng.randbytes(32))}")
    x("lockfile", "en", f"requests==2.32.3 \\\n    --hash=sha256:{hexs(64)} \\\n    --hash=sha256:{hexs(64)}")
    x("lockfile", "en", f'"@babel/core@^7.24.0":\n  version "7.24.7"\n  resolved "https://registry.yarnpkg.com/@babel/core/-/core-7.24.7.tgz#{hexs(40)}"\n  integrity sha512-{b64(rng.randbytes(64))}')
    x("lockfile", "en", f'[[package]]\nname = "cryptography"\nversion = "43.0.0"\nfiles = [\n    {{file = "cryptography-43.0.0-cp39-abi3-manylinux_2_28_x86_64.whl", hash = "sha256:{hexs(64)}"}},\n]')
    x("lockfile", "en", f"$ sha256sum dist/aibuddy-1.4.0.tar.gz\n{hexs(64)}  dist/aibuddy-1.4.0.tar.gz")
    x("lockfile", "en", f"    \"content-hash\": \"{hexs(32)}\",\n    \"packages\": [")
    x("lockfile", "en", f"terraform {{\n  required_providers {{\n    aws = {{ source = \"hashicorp/aws\", version = \"5.54.1\" }}\n  }}\n}}\n# .terraform.lock.hcl\n  hashes = [\n    \"h1:{b64(rng.randbytes(32))}\",\n    \"zh:{hexs(64)}\",\n  ]")

    # UUIDs in URLs, object keys
    x("uuid_url", "en", f"https://app.acme.io/projects/{uuid4()}/runs/{uuid4()}?tab=logs")
    x("uuid_url", "en", f"Shared a doc with you: https://docs.google.com/document/d/{rand(B64URL, 44)}/edit?usp=sharing")
    x("uuid_url", "en", f"GET /api/v2/invoices/{uuid4()}/pdf HTTP/1.1\nHost: billing.acme.io\nAccept: application/pdf")
    x("uuid_url", "en", f"https://portal.azure.com/#@acme.onmicrosoft.com/resource/subscriptions/{uuid4()}/resourceGroups/rg-prod/overview")
    x("uuid_url", "zh", f"会议纪要在这里：https://acme.feishu.cn/docx/{rand(ALNUM, 27)} ，大家会前看一下")
    x("uuid_url", "en", f"Watch the recording: https://www.youtube.com/watch?v={rand(B64URL, 11)}&t=312s")
    x("object_key", "en", f"s3://acme-data-lake/raw/events/dt=2025-06-03/hour=14/part-00017-{uuid4()}.c000.snappy.parquet")
    x("object_key", "en", f"gs://acme-ml-artifacts/models/ranker/{hexs(12)}/checkpoint-48000/pytorch_model.bin")
    x("object_key", "en", f"Uploaded to https://acme-uploads.s3.eu-west-1.amazonaws.com/avatars/{uuid4()}.webp (184 KB)")
    x("object_key", "en", f"arn:aws:s3:::acme-backups/pg/2025/06/03/base-{digits(10)}.tar.zst")

    # Jira and similar keys
    x("jira", "en", "Blocked by PAY-1423 and OPS-88; see also INFRA-2201 for the cert rotation.")
    x("jira", "en", "[SEC-412] Rotate leaked credentials found by the scanner — status: Done, assignee: Dana Kim")
    x("jira", "zh", "这个需求挂在 CRM-3081 下面，测试单是 QA-772。")
    x("jira", "en", "Fixes #2841. Related: GH-1907, LINEAR ENG-3312")

    # Kubernetes names
    web = k8s_rs("web")
    x("k8s_names", "en", "NAME                                READY   STATUS    RESTARTS   AGE\n" + "\n".join(f"{k8s_pod(name, rs):<35} 1/1     Running   0          {age}" for name, rs, age in (("web", web, "3h12m"), ("web", web, "3h12m"), ("worker", "", "41m"), ("api-gateway", "", "2d"))))
    x("k8s_names", "en", f"Warning  BackOff  2m (x41 over 12m)  kubelet  Back-off restarting failed container app in pod {k8s_pod('checkout')}_prod({uuid4()})")
    x("k8s_names", "en", f"kubectl logs -n prod {k8s_pod('payments')} -c app --since=1h | grep -i timeout")
    x("k8s_names", "en", f"$ kubectl get secrets -n prod\nNAME                  TYPE                                  DATA   AGE\ndb-creds              Opaque                                2      41d\ndefault-token-{''.join(rng.choice(K8S) for _ in range(5))}   kubernetes.io/service-account-token   3      220d\ntls-api               kubernetes.io/tls                     2      12d")
    x("k8s_names", "en", f"replicaset.apps/{k8s_pod('web').rsplit('-', 1)[0]} scaled down to 0; job.batch/nightly-export-{digits(8)} completed")
    x("k8s_names", "en", f"Node ip-10-0-12-{rng.randint(2, 250)}.eu-west-1.compute.internal cordoned; instance i-{hexs(17)} terminating")

    # people talking about passwords and keys
    x("password_talk", "en", "I reset your password; check your inbox for a link. It expires in 24 hours.")
    x("password_talk", "en", "Your password was changed on June 3 at 14:02 UTC. If this wasn't you, contact security@acme.io right away.")
    x("password_talk", "en", "Please don't paste passwords in Slack. Use a 1Password share link, it expires after one view.")
    x("password_talk", "en", "Re: locked out\n\nHi Tom, the account unlocks by itself after 15 minutes. If you still can't sign in, use \"Forgot password\" on the login page — I can't see or send your password.")
    x("password_talk", "en", "The secret to good sourdough is a long cold proof; the key is patience.")
    x("password_talk", "en", "We rotated the API keys for all environments on Friday; the old ones stop working at midnight UTC. Nothing to do on your side if you use the vault.")
    x("password_talk", "en", "Where's the key to the server room? Maria has it, ask her before 5.")
    x("password_talk", "en", "Passwordless login (passkeys) is live for 38% of users; password sign-in stays as a fallback.")
    x("password_talk", "en", "Q: Is my token still valid?\nA: Run `gh auth status` — it tells you the account, the scopes and whether the token works, without printing it.")

    # Chinese chatter
    x("zh_chatter", "zh", "这学期选了密码学课程，老师讲了 RSA 和椭圆曲线，作业是实现一个 AES-128。")
    x("zh_chatter", "zh", "令牌环网络（Token Ring）是 IBM 在八十年代推的局域网技术，现在基本没人用了。")
    x("zh_chatter", "zh", "重置密码的链接已发送到你的邮箱 z***@163.com，有效期 30 分钟。")
    x("zh_chatter", "zh", "忘记密码的话点登录页下面的「找回密码」，会发验证码到手机上。")
    x("zh_chatter", "zh", "这个模型的上下文是 128k token，输入超过就会被截断。")
    x("zh_chatter", "zh", "本次调用消耗 prompt_tokens: 1532，completion_tokens: 418，总计 1950。")
    x("zh_chatter", "zh", f"订单号 {digits(18)} 已发货，顺丰单号 SF{digits(13)}，预计后天送达。")
    x("zh_chatter", "zh", "请把 API key 放在环境变量 DASHSCOPE_API_KEY 里，不要写进代码，也不要提交到仓库。")
    x("zh_chatter", "zh", "密钥轮换周期是 90 天，到期前一周会有邮件提醒。")
    x("zh_chatter", "zh", "咖啡店的 WiFi 不用密码，直接连 Starbucks 就行。")
    x("zh_chatter", "zh", "军训的时候口令要喊得整齐一点，教官说明天检查。")
    x("zh_chatter", "zh", "我把 token 的过期时间调成 7200 秒了，前端记得在过期前刷新。")
    x("zh_chatter", "zh", "Authorization 头里写 Bearer，加一个空格，再跟 token，别忘了那个空格。")
    x("zh_chatter", "zh", "把 password 字段改成 password_hash 了，明文不再入库，用的是 argon2id。")
    x("zh_chatter", "zh", "密码管理器推荐 Bitwarden，开源，能自建，家里人共享也方便。")
    x("zh_chatter", "zh", "他说的“秘钥”其实是公钥，发给你没关系，私钥才要保管好。")
    x("zh_chatter", "zh", "这个接口要先申请 AppKey，审核大概三个工作日，申请地址在开放平台的「我的应用」里。")
    x("zh_chatter", "zh", f"商户号 1{digits(9)} 是公开的，收款码上就印着，不算敏感信息。")
    x("zh_chatter", "zh", "你的账号因多次输入错误密码已被锁定，请 15 分钟后重试或联系管理员。")
    x("zh_chatter", "zh", "密码强度：弱。建议使用 12 位以上，包含大小写字母、数字和符号的组合。")
    x("zh_chatter", "zh", "今天分享一下 JWT 的结构：header、payload、signature 三段，用点号分隔，payload 只是 base64，不是加密。")
    x("zh_chatter", "zh", "生日快乐！密码是什么？——当然是我们第一次见面的日子呀（开玩笑的）")

    # policy texts
    x("password_policy", "en", "Passwords must be at least 12 characters and include upper- and lowercase letters, a number and a symbol. You cannot reuse any of your last 5 passwords.")
    x("password_policy", "en", "NIST SP 800-63B: verifiers SHOULD NOT impose composition rules and SHOULD NOT require periodic password changes; they SHALL check new passwords against a blocklist of breached values.")
    x("password_policy", "en", "API keys are shown once at creation. Store the key in a secret manager; we keep only a SHA-256 hash and the last four characters for display.")
    x("password_policy", "en", "min_length: 14\nrequire_symbols: true\nmax_age_days: 0\nlockout_after_failures: 10\nlockout_minutes: 15")

    # token fields without a token
    x("no_token", "en", json.dumps({"token_type": "Bearer", "expires_in": 3599, "scope": "https://www.googleapis.com/auth/drive.readonly"}, indent=2))
    x("no_token", "en", 'curl -H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json" https://api.github.com/repos/acme/web/actions/runs')
    x("no_token", "en", "Authorization: Bearer <token>\nContent-Type: application/json")
    x("no_token", "en", "error=invalid_grant&error_description=Token+has+been+expired+or+revoked.")
    x("no_token", "en", '{"error":{"message":"Incorrect API key provided: sk-proj-********************************************Q2xd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}')

    # public by design
    x("oauth_public", "en", f"GOOGLE_CLIENT_ID={digits(12)}-{rand(LOWER_ALNUM, 32)}.apps.googleusercontent.com\nGOOGLE_REDIRECT_URI=https://app.acme.io/auth/callback")
    x("oauth_public", "en", f"https://github.com/login/oauth/authorize?client_id=Iv1.{hexs(16)}&redirect_uri=https%3A%2F%2Fapp.acme.io%2Fcb&state={hexs(16)}")
    x("oauth_public", "en", f"<script src=\"https://js.stripe.com/v3/\"></script>\n<script>const stripe = Stripe('pk_live_51{rand(ALNUM, 97)}');</script>")
    x("oauth_public", "en", f"Sentry.init({{ dsn: \"https://{hexs(32)}@o{digits(6)}.ingest.us.sentry.io/{digits(16)}\", tracesSampleRate: 0.1 }});")
    header = b64url(json.dumps({"u": "acme-maps", "a": rand(LOWER_ALNUM, 25)}, separators=(",", ":")).encode())
    x("oauth_public", "en", f"mapboxgl.accessToken = 'pk.{header}.{rand(B64URL, 22)}';")
    x("oauth_public", "en", f"openid-configuration: issuer https://login.microsoftonline.com/{uuid4()}/v2.0, client_id {uuid4()}, response_type=code, scope=openid profile email")

    # public keys and certificates
    x("public_key_cert", "en", cert_pem())
    x("public_key_cert", "en", public_key_pem())
    x("public_key_cert", "en", f"$ cat ~/.ssh/id_ed25519.pub\n{ssh_ed25519_pub()} dana@mbp-dana")
    x("public_key_cert", "en", f"github.com {ssh_ed25519_pub()}\n|1|{b64(rng.randbytes(20))}|{b64(rng.randbytes(20))} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(rng.randbytes(64))[:86]}=")
    x("public_key_cert", "en", f"users:\n  - name: deploy\n    ssh_authorized_keys:\n      - {ssh_rsa_pub()} deploy@ci")
    x("public_key_cert", "en", f"gpg: Signature made Tue 03 Jun 2025 09:12:44 CEST\ngpg:                using RSA key {hexs(40).upper()}\ngpg: Good signature from \"Acme Release Signing <release@acme.io>\" [unknown]")
    x("public_key_cert", "en", f"[Peer]\nPublicKey = {b64(rng.randbytes(32))}\nEndpoint = vpn.acme.io:51820\nAllowedIPs = 10.8.0.0/24")
    x("public_key_cert", "en", f"sops:\n  age:\n    - recipient: age1{rand(BECH32, 58)}")
    x("public_key_cert", "en", "$ANSIBLE_VAULT;1.1;AES256\n" + "\n".join(hexs(80) for _ in range(5)))
    x("public_key_cert", "en", f"SHA256 Fingerprint={':'.join(hexs(2).upper() for _ in range(32))}\nIssuer: C=US, O=Let's Encrypt, CN=R11\nNot After : Aug 31 23:59:59 2025 GMT")

    # payment and platform object ids
    x("payment_ids", "en", f"PaymentIntent pi_{rand(ALNUM, 24)} succeeded: amount=4900 currency=eur customer=cus_{rand(ALNUM, 14)} charge=ch_{rand(ALNUM, 24)}")
    x("payment_ids", "en", f"Webhook received: evt_{rand(ALNUM, 24)} type=invoice.paid invoice=in_{rand(ALNUM, 24)} subscription=sub_{rand(ALNUM, 24)}")
    x("payment_ids", "en", f"PayPal capture {rand(UPPER_ALNUM, 17)} COMPLETED; order id {rand(UPPER_ALNUM, 17)}, payer {rand(UPPER_ALNUM, 13)}")
    x("payment_ids", "en", f"price_{rand(ALNUM, 24)} (Pro, monthly) and prod_{rand(ALNUM, 14)} are the ones to use in the checkout session.")
    x("payment_ids", "zh", f"支付宝交易号 2025060322001{digits(15)}，商户订单号 {digits(20)}，已退款。")
    x("payment_ids", "en", f"Shopify order #1042 (gid://shopify/Order/{digits(13)}) fulfilled, tracking 1Z{rand(UPPER_ALNUM, 16)}")

    # commit and PR URLs
    x("commit_url", "en", f"Fixed in https://github.com/acme/web/commit/{hexs(40)} (backported to 2.7 in {hexs(12)}).")
    x("commit_url", "en", f"https://gitlab.com/acme/platform/-/merge_requests/418/diffs?commit_id={hexs(40)}")
    x("commit_url", "en", f"See https://github.com/acme/web/compare/{hexs(7)}...{hexs(7)} for the full diff.")
    x("commit_url", "en", f"https://github.com/acme/infra/blob/{hexs(40)}/modules/rds/main.tf#L42-L57")

    # base64 data that is no secret
    x("base64_data", "en", f'<img alt="dot" src="{png_data_uri()}">')
    text = "hello world"
    x("base64_data", "en", f'$ echo -n "{text}" | base64\n{b64(text.encode())}')
    msg = "Meeting moved to Thursday 3pm, room Orion. Bring the Q2 numbers."
    x("base64_data", "en", f"Content-Transfer-Encoding: base64\n\n{b64(msg.encode())}")
    x("base64_data", "en", json.dumps({"kind": "ConfigMap", "binaryData": {"logo.png": png_data_uri().split(",", 1)[1]}}))
    x("base64_data", "zh", f"这是那段文字的 base64：{b64('周五下午三点在三楼会议室开会'.encode())}，解出来就是通知原文。")
    x("base64_data", "en", f"font-face src: url(data:font/woff2;base64,d09GMgABAAAAA{b64(rng.randbytes(120))}) format('woff2');")

    # small shapes: colours, versions, phones, IBANs, ids
    x("hex_color", "en", ":root {\n  --bg: #0f172a;\n  --fg: #e2e8f0;\n  --accent: #f59e0b;\n  --danger: #dc2626;\n}")
    x("hex_color", "en", "Brand palette: primary #1D4ED8, secondary #9333EA, neutral #6B7280 (see Figma page 'Tokens').")
    x("hex_color", "zh", "主色改成 #07C160，按钮圆角 8px，禁用态用 #C9CDD4。")
    x("semver", "en", "Upgraded next from 14.2.5 to 15.0.0-rc.1+build.5f3a9c1; node engines >=18.18.0 <23")
    x("semver", "en", "aibuddy 1.4.0 (git 3f9a2c1, built 2025-06-02T09:14:55Z, go1.22.4 linux/amd64)")
    x("semver", "en", "python_requires = \">=3.10\"\ndependencies = [\"httpx>=0.27,<0.29\", \"pydantic==2.7.4\", \"rich~=13.7\"]")
    x("semver", "zh", "客户端版本 6.8.0.2405，安卓最低 8.0，iOS 最低 15.0。")
    x("phone", "en", "Call me on +44 20 7946 0958 or +1 (415) 555-0142 after 6.")
    x("phone", "zh", f"联系人：王经理 13{digits(9)}，座机 021-{digits(8)} 转 8012")
    x("phone", "en", "Support line: 1-800-275-2273, Mon-Fri 9am-6pm CET")
    x("iban", "en", f"Please transfer the invoice amount to Acme Outdoor GmbH, IBAN {iban_de()}, BIC COBADEFFXXX, reference INV-2025-0612.")
    x("iban", "en", f"Bank details (also on our website): {iban_de()} · Commerzbank Berlin")
    x("iban", "zh", f"对公账户：招商银行上海分行 {digits(4)} {digits(4)} {digits(4)} {digits(4)}，户名：上海某某科技有限公司")
    x("misc_ids", "en", f'{{"_id": {{"$oid": "{hexs(24)}"}}, "sku": "TENT-2P", "stock": 14}}')
    x("misc_ids", "en", f"event {rand('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} appended to stream orders-{digits(4)}")
    x("misc_ids", "en", f"Discord user id {digits(18)}, guild {digits(19)}, message {digits(19)}")
    x("misc_ids", "en", f"arn:aws:iam::{digits(12)}:role/github-actions-deploy\narn:aws:lambda:eu-west-1:{digits(12)}:function:thumbnailer")
    x("misc_ids", "en", f"Instance i-{hexs(17)} in subnet subnet-{hexs(17)}, sg-{hexs(17)}, vpc-{hexs(8)}")
    x("misc_ids", "en", f"Etherscan: tx 0x{hexs(64)} from 0x{hexs(40)} to 0x{hexs(40)} — 0.042 ETH")
    x("misc_ids", "en", f"Donations welcome: bc1q{rand(BECH32, 38)}")
    x("misc_ids", "en", f"MAC {':'.join(hexs(2) for _ in range(6))}, IPv6 fe80::{hexs(4)}:{hexs(4)}:{hexs(4)}:{hexs(4)}%en0")
    x("misc_ids", "en", f"Google Analytics G-{rand(UPPER_ALNUM, 10)}, GTM-{rand(UPPER_ALNUM, 7)}, Algolia app id {rand(UPPER_ALNUM, 10)}")
    x("misc_ids", "en", f"gravatar: https://www.gravatar.com/avatar/{hexs(32)}?s=80&d=identicon")

    # variables, references and placeholders instead of values
    x("env_reference", "en", "export DB_PASSWORD=$(vault read -field=password secret/prod/db)")
    x("env_reference", "en", "      - name: Login to registry\n        uses: docker/login-action@v3\n        with:\n          username: ${{ github.actor }}\n          password: ${{ secrets.GITHUB_TOKEN }}")
    x("env_reference", "en", 'api_key = os.environ["OPENAI_API_KEY"]\nclient = OpenAI(api_key=api_key)')
    x("env_reference", "en", "environment:\n  POSTGRES_PASSWORD_FILE: /run/secrets/pg_password\nsecrets:\n  pg_password:\n    file: ./secrets/pg_password.txt")
    x("env_reference", "en", 'password = getpass.getpass(f"Password for {user}@{host}: ")')
    x("env_reference", "en", 'const token = process.env.GITHUB_TOKEN ?? "";\nif (!token) throw new Error("GITHUB_TOKEN is not set");')
    x("env_reference", "en", "DATABASE_URL=postgres://${DB_USER}:${DB_PASS}@${DB_HOST}:5432/app")
    x("env_reference", "en", "kubectl create secret generic db --from-file=password=./db-password.txt --dry-run=client -o yaml | kubeseal > sealed.yaml")
    x("env_reference", "en", 'aws configure set aws_secret_access_key "$AWS_SECRET_ACCESS_KEY" --profile ci')
    x("env_reference", "en", "helm install pg bitnami/postgresql --set auth.password=$(openssl rand -base64 24)")
    x("env_reference", "en", 'ansible_become_pass: "{{ vault_become_pass }}"\nansible_ssh_pass: "{{ lookup(\'env\', \'SSH_PASS\') }}"')
    x("env_reference", "en", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-creds\n        key: password")
    x("env_reference", "en", "spring.datasource.password=${DB_PASSWORD:}\nspring.datasource.username=${DB_USER:app}")
    x("env_reference", "en", "[pypi]\nusername = __token__\npassword = %(PYPI_TOKEN)s")
    x("env_reference", "en", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}")
    x("env_reference", "en", "git clone https://x-access-token:${GH_TOKEN}@github.com/acme/infra.git")
    x("env_reference", "zh", "密码从环境变量读：DB_PASSWORD=${DB_PASSWORD}，本地开发用 .env.local，别提交。")
    x("env_reference", "en", "op run --env-file=.env.tpl -- npm start   # .env.tpl: STRIPE_KEY=op://Prod/Stripe/secret-key")
    x("placeholder", "en", "OPENAI_API_KEY=<your-api-key>\nANTHROPIC_API_KEY=\nGROQ_API_KEY=")
    x("placeholder", "en", '{\n  "username": "admin",\n  "password": "",\n  "apiKey": null\n}')
    x("placeholder", "en", "Replace YOUR_API_KEY_HERE in config.js with the key from your dashboard.")
    x("placeholder", "en", "token: REPLACE_ME\nwebhook_url: https://hooks.slack.com/services/XXX/YYY/ZZZ")
    x("placeholder", "en", "Use the format sk-ant-api03-… (about 108 characters) — paste it into the settings dialog, not here.")
    x("placeholder", "zh", "在下面的输入框里填你的 API Key（形如 sk-xxxx），点保存即可。")
    x("placeholder", "en", "mysql -u root -p   # you'll be prompted for the password")
    x("placeholder", "en", "password: ********\nconfirm:  ********")
    x("masked", "en", "Run curl -H \"Authorization: token ***\" https://api.github.com/user\n  shell: /usr/bin/bash -e {0}\n  env:\n    GH_TOKEN: ***")
    x("masked", "en", f"Key created: sk-...{rand(ALNUM, 4)} (Project: support-bot, permissions: All)")
    x("masked", "en", "DEBUG connecting to postgresql://app:****@db:5432/app")
    x("masked", "en", "Celery transport: redis://:**@redis-prod:6379/0")
    x("masked", "en", f"AKIA****************  last used 3 days ago  (key ending in {rand(UPPER_ALNUM, 4)})")
    x("masked", "zh", f"你的银行卡尾号 {digits(4)} 于 06-03 14:22 消费 128.00 元。")

    # LLM and auth vocabulary
    x("llm_tokens", "en", "usage: {prompt_tokens: 1832, completion_tokens: 412, total_tokens: 2244}; max_tokens=4096")
    x("llm_tokens", "en", "The tokenizer splits 'unbelievable' into ['un', 'believ', 'able']; token ids [403, 56012, 481].")
    x("llm_tokens", "en", "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29870, Requested 1120.")
    x("llm_tokens", "zh", "这段提示词大概 3000 个 token，换成中文会更多，因为一个汉字常常占一到两个 token。")
    x("auth_errors", "en", 'psycopg2.OperationalError: connection to server at "10.0.3.12", port 5432 failed: FATAL:  password authentication failed for user "app"')
    x("auth_errors", "en", "remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/acme/web.git/'")
    x("auth_errors", "en", "Error: 401 Unauthorized - GET https://registry.npmjs.org/@acme%2fui - authentication token not provided")
    x("auth_errors", "en", "botocore.exceptions.NoCredentialsError: Unable to locate credentials")
    x("auth_errors", "en", "sshd[2213]: Failed password for invalid user admin from 185.220.101.4 port 51122 ssh2")
    x("auth_errors", "zh", "登录失败：用户名或密码错误（剩余尝试次数 2 次）")
    x("code_no_value", "en", "def check_password(user, password):\n    return bcrypt.checkpw(password.encode(), user.password_hash)")
    x("code_no_value", "en", '<label for="pw">Password</label>\n<input id="pw" type="password" name="password" autocomplete="current-password" minlength="12">')
    x("code_no_value", "en", "class TokenBucket:\n    def __init__(self, rate: float, capacity: int) -> None:\n        self.tokens = capacity")
    x("code_no_value", "en", "SECRET_KEY_FALLBACKS = []\nPASSWORD_HASHERS = [\"django.contrib.auth.hashers.Argon2PasswordHasher\"]")
    x("code_no_value", "en", "if not api_key.startswith((\"sk-\", \"sk-proj-\")):\n    raise ValueError(\"that does not look like an OpenAI key\")")

    # hashes of public things
    x("hashes", "en", f"MD5 (ubuntu-24.04-live-server-amd64.iso) = {hexs(32)}")
    x("hashes", "en", f"Subresource integrity: <script src=\"https://cdn.jsdelivr.net/npm/alpinejs@3.14.1/dist/cdn.min.js\" integrity=\"sha384-{b64(rng.randbytes(48))}\" crossorigin=\"anonymous\"></script>")
    x("hashes", "en", f"IPFS: ipfs://bafybei{rand('abcdefghijklmnopqrstuvwxyz234567', 52)}")
    x("hashes", "en", f"torrent magnet:?xt=urn:btih:{hexs(40)}&dn=debian-12.5.0-amd64-netinst.iso")
    x("hashes", "en", f"Build cache key: node-modules-{hexs(64)}")
    x("hashes", "en", f"Sigstore: tlog entry {hexs(64)} (logIndex {digits(9)})")

    # build artefacts
    x("build_artifacts", "en", "\n".join(f"dist/assets/{name}-{rand(B64URL, 8)}.{ext}  {size}" for name, ext, size in (("index", "js", "142.31 kB │ gzip: 45.12 kB"), ("index", "css", "18.07 kB │ gzip: 4.33 kB"), ("vendor", "js", "301.88 kB │ gzip: 98.40 kB"))))
    x("build_artifacts", "en", f'<script defer src="/static/js/main.{hexs(20)}.js"></script>\n<link href="/static/css/main.{hexs(8)}.css" rel="stylesheet">')
    x("build_artifacts", "en", f"GET /_next/static/{rand(B64URL, 21)}/_buildManifest.js 200 in 3ms")
    x("build_artifacts", "en", f"aws cloudfront create-invalidation --distribution-id E{rand(UPPER_ALNUM, 13)} --paths '/*'\nInvalidation I{rand(UPPER_ALNUM, 13)} InProgress")
    x("build_artifacts", "en", json.dumps({"projectId": "acme-web-3f1a2", "appId": f"1:{digits(12)}:web:{hexs(22)}", "messagingSenderId": digits(12), "measurementId": f"G-{rand(UPPER_ALNUM, 10)}"}))
    x("build_artifacts", "en", f"DEVELOPMENT_TEAM = {rand(UPPER_ALNUM, 10)};\nPRODUCT_BUNDLE_IDENTIFIER = io.acme.outdoor;\nCODE_SIGN_STYLE = Automatic;")
    x("build_artifacts", "en", f'<button class="Button_primary__{rand(B64URL, 5)} Button_large__{rand(B64URL, 5)}" type="submit">Sign in</button>')
    sourcemap = json.dumps({"version": 3, "sources": ["../src/index.ts"], "names": [], "mappings": "AAAA,SAASA,KAAK;AACd"}, separators=(",", ":"))
    x("build_artifacts", "en", f"export {{ main }};\n//# sourceMappingURL=data:application/json;base64,{b64(sourcemap.encode())}")
    x("build_artifacts", "en", f"configmap/nginx-conf-{''.join(rng.choice(K8S) for _ in range(10))} created\ndeployment.apps/web configured")

    # licence texts (open source: no key at all)
    x("license", "en", "SPDX-License-Identifier: Apache-2.0\nCopyright 2025 Acme Inc.")
    x("license", "en", "This project is dual-licensed under MIT OR Apache-2.0; see LICENSE-MIT and LICENSE-APACHE.")
    x("license", "zh", "本项目采用 GPL-3.0 许可证，商业闭源使用请联系我们获取授权。")
    return r.rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="the folder to write the two files to")
    out = parser.parse_args(argv).out
    rng.seed(SEED)
    credentials = build_credentials()
    lookalikes = build_lookalikes()
    for name, rows in (("credentials.jsonl", credentials), ("lookalikes.jsonl", lookalikes)):
        with (out / name).open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{name}: {len(rows)}")


if __name__ == "__main__":
    main()
