#!/usr/bin/env python3
"""Writes the two fixed sets bench/secret_rates.py measures a secret redactor on.

    python bench/sets/secrets/make_sets.py      # rewrites credentials.jsonl and lookalikes.jsonl

The generator is seeded: a run gives the same files byte for byte. The JSONL files are the set;
this script is how they were made (edit it and run it again to change them, then commit both).

credentials.jsonl: {"id", "provider", "format", "lang", "text", "secret"}. "secret" is the exact
substring of "text" that must disappear (a list when a text holds several). It is the smallest
part that grants access: the password of a URL, not its user; the last segment of a Slack or
Discord webhook URL, not the workspace or channel ids; the key material of a PEM block, not its
BEGIN/END lines; a provider token as issued, prefix included. "format" is where the text comes
from: prose (a message), json, env (.env, ini, rc and properties lines), url, header (HTTP
headers), yaml, cli (a shell command), code (source or a key file), log (a log line).

lookalikes.jsonl: {"id", "category", "lang", "text"}: text that is not a credential but sits near
one, as conversations have it. Decisions on the contested cases:

- Placeholders are not secrets: `${DB_PASSWORD}`, `<your-api-key>`, `sk-...`, `xxxx`, `****`,
  `your-key-here`, `{{ secrets.NPM_TOKEN }}`, AWS's documented `AKIAIOSFODNN7EXAMPLE`. Well-known
  default values written as a value (`password: changeme`, `admin/admin`) are in neither set: a
  detector cannot tell a template from a live config, and the value is public either way.
- Publishable keys are public by design (Stripe `pk_live_`/`pk_test_`, Mapbox `pk.`, reCAPTCHA
  site keys, a Sentry DSN without a secret): look-alikes. Their secret halves (`sk_live_`, `sk.`,
  a DSN with `:secret@`) are credentials.
- Identifiers are not secrets: Stripe `cus_`/`pi_`/`ch_` ids, AWS ARNs and account ids, S3
  bucket names, Google Analytics ids, Slack channel ids, a Twilio account SID on its own.

Every value is fabricated: random characters of each provider's documented charset and length
(formats from gitleaks' rules and the providers' docs). None is a real key.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
rng = random.Random(20250603)

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"

# A random value never holds a 4-character piece of a common redaction label ("[redacted:
# password]", "[REDACTED_TOKEN]"...): the bench counts a 4-character piece of a secret left in the
# output as a leak, and a label's own letters must not look like one.
_LABEL_WORDS = ("redacted", "password", "secret", "token", "private", "masked", "hidden", "removed")
_LABEL_PIECES = {word[i : i + 4] for word in _LABEL_WORDS for i in range(len(word) - 3)}
_USED: set[str] = set()


def _clean(value: str) -> bool:
    low = value.lower()
    return not any(piece in low for piece in _LABEL_PIECES)


def r(charset: str, n: int) -> str:
    """n random characters of charset, never the same value twice."""
    while True:
        value = "".join(rng.choice(charset) for _ in range(n))
        if _clean(value) and value not in _USED:
            _USED.add(value)
            return value


def hexs(n: int) -> str:
    return r(HEX, n)


def digits(n: int) -> str:
    return str(rng.randint(1, 9)) + r(DIGITS, n - 1)


def b64_bytes(data: bytes, alphabet: str = "std") -> str:
    if alphabet == "url":
        return base64.urlsafe_b64encode(data).decode().rstrip("=")
    return base64.b64encode(data).decode()


def rand_bytes(n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def clean_b64(prefix: bytes, n: int, alphabet: str = "std") -> str:
    while True:
        value = b64_bytes(prefix + rand_bytes(n), alphabet)
        if _clean(value):
            return value


def uuid4() -> str:
    h = hexs(32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


WORDS = (
    "Maple Orbit Falcon Copper Lantern Harbor Velvet Quartz Summit Tundra Meadow Cobalt Saffron "
    "Glacier Ember Juniper Nimbus Pebble Thistle Zephyr Cedar Marble Raven Willow Biscuit Comet "
    "Dolphin Fjord Gravel Hazel Indigo Jasper Kettle Lilac Mango Nectar Olive Pepper Quill Ripple "
    "Sparrow Tulip Umber Walnut Yarrow Basil Canyon Drift"
).split()
SYMBOLS = "!#%&*@^?"


def human_password() -> str:
    """A password a person picks: words, digits, sometimes a symbol."""
    while True:
        a, b = rng.sample(WORDS, 2)
        style = rng.randrange(5)
        if style == 0:
            value = f"{a}{b}{rng.randint(10, 99)}"
        elif style == 1:
            value = f"{a}{rng.randint(1000, 2099)}{rng.choice(SYMBOLS)}"
        elif style == 2:
            value = f"{a.lower()}{rng.randint(10, 999)}{b}"
        elif style == 3:
            value = f"{a[:1].lower()}{a[1:]}_{b}{rng.randint(1, 9)}{rng.choice(SYMBOLS)}"
        else:
            value = f"{a}-{b.lower()}-{rng.randint(100, 999)}"
        if _clean(value) and value not in _USED:
            _USED.add(value)
            return value


def strong_password(n: int = 16, charset: str = ALNUM + "!#%&*@^") -> str:
    while True:
        value = r(charset, n)
        symbol_ok = any(c in "!#%&*@^" for c in value) or not any(c in "!#%&*@^" for c in charset)
        if any(c in DIGITS for c in value) and any(c in LOWER for c in value) and symbol_ok:
            return value


def special_password(start: str = "") -> str:
    """A password holding characters that end a value in naive patterns: & ) ] < > $ % # !"""
    specials = "&)]<>$%#!"
    while True:
        body = list(r(ALNUM, 11 - len(start)))
        for _ in range(3):
            body.insert(rng.randrange(1, len(body)), rng.choice(specials))
        value = start + "".join(body)
        # at least four ordinary characters after the first special one: a value cut at it
        # leaves a piece the bench sees
        first = min(value.index(c) for c in specials if c in value)
        if len(value) - first > 5 and value not in _USED:
            _USED.add(value)
            return value


def url_password(password: str) -> str:
    """password as a URL's user-info holds it: reserved characters percent-encoded."""
    return "".join(c if c.isalnum() or c in "-._~" else f"%{ord(c):02X}" for c in password)


def pem_lines(body: str, width: int = 64) -> list[str]:
    return [body[i : i + width] for i in range(0, len(body), width)]


# ---------------------------------------------------------------------------- credentials
CREDS: list[dict[str, object]] = []


def cred(provider: str, fmt: str, lang: str, text: str, secret: str | list[str]) -> None:
    secrets = secret if isinstance(secret, list) else [secret]
    for value in secrets:
        assert value in text, (provider, value)
        assert len(value) >= 8, (provider, value)
    n = sum(c["provider"] == provider for c in CREDS) + 1
    CREDS.append(
        {
            "id": f"{provider}-{n:02d}",
            "provider": provider,
            "format": fmt,
            "lang": lang,
            "text": text,
            "secret": secret,
        }
    )


def aws_id(prefix: str = "AKIA") -> str:
    return prefix + r(UPPER + "234567", 16)


def aws_secret() -> str:
    return r(ALNUM + "+/", 40)


def build_credentials() -> None:
    # --- cloud: AWS -------------------------------------------------------------------
    k, s = aws_id(), aws_secret()
    cred(
        "aws",
        "env",
        "en",
        f"AWS_ACCESS_KEY_ID={k}\nAWS_SECRET_ACCESS_KEY={s}\nAWS_DEFAULT_REGION=eu-west-1",
        [k, s],
    )
    k, s = aws_id(), aws_secret()
    cred(
        "aws",
        "env",
        "en",
        f"[default]\naws_access_key_id = {k}\naws_secret_access_key = {s}\nregion = us-east-1",
        [k, s],
    )
    k, s = aws_id(), aws_secret()
    cred("aws", "prose", "en", f"Keys for the backup bucket: {k} {s} (read-only, rotate next sprint)", [k, s])
    k, s = aws_id(), aws_secret()
    doc = {
        "AccessKey": {
            "UserName": "ci-deployer",
            "AccessKeyId": k,
            "Status": "Active",
            "SecretAccessKey": s,
            "CreateDate": "2024-03-18T09:12:44+00:00",
        }
    }
    cred("aws", "json", "en", json.dumps(doc, indent=4), [k, s])
    k, s = aws_id(), aws_secret()
    cred(
        "aws",
        "code",
        "en",
        f's3 = boto3.client(\n    "s3",\n    aws_access_key_id="{k}",\n    aws_secret_access_key="{s}",\n)',
        [k, s],
    )
    s = aws_secret()
    cred("aws", "cli", "en", f"aws configure set aws_secret_access_key {s} --profile prod", s)
    k, s = aws_id(), aws_secret()
    cred("aws", "prose", "zh", f"AWS 访问密钥 ID：{k}，私有访问密钥：{s}。部署完记得在 IAM 里禁用。", [k, s])
    k, s = aws_id("ASIA"), aws_secret()
    session = clean_b64(b"!\n\torigin_ec", 260)
    cred(
        "aws",
        "env",
        "en",
        f"export AWS_ACCESS_KEY_ID={k}\nexport AWS_SECRET_ACCESS_KEY={s}\nexport AWS_SESSION_TOKEN={session}",
        [k, s, session],
    )
    k, s = aws_id(), aws_secret()
    cred(
        "aws",
        "log",
        "en",
        f"2024-05-03 10:22:01,118 DEBUG [deploy] using credentials access_key={k} secret_key={s}",
        [k, s],
    )
    k, s = aws_id(), aws_secret()
    cred("aws", "prose", "en", f"key id {k}\nsecret {s}", [k, s])
    s = aws_secret()
    cred("aws", "prose", "zh", f"刚才那个 secret access key 是 {s} ，key id 我单独发你", s)

    # --- cloud: Google ----------------------------------------------------------------
    def gcp_key() -> str:
        return "AIza" + r(ALNUM + "-_", 35)

    k = gcp_key()
    cred("gcp-api-key", "env", "en", f"GOOGLE_MAPS_API_KEY={k}", k)
    k = gcp_key()
    cred(
        "gcp-api-key",
        "url",
        "en",
        f"curl 'https://maps.googleapis.com/maps/api/geocode/json?address=Alexanderplatz+Berlin&key={k}'",
        k,
    )
    k = gcp_key()
    cred(
        "gcp-api-key", "code", "en", f'import google.generativeai as genai\ngenai.configure(api_key="{k}")', k
    )
    k = gcp_key()
    cred("gcp-api-key", "prose", "zh", f"Gemini 的 API key 我放这了：{k}，每天额度 1500 次。", k)

    for lang in ("en", "zh"):
        body_lines = pem_lines(
            clean_b64(bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8"), 1192)
        )
        key_json = "\\n".join(body_lines)
        doc = {
            "type": "service_account",
            "project_id": "acme-analytics-prod",
            "private_key_id": hexs(40),
            "private_key": "-----BEGIN PRIVATE KEY-----\n"
            + "\n".join(body_lines)
            + "\n-----END PRIVATE KEY-----\n",
            "client_email": "bq-loader@acme-analytics-prod.iam.gserviceaccount.com",
            "client_id": digits(21),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
        }
        if lang == "en":
            cred("gcp-service-account", "json", "en", json.dumps(doc, indent=2), key_json)
        else:
            cred(
                "gcp-service-account",
                "json",
                "zh",
                "服务账号的 JSON 发你了，放到 secrets 目录：\n" + json.dumps(doc),
                key_json,
            )

    # --- cloud: Azure -----------------------------------------------------------------
    def azure_account_key() -> str:
        return clean_b64(b"", 64)

    k = azure_account_key()
    cred(
        "azure-storage",
        "env",
        "en",
        f'AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey={k};'
        f'EndpointSuffix=core.windows.net"',
        k,
    )
    k = azure_account_key()
    doc = {
        "ConnectionStrings": {
            "Blob": f"DefaultEndpointsProtocol=https;AccountName=acmeimages;AccountKey={k};"
            "EndpointSuffix=core.windows.net"
        },
        "Logging": {"LogLevel": {"Default": "Information"}},
    }
    cred("azure-storage", "json", "en", json.dumps(doc, indent=2), k)
    k = azure_account_key()
    cred(
        "azure-storage",
        "cli",
        "en",
        f"az storage blob upload --account-name acmeprodlogs --account-key {k} "
        "-c backups -f db.bak -n db.bak",
        k,
    )
    k = azure_account_key()
    cred("azure-storage", "prose", "zh", f"存储账户 acmebackup 的访问密钥：{k}", k)

    def azure_client_secret() -> str:
        return r(ALNUM, 3) + rng.choice(DIGITS) + "Q~" + r(ALNUM + "_~.-", 34)

    s = azure_client_secret()
    cred(
        "azure-client-secret",
        "env",
        "en",
        f"AZURE_CLIENT_ID={uuid4()}\nAZURE_TENANT_ID={uuid4()}\nAZURE_CLIENT_SECRET={s}",
        s,
    )
    s = azure_client_secret()
    cred(
        "azure-client-secret",
        "cli",
        "en",
        f"az login --service-principal -u {uuid4()} -p {s} --tenant {uuid4()}",
        s,
    )
    s = azure_client_secret()
    doc = {"appId": uuid4(), "displayName": "gh-actions-deployer", "password": s, "tenant": uuid4()}
    cred("azure-client-secret", "json", "en", json.dumps(doc, indent=2), s)
    s = azure_client_secret()
    cred(
        "azure-client-secret", "prose", "zh", f"应用注册的客户端密码（client secret）是 {s}，两年后过期。", s
    )

    def sas_sig() -> str:
        raw = clean_b64(b"", 32)
        return raw.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")

    sig = sas_sig()
    cred(
        "azure-sas",
        "url",
        "en",
        "Here's the SAS link for the backup: https://acmebackups.blob.core.windows.net/sql/prod-2024-05-01.bak"
        f"?sv=2022-11-02&ss=b&srt=o&sp=r&se=2024-06-01T00:00:00Z&st=2024-05-01T00:00:00Z&spr=https&sig={sig}",
        sig,
    )
    sig = sas_sig()
    cred(
        "azure-sas",
        "url",
        "zh",
        "下载链接（7 天有效）：https://acmeshare.blob.core.windows.net/exports/report.xlsx"
        f"?sp=r&st=2024-05-01T02:00:00Z&se=2024-05-08T10:00:00Z&spr=https&sv=2022-11-02&sr=b&sig={sig}",
        sig,
    )

    # --- cloud: others ----------------------------------------------------------------
    t = "dop_v1_" + hexs(64)
    cred("digitalocean", "env", "en", f"DIGITALOCEAN_TOKEN={t}", t)
    t = "dop_v1_" + hexs(64)
    cred("digitalocean", "cli", "en", f"doctl auth init --access-token {t}", t)
    t = "dop_v1_" + hexs(64)
    cred("digitalocean", "code", "en", f'provider "digitalocean" {{\n  token = "{t}"\n}}', t)
    t = "dop_v1_" + hexs(64)
    cred("digitalocean", "prose", "zh", f"DO 的个人访问令牌：{t}", t)

    t = "HRKU-AA" + r(ALNUM + "_-", 58)
    cred("heroku", "env", "en", f"HEROKU_API_KEY={t}", t)
    t = "HRKU-AA" + r(ALNUM + "_-", 58)
    cred("heroku", "prose", "en", f"heroku token for the pipeline: {t}", t)
    t = uuid4()
    cred("heroku", "env", "en", f"HEROKU_API_KEY={t}\nHEROKU_APP=acme-web-staging", t)

    t = r(ALNUM + "_-", 40)
    cred("cloudflare", "env", "en", f"CLOUDFLARE_API_TOKEN={t}", t)
    t = r(ALNUM + "_-", 40)
    cred(
        "cloudflare",
        "header",
        "en",
        'curl "https://api.cloudflare.com/client/v4/user/tokens/verify" \\\n'
        f'     -H "Authorization: Bearer {t}"',
        t,
    )
    k = hexs(37)
    cred("cloudflare", "header", "en", f"X-Auth-Email: ops@acme.io\nX-Auth-Key: {k}", k)
    t = r(ALNUM + "_-", 40)
    cred("cloudflare", "prose", "zh", f"Cloudflare 的 API 令牌：{t}（只有 DNS 编辑权限）", t)

    for lang in ("en", "zh", "en"):
        k, s = "LTAI" + r(ALNUM, 20), r(ALNUM, 30)
        if lang == "zh":
            cred("alibaba", "prose", "zh", f"阿里云 AccessKey ID：{k}\nAccessKey Secret：{s}", [k, s])
        elif len([c for c in CREDS if c["provider"] == "alibaba"]) == 0:
            cred(
                "alibaba",
                "env",
                "en",
                f"ALIBABA_CLOUD_ACCESS_KEY_ID={k}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={s}",
                [k, s],
            )
        else:
            cred("alibaba", "code", "en", f'client = AcsClient("{k}", "{s}", "cn-hangzhou")', [k, s])

    k, s = "AKID" + r(ALNUM, 32), r(ALNUM, 32)
    cred("tencent-cloud", "prose", "zh", f"腾讯云的 SecretId 是 {k}，SecretKey 是 {s}，COS 上传用。", [k, s])
    k, s = "AKID" + r(ALNUM, 32), r(ALNUM, 32)
    cred("tencent-cloud", "env", "en", f"TENCENTCLOUD_SECRET_ID={k}\nTENCENTCLOUD_SECRET_KEY={s}", [k, s])

    # --- code hosts -------------------------------------------------------------------
    def ghp() -> str:
        return "ghp_" + r(ALNUM, 36)

    t = ghp()
    cred("github-classic", "url", "en", f"git remote set-url origin https://{t}@github.com/acme/infra.git", t)
    t = ghp()
    cred("github-classic", "env", "en", f"GITHUB_TOKEN={t}", t)
    t = ghp()
    cred(
        "github-classic",
        "header",
        "en",
        f"curl -H 'Authorization: token {t}' https://api.github.com/user/repos",
        t,
    )
    t = ghp()
    cred("github-classic", "prose", "zh", f"GitHub 的 personal access token：{t}，只勾了 repo 权限。", t)
    t = ghp()
    cred("github-classic", "prose", "en", f"I regenerated my PAT, the new one is {t}", t)
    t = ghp()
    cred(
        "github-classic", "yaml", "en", f"    env:\n      GH_TOKEN: {t}\n    run: gh release create v1.4.0", t
    )

    def gh_fine() -> str:
        return "github_pat_11" + r(UPPER + DIGITS, 20) + "_" + r(ALNUM, 59)

    t = gh_fine()
    cred("github-fine-grained", "env", "en", f"GH_TOKEN={t}", t)
    t = gh_fine()
    cred(
        "github-fine-grained",
        "prose",
        "en",
        f"Fine-grained token for the docs repo (expires in 30 days): {t}",
        t,
    )
    t = gh_fine()
    cred("github-fine-grained", "cli", "zh", f"先登录：echo {t} | gh auth login --with-token", t)
    t = gh_fine()
    cred(
        "github-fine-grained",
        "json",
        "en",
        json.dumps({"github": {"owner": "acme", "token": t}}, indent=2),
        t,
    )

    t = "ghs_" + r(ALNUM, 36)
    cred("github-app", "url", "en", f"git clone https://x-access-token:{t}@github.com/acme/api.git", t)
    t = "gho_" + r(ALNUM, 36)
    cred(
        "github-app",
        "json",
        "en",
        json.dumps({"access_token": t, "token_type": "bearer", "scope": "repo,gist"}),
        t,
    )
    t, rt = "ghu_" + r(ALNUM, 36), "ghr_" + r(ALNUM, 76)
    cred(
        "github-app",
        "json",
        "en",
        json.dumps(
            {
                "access_token": t,
                "expires_in": 28800,
                "refresh_token": rt,
                "refresh_token_expires_in": 15811200,
                "token_type": "bearer",
            },
            indent=2,
        ),
        [t, rt],
    )
    t = "ghs_" + r(ALNUM, 36)
    cred("github-app", "log", "en", f"[2024-05-03T08:01:12Z] minted installation token {t} for acme/web", t)

    def glpat() -> str:
        return "glpat-" + r(ALNUM + "_-", 20)

    t = glpat()
    cred("gitlab", "url", "en", f"git clone https://oauth2:{t}@gitlab.com/acme/platform.git", t)
    t = glpat()
    cred(
        "gitlab",
        "header",
        "en",
        f'curl --header "PRIVATE-TOKEN: {t}" "https://gitlab.example.com/api/v4/projects"',
        t,
    )
    t = glpat()
    cred("gitlab", "env", "en", f"GITLAB_TOKEN={t}", t)
    t = glpat()
    cred("gitlab", "prose", "zh", f"GitLab 令牌：{t}，有效期到月底。", t)
    t = "glrt-" + r(ALNUM + "_-", 20)
    cred("gitlab", "cli", "en", f"gitlab-runner register --url https://gitlab.com --token {t}", t)

    def atbb() -> str:
        return "ATBB" + r(ALNUM, 32)

    t = atbb()
    cred("bitbucket", "url", "en", f"git clone https://jdoe:{t}@bitbucket.org/acme/payments.git", t)
    t = atbb()
    cred("bitbucket", "env", "en", f"BITBUCKET_USERNAME=jdoe\nBITBUCKET_APP_PASSWORD={t}", t)
    t = atbb()
    cred("bitbucket", "prose", "en", f"my Bitbucket app password: {t}", t)
    t = atbb()
    cred("bitbucket", "prose", "zh", f"Bitbucket 应用密码是 {t} ，CI 用的。", t)

    # --- AI providers -----------------------------------------------------------------
    def openai_key() -> str:
        return "sk-proj-" + r(ALNUM + "_-", 74) + "T3BlbkFJ" + r(ALNUM + "_-", 74)

    k = openai_key()
    cred("openai", "env", "en", f"OPENAI_API_KEY={k}", k)
    k = openai_key()
    cred("openai", "code", "en", f'from openai import OpenAI\nclient = OpenAI(api_key="{k}")', k)
    k = openai_key()
    cred(
        "openai",
        "header",
        "en",
        f'curl https://api.openai.com/v1/models \\\n  -H "Authorization: Bearer {k}"',
        k,
    )
    k = openai_key()
    cred("openai", "prose", "zh", f"我的 OpenAI key 是 {k}，帮我看看为什么一直报 429。", k)
    k = "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)
    cred("openai", "prose", "en", f"old key from 2023, probably revoked: {k}", k)
    k = "sk-svcacct-" + r(ALNUM + "_-", 74) + "T3BlbkFJ" + r(ALNUM + "_-", 74)
    cred("openai", "yaml", "en", f"llm:\n  provider: openai\n  model: gpt-4o-mini\n  api_key: {k}", k)

    def anthropic_key(kind: str = "api03") -> str:
        return f"sk-ant-{kind}-" + r(ALNUM + "_-", 93) + "AA"

    k = anthropic_key()
    cred("anthropic", "env", "en", f"ANTHROPIC_API_KEY={k}", k)
    k = anthropic_key()
    cred(
        "anthropic",
        "header",
        "en",
        f'curl https://api.anthropic.com/v1/messages \\\n  -H "x-api-key: {k}" \\\n'
        '  -H "anthropic-version: 2023-06-01"',
        k,
    )
    k = anthropic_key()
    doc = {
        "mcpServers": {
            "notes": {"command": "npx", "args": ["-y", "notes-mcp"], "env": {"ANTHROPIC_API_KEY": k}}
        }
    }
    cred("anthropic", "json", "en", json.dumps(doc, indent=2), k)
    k = anthropic_key()
    cred("anthropic", "prose", "zh", f"Claude 的密钥：{k}", k)
    k = anthropic_key("admin01")
    cred("anthropic", "prose", "en", f"Admin key for usage reports is {k} - keep it out of the repo", k)

    def hf() -> str:
        return "hf_" + r(UPPER + LOWER, 34)

    t = hf()
    cred("huggingface", "cli", "en", f"huggingface-cli login --token {t}", t)
    t = hf()
    cred("huggingface", "env", "en", f"HF_TOKEN={t}", t)
    t = hf()
    cred("huggingface", "code", "en", f'from huggingface_hub import login\nlogin(token="{t}")', t)
    t = hf()
    cred("huggingface", "prose", "zh", f"HuggingFace 的 token 是 {t}，只读权限。", t)
    t = hf()
    cred("huggingface", "url", "en", f"git clone https://alice:{t}@huggingface.co/acme/private-model", t)

    k = r(ALNUM, 40)
    cred("cohere", "env", "en", f"CO_API_KEY={k}", k)
    k = r(ALNUM, 40)
    cred("cohere", "code", "en", f'import cohere\nco = cohere.ClientV2("{k}")', k)
    k = r(ALNUM, 40)
    cred("cohere", "prose", "en", f"Cohere trial key: {k}", k)

    k = "gsk_" + r(ALNUM, 52)
    cred("groq", "env", "en", f"GROQ_API_KEY={k}", k)
    k = "gsk_" + r(ALNUM, 52)
    cred("groq", "code", "en", f'client = Groq(api_key="{k}")', k)
    k = "gsk_" + r(ALNUM, 52)
    cred("groq", "prose", "zh", f"Groq 的 key：{k} 免费额度够用了", k)

    t = "r8_" + r(ALNUM, 37)
    cred("replicate", "env", "en", f"REPLICATE_API_TOKEN={t}", t)
    t = "r8_" + r(ALNUM, 37)
    cred(
        "replicate",
        "header",
        "en",
        f'curl -s -X POST -H "Authorization: Bearer {t}" https://api.replicate.com/v1/predictions',
        t,
    )
    t = "r8_" + r(ALNUM, 37)
    cred("replicate", "prose", "en", f"replicate token is {t}", t)

    k = "pplx-" + r(ALNUM, 48)
    cred("perplexity", "env", "en", f"PERPLEXITY_API_KEY={k}", k)
    k = "pplx-" + r(ALNUM, 48)
    cred("perplexity", "prose", "en", f"Use my Perplexity key for the eval run: {k}", k)

    k = "xai-" + r(ALNUM, 80)
    cred("xai", "env", "en", f"XAI_API_KEY={k}", k)
    k = "xai-" + r(ALNUM, 80)
    cred("xai", "prose", "zh", f"Grok 的 API key 是 {k}", k)

    k = r(ALNUM, 32)
    cred("mistral", "env", "en", f"MISTRAL_API_KEY={k}", k)
    k = r(ALNUM, 32)
    cred("mistral", "code", "en", f'client = Mistral(api_key="{k}")', k)

    k = "sk-" + hexs(32)
    cred("deepseek", "prose", "zh", f"DeepSeek 的 key：{k}，base_url 用 https://api.deepseek.com", k)
    k = "sk-" + hexs(32)
    cred("deepseek", "env", "en", f"DEEPSEEK_API_KEY={k}", k)
    k = "sk-" + hexs(32)
    cred("dashscope", "prose", "zh", f"通义千问 DashScope 的 API-KEY 是 {k}，在百炼控制台建的。", k)
    k = "sk-" + hexs(32)
    cred("dashscope", "env", "en", f"export DASHSCOPE_API_KEY={k}", k)
    k = hexs(32) + "." + r(ALNUM, 16)
    cred("zhipu", "env", "en", f"ZHIPUAI_API_KEY={k}", k)
    k = hexs(32) + "." + r(ALNUM, 16)
    cred("zhipu", "prose", "zh", f"智谱的 API Key：{k} 别发到群里", k)

    # --- payments ---------------------------------------------------------------------
    def stripe(prefix: str) -> str:
        return prefix + "51" + r(ALNUM, 97)

    k = stripe("sk_live_")
    cred("stripe-secret", "env", "en", f"STRIPE_SECRET_KEY={k}", k)
    k = stripe("sk_live_")
    cred("stripe-secret", "cli", "en", f"curl https://api.stripe.com/v1/customers -u {k}:", k)
    k = stripe("sk_live_")
    cred("stripe-secret", "code", "en", f'import stripe\nstripe.api_key = "{k}"', k)
    k = stripe("sk_live_")
    cred("stripe-secret", "prose", "zh", f"Stripe 正式环境的密钥：{k}", k)
    k = stripe("sk_test_")
    cred("stripe-secret", "prose", "en", f"for the sandbox use {k}", k)
    k = stripe("rk_live_")
    cred("stripe-restricted", "env", "en", f"STRIPE_RESTRICTED_KEY={k}", k)
    k = stripe("rk_live_")
    cred("stripe-restricted", "prose", "en", f"restricted key (read-only charges): {k}", k)

    def whsec() -> str:
        return "whsec_" + r(ALNUM, 32)

    w = whsec()
    cred(
        "stripe-webhook",
        "log",
        "en",
        "> Ready! You are using Stripe API Version [2024-04-10]. "
        f"Your webhook signing secret is {w} (^C to quit)",
        w,
    )
    w = whsec()
    cred("stripe-webhook", "env", "en", f"STRIPE_WEBHOOK_SECRET={w}", w)
    w = whsec()
    cred("stripe-webhook", "yaml", "en", f"stripe:\n  webhook_secret: {w}\n  api_version: 2024-04-10", w)
    w = whsec()
    cred("stripe-webhook", "prose", "zh", f"webhook 签名密钥是 {w}，本地用 stripe listen 拿到的。", w)

    t = "EAAA" + r(ALNUM + "_-", 60)
    cred("square", "env", "en", f"SQUARE_ACCESS_TOKEN={t}\nSQUARE_ENVIRONMENT=production", t)
    t = "EAAA" + r(ALNUM + "_-", 60)
    cred(
        "square",
        "header",
        "en",
        f"curl https://connect.squareup.com/v2/locations \\\n  -H 'Square-Version: 2024-04-17' \\\n"
        f"  -H 'Authorization: Bearer {t}'",
        t,
    )
    s = "sq0csp-" + r(ALNUM + "_-", 43)
    cred(
        "square",
        "json",
        "en",
        json.dumps({"application_id": "sq0idp-" + r(ALNUM + "_-", 22), "application_secret": s}, indent=2),
        s,
    )

    s = "E" + r(ALNUM + "_-", 79)
    cred(
        "paypal-braintree",
        "env",
        "en",
        f"PAYPAL_CLIENT_ID=A{r(ALNUM + '_-', 79)}\nPAYPAL_CLIENT_SECRET={s}",
        s,
    )
    t = "access_token$production$" + r(LOWER + DIGITS, 16) + "$" + hexs(32)
    cred("paypal-braintree", "code", "en", f'gateway = braintree.BraintreeGateway(access_token="{t}")', t)
    k = hexs(32)
    cred(
        "paypal-braintree",
        "code",
        "en",
        "gateway = braintree.BraintreeGateway(braintree.Configuration(\n"
        "    braintree.Environment.Production,\n"
        f'    merchant_id="{r(LOWER + DIGITS, 16)}",\n    public_key="{r(LOWER + DIGITS, 16)}",\n'
        f'    private_key="{k}",\n))',
        k,
    )
    s = "E" + r(ALNUM + "_-", 79)
    cred("paypal-braintree", "prose", "zh", f"PayPal 的 client secret：{s}", s)

    k = hexs(32)
    cred("wechat", "prose", "zh", f"公众号的 AppID 是 wx{hexs(16)}，AppSecret 是 {k}，别泄露。", k)
    k = r(ALNUM, 32)
    cred("wechat", "env", "zh", f"# 微信支付 APIv3 密钥\nWECHAT_PAY_API_V3_KEY={k}", k)

    # --- comms ------------------------------------------------------------------------
    def xoxb() -> str:
        return f"xoxb-{digits(12)}-{digits(13)}-{r(ALNUM, 24)}"

    t = xoxb()
    cred("slack-bot", "env", "en", f"SLACK_BOT_TOKEN={t}\nSLACK_SIGNING_SECRET={hexs(32)}", t)
    t = xoxb()
    cred(
        "slack-bot",
        "header",
        "en",
        f"curl -X POST -H 'Authorization: Bearer {t}' -H 'Content-type: application/json' "
        '--data \'{"channel":"C024BE91L","text":"deploy done"}\' https://slack.com/api/chat.postMessage',
        t,
    )
    t = xoxb()
    cred("slack-bot", "code", "en", f'app = App(token="{t}")', t)
    t = xoxb()
    cred("slack-bot", "prose", "zh", f"Slack 机器人的 token：{t}", t)
    s = hexs(32)
    cred("slack-bot", "env", "en", f"SLACK_SIGNING_SECRET={s}", s)

    t = f"xoxp-{digits(12)}-{digits(12)}-{digits(13)}-{hexs(32)}"
    cred("slack-user", "prose", "en", f"here's my user token so the script can read DMs: {t}", t)
    t = f"xoxp-{digits(11)}-{digits(12)}-{digits(13)}-{hexs(32)}"
    cred("slack-user", "env", "en", f"SLACK_USER_TOKEN={t}", t)

    def xapp() -> str:
        return f"xapp-1-A{r(UPPER + DIGITS, 10)}-{digits(13)}-{hexs(64)}"

    t = xapp()
    cred("slack-app", "env", "en", f"SLACK_APP_TOKEN={t}", t)
    t = xapp()
    cred("slack-app", "prose", "en", f"Socket mode needs the app-level token: {t}", t)
    t = xapp()
    cred("slack-app", "yaml", "en", f"slack:\n  app_token: {t}\n  socket_mode: true", t)

    def slack_hook() -> tuple[str, str]:
        s = r(ALNUM, 24)
        return f"https://hooks.slack.com/services/T{r(UPPER + DIGITS, 8)}/B{r(UPPER + DIGITS, 10)}/{s}", s

    u, s = slack_hook()
    cred("slack-webhook", "url", "en", f"Alerts go to {u} (channel #ops-alerts)", s)
    u, s = slack_hook()
    cred(
        "slack-webhook",
        "cli",
        "en",
        f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"Hello\"}}' {u}",
        s,
    )
    u, s = slack_hook()
    cred(
        "slack-webhook",
        "json",
        "en",
        json.dumps({"alerting": {"slack_webhook_url": u, "min_level": "warn"}}, indent=2),
        s,
    )
    u, s = slack_hook()
    cred("slack-webhook", "prose", "zh", f"告警发到这个 webhook：{u}", s)

    def discord_bot() -> str:
        ident = base64.b64encode(digits(19).encode()).decode().rstrip("=")
        return f"{ident}.{r(ALNUM + '_-', 6)}.{r(ALNUM + '_-', 38)}"

    t = discord_bot()
    cred("discord-bot", "env", "en", f"DISCORD_TOKEN={t}", t)
    t = discord_bot()
    cred("discord-bot", "code", "en", f'client.run("{t}")', t)
    t = discord_bot()
    cred("discord-bot", "prose", "zh", f"Discord 机器人令牌是 {t}", t)

    def discord_hook() -> tuple[str, str]:
        s = r(ALNUM + "_-", 68)
        return f"https://discord.com/api/webhooks/{digits(19)}/{s}", s

    u, s = discord_hook()
    cred("discord-webhook", "url", "en", f"post build results to {u}", s)
    u, s = discord_hook()
    cred(
        "discord-webhook",
        "cli",
        "en",
        f'curl -H "Content-Type: application/json" -d \'{{"content": "nightly build green"}}\' "{u}"',
        s,
    )
    u, s = discord_hook()
    cred("discord-webhook", "yaml", "en", f"notify:\n  discord:\n    url: {u}", s)

    def telegram() -> str:
        return f"{digits(10)}:AA{r(ALNUM + '_-', 33)}"

    t = telegram()
    cred("telegram", "env", "en", f"TELEGRAM_BOT_TOKEN={t}\nTELEGRAM_CHAT_ID=-1001234567890", t)
    t = telegram()
    cred("telegram", "url", "en", f"https://api.telegram.org/bot{t}/getUpdates", t)
    t = telegram()
    cred("telegram", "prose", "zh", f"机器人 token：{t}，找 BotFather 要的。", t)
    t = telegram()
    cred("telegram", "code", "en", f'bot = telebot.TeleBot("{t}")', t)

    sid = "AC" + hexs(32)
    t = hexs(32)
    cred("twilio", "env", "en", f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={t}", t)
    sid, t = "AC" + hexs(32), hexs(32)
    cred(
        "twilio",
        "cli",
        "en",
        f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json "
        f"--data-urlencode 'To=+15558675310' -u {sid}:{t}",
        t,
    )
    sid, t = "AC" + hexs(32), hexs(32)
    cred("twilio", "code", "en", f'client = Client("{sid}", "{t}")', t)
    k, s = "SK" + hexs(32), r(ALNUM, 32)
    cred("twilio", "env", "en", f"TWILIO_API_KEY={k}\nTWILIO_API_SECRET={s}", [k, s])
    sid, t = "AC" + hexs(32), hexs(32)
    cred("twilio", "prose", "zh", f"Twilio 账号 {sid}，Auth Token 是 {t}", t)

    def sendgrid() -> str:
        return f"SG.{r(ALNUM + '_-', 22)}.{r(ALNUM + '_-', 43)}"

    k = sendgrid()
    cred("sendgrid", "env", "en", f"SENDGRID_API_KEY={k}", k)
    k = sendgrid()
    cred(
        "sendgrid",
        "header",
        "en",
        "curl --request POST --url https://api.sendgrid.com/v3/mail/send "
        f'--header "Authorization: Bearer {k}"',
        k,
    )
    k = sendgrid()
    cred("sendgrid", "code", "en", f"sg = SendGridAPIClient('{k}')", k)
    k = sendgrid()
    cred("sendgrid", "prose", "zh", f"发邮件用的 SendGrid key：{k}", k)

    k = "key-" + hexs(32)
    cred(
        "mailgun",
        "cli",
        "en",
        f"curl -s --user 'api:{k}' https://api.mailgun.net/v3/mg.acme.io/messages "
        "-F to=ops@acme.io -F text=hi",
        k,
    )
    k = "key-" + hexs(32)
    cred("mailgun", "env", "en", f"MAILGUN_API_KEY={k}\nMAILGUN_DOMAIN=mg.acme.io", k)
    k = f"{hexs(32)}-{hexs(8)}-{hexs(8)}"
    cred("mailgun", "prose", "en", f"mailgun sending key: {k}", k)

    k = f"{hexs(32)}-us21"
    cred("mailchimp", "env", "en", f"MAILCHIMP_API_KEY={k}", k)
    k = f"{hexs(32)}-us14"
    cred("mailchimp", "code", "en", f'client.set_config({{"api_key": "{k}", "server": "us14"}})', k)
    k = f"{hexs(32)}-us6"
    cred("mailchimp", "prose", "zh", f"Mailchimp 的 API 密钥：{k}", k)

    def teams_hook() -> tuple[str, str]:
        s = hexs(32)
        return (
            f"https://acme.webhook.office.com/webhookb2/{uuid4()}@{uuid4()}/IncomingWebhook/{s}/{uuid4()}",
            s,
        )

    u, s = teams_hook()
    cred("teams-webhook", "url", "en", f"Teams connector for #releases: {u}", s)
    u, s = teams_hook()
    cred("teams-webhook", "json", "en", json.dumps({"notifications": {"teams": {"webhook": u}}}, indent=2), s)

    def app_password() -> str:
        return " ".join(r(LOWER, 4) for _ in range(4))

    p = app_password()
    cred("smtp-app-password", "prose", "en", f"Gmail app password for the SMTP relay: {p}", p)
    p = r(LOWER, 16)
    cred(
        "smtp-app-password",
        "env",
        "en",
        f"SMTP_HOST=smtp.gmail.com\nSMTP_USER=reports@acme.io\nSMTP_PASSWORD={p}",
        p,
    )
    p = r(LOWER, 16)
    cred("smtp-app-password", "prose", "zh", f"QQ邮箱的授权码是 {p}，SMTP 端口 465。", p)

    # --- package registries -----------------------------------------------------------
    t = "npm_" + r(ALNUM, 36)
    cred("npm", "env", "en", f"//registry.npmjs.org/:_authToken={t}", t)
    t = "npm_" + r(ALNUM, 36)
    cred("npm", "env", "en", f"NPM_TOKEN={t}", t)
    t = "npm_" + r(ALNUM, 36)
    cred("npm", "cli", "en", f"npm config set //registry.npmjs.org/:_authToken {t}", t)
    t = "npm_" + r(ALNUM, 36)
    cred(
        "npm",
        "yaml",
        "en",
        f'npmScopes:\n  acme:\n    npmAuthToken: "{t}"\n    npmRegistryServer: "https://registry.npmjs.org"',
        t,
    )
    t = "npm_" + r(ALNUM, 36)
    cred("npm", "prose", "zh", f"发包用的 npm token：{t}", t)

    def pypi() -> str:
        return "pypi-AgEIcHlwaS5vcmc" + r(ALNUM + "_-", 160)

    t = pypi()
    cred("pypi", "env", "en", f"[pypi]\n  username = __token__\n  password = {t}", t)
    t = pypi()
    cred("pypi", "cli", "en", f"twine upload -u __token__ -p {t} dist/*", t)
    t = pypi()
    cred("pypi", "env", "en", f"TWINE_USERNAME=__token__\nTWINE_PASSWORD={t}", t)
    t = pypi()
    cred("pypi", "prose", "zh", f"PyPI 的上传 token 在这：{t}", t)

    def nuget() -> str:
        a = LOWER[:16]
        return (
            "oy2"
            + rng.choice(a)
            + r(LOWER + DIGITS, 15)
            + rng.choice("aq")
            + r(LOWER + DIGITS, 11)
            + rng.choice("eu")
            + rng.choice("bdfhjlnprtvxz357")
            + rng.choice(a)
            + r(LOWER + DIGITS, 11)
            + rng.choice("aeimquy4")
        )

    k = nuget()
    cred(
        "nuget",
        "cli",
        "en",
        f"dotnet nuget push bin/Release/Acme.Core.2.1.0.nupkg --api-key {k} --source https://api.nuget.org/v3/index.json",
        k,
    )
    k = nuget()
    cred("nuget", "env", "en", f"NUGET_API_KEY={k}", k)
    k = nuget()
    cred("nuget", "prose", "zh", f"NuGet 发布密钥：{k}", k)

    k = "rubygems_" + hexs(48)
    cred("rubygems", "yaml", "en", f"---\n:rubygems_api_key: {k}", k)
    k = "rubygems_" + hexs(48)
    cred("rubygems", "env", "en", f"GEM_HOST_API_KEY={k}", k)

    def dckr() -> str:
        return "dckr_pat_" + r(ALNUM + "_-", 27)

    t = dckr()
    cred("dockerhub", "cli", "en", f"docker login -u acmebot -p {t}", t)
    t = dckr()
    cred("dockerhub", "env", "en", f"DOCKERHUB_USERNAME=acmebot\nDOCKERHUB_TOKEN={t}", t)
    t = dckr()
    cred(
        "dockerhub",
        "yaml",
        "en",
        "      - uses: docker/login-action@v3\n        with:\n"
        f"          username: acmebot\n          password: {t}",
        t,
    )
    t = dckr()
    cred("dockerhub", "prose", "zh", f"Docker Hub 的访问令牌是 {t}", t)

    auth = base64.b64encode(f"acmebot:{human_password()}".encode()).decode()
    cred(
        "docker-config-auth",
        "json",
        "en",
        json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth}}}, indent=2),
        auth,
    )
    auth = base64.b64encode(f"deploy:{strong_password()}".encode()).decode()
    cred(
        "docker-config-auth",
        "json",
        "en",
        json.dumps({"auths": {"registry.gitlab.com": {"auth": auth}}, "credsStore": ""}),
        auth,
    )

    # --- databases ----------------------------------------------------------------------
    p = url_password(human_password())
    cred("postgres-url", "env", "en", f"DATABASE_URL=postgres://app:{p}@db.internal:5432/app", p)
    p = url_password(strong_password())
    cred(
        "postgres-url",
        "prose",
        "en",
        f"connect with postgresql://reporting:{p}@10.0.3.12:5432/analytics?sslmode=require",
        p,
    )
    p = url_password(human_password())
    cred(
        "postgres-url",
        "json",
        "en",
        json.dumps({"db": {"url": f"postgres://svc_orders:{p}@pg-1.acme.io/orders", "pool": 10}}),
        p,
    )
    p = url_password(human_password())
    cred(
        "postgres-url", "prose", "zh", f"生产库连接串：postgresql://admin:{p}@pg-prod.internal:5432/orders", p
    )
    p = strong_password(14, ALNUM)
    cred(
        "postgres-url", "cli", "en", f'psql "postgresql://postgres:{p}@localhost:5433/postgres" -c "\\dt"', p
    )

    p = url_password(human_password())
    cred("mysql-url", "env", "en", f"MYSQL_URL=mysql://root:{p}@127.0.0.1:3306/shop", p)
    p = url_password(human_password())
    cred(
        "mysql-url", "url", "en", f"jdbc:mysql://db.acme.io:3306/shop?user=shop&password={p}&useSSL=false", p
    )
    p = strong_password(12, ALNUM)
    cred("mysql-url", "code", "en", f'engine = create_engine("mysql+pymysql://etl:{p}@warehouse:3306/dw")', p)
    p = url_password(human_password())
    cred("mysql-url", "prose", "zh", f"测试库：mysql://test:{p}@192.168.1.20:3306/test_db", p)

    p = strong_password(16, ALNUM)
    cred(
        "mongodb-url",
        "env",
        "en",
        f"MONGO_URI=mongodb+srv://admin:{p}@cluster0.x7k2p.mongodb.net/?retryWrites=true&w=majority",
        p,
    )
    p = url_password(human_password())
    cred(
        "mongodb-url",
        "code",
        "en",
        f'client = MongoClient("mongodb://analytics:{p}@mongo-0.internal:27017/?authSource=admin")',
        p,
    )
    p = url_password(human_password())
    cred(
        "mongodb-url", "prose", "zh", f"Mongo 的连接地址 mongodb+srv://app:{p}@prod.ab12c.mongodb.net/shop", p
    )

    cred("redis-url", "env", "en", "REDIS_URL=redis://:S3cretRedisPass@host:6379/0", "S3cretRedisPass")
    p = r(ALNUM, 32)
    cred("redis-url", "url", "en", f"rediss://default:{p}@eu1-fond-gull-33112.upstash.io:6379", p)
    p = url_password(human_password())
    cred("redis-url", "prose", "zh", f"缓存用 redis://:{p}@10.0.0.8:6379/1 就行", p)
    p = url_password(human_password())
    cred("redis-url", "code", "en", f'r = redis.Redis.from_url("redis://:{p}@cache.internal:6379/0")', p)

    p = url_password(human_password())
    cred("amqp-url", "env", "en", f"CELERY_BROKER_URL=amqp://orders:{p}@rabbitmq.internal:5672/%2F", p)
    p = strong_password(14, ALNUM)
    cred(
        "amqp-url",
        "code",
        "en",
        f"broker_url = 'amqps://worker:{p}@b-1234.mq.eu-west-1.amazonaws.com:5671'",
        p,
    )
    p = url_password(human_password())
    cred("ftp-url", "url", "en", f"nightly dumps land in ftp://backup:{p}@ftp.acme.io/dumps/", p)
    p = url_password(human_password())
    cred("ftp-url", "prose", "zh", f"SFTP 地址 sftp://deploy:{p}@files.acme.cn:22/upload", p)

    p1, p2 = human_password(), special_password()
    cred(
        "env-db-password",
        "env",
        "en",
        f"APP_ENV=production\nDB_HOST=10.0.3.12\nDB_USER=shop\nDB_PASS={p1}\nADMIN_PASS={p2}\nLOG_LEVEL=info",
        [p1, p2],
    )
    p = human_password()
    cred("env-db-password", "env", "en", f"DB_PASSWORD={p}", p)
    p = strong_password()
    cred("env-db-password", "env", "en", f"MYSQL_ROOT_PASSWORD={p}\nMYSQL_DATABASE=wordpress", p)
    p = human_password()
    cred("env-db-password", "env", "en", f"export PGPASSWORD='{p}'", p)
    p = strong_password(20, ALNUM)
    cred("env-db-password", "env", "en", f"REDIS_PASSWORD={p}", p)
    p = human_password()
    cred("env-db-password", "env", "en", f'ADMIN_PASS="{p}"', p)
    p = human_password()
    cred("env-db-password", "env", "en", f"spring.datasource.username=app\nspring.datasource.password={p}", p)
    p = human_password()
    cred("env-db-password", "env", "zh", f"# 数据库密码\nDB_PASS={p}", p)
    p = strong_password(12, ALNUM)
    cred(
        "env-db-password",
        "env",
        "en",
        f"POSTGRES_USER=keycloak\nPOSTGRES_PASSWORD={p}\nPOSTGRES_DB=keycloak",
        p,
    )

    p = human_password()
    cred("pgpass", "env", "en", f"# ~/.pgpass\ndb.internal:5432:app:app:{p}", p)
    t = "HRKU-AA" + r(ALNUM + "_-", 58)
    cred("netrc", "env", "en", f"machine api.heroku.com\n  login alice@acme.io\n  password {t}", t)
    p = human_password()
    cred("netrc", "env", "en", f"machine ftp.acme.io login backup password {p}", p)

    # --- JWTs -------------------------------------------------------------------------------
    def jwt(payload: dict[str, object], alg: str = "HS256") -> str:
        head = b64_bytes(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode(), "url")
        body = b64_bytes(json.dumps(payload, separators=(",", ":")).encode(), "url")
        sig = r(ALNUM + "-_", 43 if alg == "HS256" else 342)
        return f"{head}.{body}.{sig}"

    t = jwt({"sub": "1294", "name": "Alice Chen", "role": "admin", "iat": 1714723200, "exp": 1714809600})
    cred(
        "jwt",
        "header",
        "en",
        f"GET /api/v2/invoices HTTP/1.1\nHost: billing.acme.io\nAuthorization: Bearer {t}",
        t,
    )
    t = jwt({"sub": "u_8812", "scope": "read write", "iat": 1714723200}, "RS256")
    cred("jwt", "json", "en", json.dumps({"access_token": t, "token_type": "Bearer", "expires_in": 3600}), t)
    t = jwt({"user_id": 42, "session": "web", "exp": 1717000000})
    cred("jwt", "header", "en", f"Cookie: theme=dark; session={t}; _ga=GA1.2.1234.5678", t)
    t = jwt({"sub": "1001", "tenant": "acme-cn", "exp": 1717000000})
    cred("jwt", "prose", "zh", f"登录后拿到的 token：{t}，过期时间一天。", t)
    t = jwt({"sub": "svc-report", "iat": 1714723200})
    cred("jwt", "code", "en", f"localStorage.setItem('auth', '{t}');", t)
    t = jwt(
        {"iss": "supabase", "ref": r(LOWER, 20), "role": "service_role", "iat": 1700000000, "exp": 2015576000}
    )
    cred(
        "supabase",
        "env",
        "en",
        f"SUPABASE_URL=https://{r(LOWER, 20)}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={t}",
        t,
    )
    t = "sbp_" + hexs(40)
    cred("supabase", "env", "en", f"SUPABASE_ACCESS_TOKEN={t}", t)

    # --- private keys -----------------------------------------------------------------
    def block(kind: str, body: str, width: int = 64) -> tuple[str, str]:
        lines = pem_lines(body, width)
        key = "\n".join(lines)
        return f"-----BEGIN {kind}-----\n{key}\n-----END {kind}-----", key

    pem, key = block("RSA PRIVATE KEY", clean_b64(bytes.fromhex("308204a40201000282010100"), 1180))
    cred("pem-rsa", "prose", "en", f"here's the deploy key, add it to the runner:\n\n{pem}\n", key)
    pem, key = block("RSA PRIVATE KEY", clean_b64(bytes.fromhex("308204a40201000282010100"), 1180))
    partial = "\n".join(key.split("\n")[:9])
    cred(
        "pem-rsa",
        "prose",
        "en",
        f"the file starts like this, is it the right one?\n-----BEGIN RSA PRIVATE KEY-----\n{partial}\n...",
        partial,
    )
    ec = (
        bytes.fromhex("30770201010420") + rand_bytes(32) + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
    )
    pem, key = block("EC PRIVATE KEY", clean_b64(ec, 65))
    cred("pem-ec", "code", "en", pem, key)
    ec = (
        bytes.fromhex("30770201010420") + rand_bytes(32) + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
    )
    pem, key = block("EC PRIVATE KEY", clean_b64(ec, 65))
    cred("pem-ec", "prose", "zh", f"苹果推送用的 p8 私钥内容如下：\n{pem}", key)
    pem, key = block("OPENSSH PRIVATE KEY", clean_b64(b"openssh-key-v1\x00\x00\x00\x00\x04none", 380), 70)
    cred("pem-openssh", "code", "en", f"$ cat ~/.ssh/id_ed25519\n{pem}", key)
    pem, key = block("OPENSSH PRIVATE KEY", clean_b64(b"openssh-key-v1\x00\x00\x00\x00\x04none", 380), 70)
    cred("pem-openssh", "prose", "zh", f"这是跳板机的私钥，存成 id_ed25519 再 chmod 600：\n{pem}", key)
    pem, key = block(
        "PRIVATE KEY", clean_b64(bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8"), 1192)
    )
    cred("pem-pkcs8", "code", "en", f"# tls/server.key\n{pem}", key)
    pem, key = block("ENCRYPTED PRIVATE KEY", clean_b64(bytes.fromhex("308205363060"), 1300))
    cred("pem-pkcs8", "prose", "en", f"encrypted key, passphrase in the other message:\n{pem}", key)
    body = "\n".join(pem_lines(clean_b64(b"\x95\x07\x46\x04", 900)))
    checksum = "=" + r(ALNUM, 4)
    pgp = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n{checksum}\n-----END PGP PRIVATE KEY BLOCK-----"
    cred("pgp-private", "code", "en", f"$ gpg --export-secret-keys --armor alice@acme.io\n{pgp}", body)
    body = "\n".join(pem_lines(clean_b64(b"\x95\x07\x46\x04", 900)))
    pgp = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"
    cred("pgp-private", "prose", "zh", f"签名用的 GPG 私钥导出来了：\n{pgp}", body)

    # --- HTTP authorization ---------------------------------------------------------------
    def basic(user: str) -> str:
        return base64.b64encode(f"{user}:{human_password()}".encode()).decode()

    b = basic("admin")
    cred(
        "http-basic",
        "header",
        "en",
        f"GET /api/v1/status HTTP/1.1\nHost: jenkins.acme.io\nAuthorization: Basic {b}\nAccept: */*",
        b,
    )
    b = basic("deploy")
    cred(
        "http-basic",
        "header",
        "en",
        f'curl -H "Authorization: Basic {b}" https://nexus.acme.io/service/rest/v1/status',
        b,
    )
    b = basic("svc-metrics")
    cred(
        "http-basic",
        "log",
        "en",
        "DEBUG urllib3 request headers={'User-Agent': 'python-requests/2.31.0', "
        f"'Authorization': 'Basic {b}'}}",
        b,
    )
    b = basic("ops")
    cred("http-basic", "prose", "zh", f"请求头里加 Authorization: Basic {b} 就能访问监控接口", b)
    b = basic("grafana")
    cred("http-basic", "yaml", "en", f"headers:\n  Authorization: Basic {b}", b)

    t = r(ALNUM, 40)
    cred("http-bearer", "header", "en", f"Authorization: Bearer {t}", t)
    t = r(ALNUM + "-_.", 48)
    cred(
        "http-bearer",
        "log",
        "en",
        '10.0.4.17 - - [03/May/2024:10:22:01 +0000] "GET /v1/me HTTP/1.1" 200 512 "-" '
        f'"curl/8.5.0" auth="Bearer {t}"',
        t,
    )
    a, rt = r(ALNUM, 48), r(ALNUM, 64)
    cred(
        "http-bearer",
        "json",
        "en",
        json.dumps(
            {"access_token": a, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt}, indent=2
        ),
        [a, rt],
    )
    t = r(ALNUM, 32)
    cred("http-bearer", "url", "en", f"https://api.acme.io/v1/export?format=csv&access_token={t}", t)
    t = r(ALNUM, 40)
    cred("http-bearer", "prose", "zh", f"接口要带上请求头 Authorization: Bearer {t}", t)

    k = hexs(32)
    cred("api-key-header", "header", "en", f"X-API-Key: {k}\nContent-Type: application/json", k)
    k = r(ALNUM, 40)
    cred(
        "api-key-header",
        "header",
        "en",
        f"curl -H 'api-key: {k}' https://search.acme.io/indexes/docs/search",
        k,
    )
    k = hexs(32)
    cred("api-key-header", "code", "en", f'headers = {{"X-Api-Key": "{k}", "Accept": "application/json"}}', k)

    # --- SaaS tokens ------------------------------------------------------------------
    t = "shpat_" + hexs(32)
    cred("shopify", "env", "en", f"SHOPIFY_ACCESS_TOKEN={t}\nSHOPIFY_STORE=acme-goods.myshopify.com", t)
    t = "shpat_" + hexs(32)
    cred("shopify", "header", "en", f"X-Shopify-Access-Token: {t}", t)
    t = "shpss_" + hexs(32)
    cred("shopify", "prose", "zh", f"Shopify 应用的共享密钥（shared secret）：{t}", t)

    def atatt() -> str:
        return "ATATT3xFfGF0" + r(ALNUM + "_-", 171) + "=" + r(UPPER + DIGITS, 8)

    t = atatt()
    cred("atlassian", "env", "en", f"JIRA_EMAIL=alice@acme.io\nJIRA_API_TOKEN={t}", t)
    t = atatt()
    cred(
        "atlassian",
        "cli",
        "en",
        f"curl -u alice@acme.io:{t} -H 'Accept: application/json' https://acme.atlassian.net/rest/api/3/myself",
        t,
    )
    t = atatt()
    cred("atlassian", "prose", "en", f"Confluence token for the sync bot: {t}", t)

    t = "lin_api_" + r(ALNUM, 40)
    cred("linear", "env", "en", f"LINEAR_API_KEY={t}", t)
    t = "lin_api_" + r(ALNUM, 40)
    cred(
        "linear",
        "header",
        "en",
        f"curl -X POST https://api.linear.app/graphql -H 'Authorization: {t}' "
        '-d \'{"query":"{ viewer { id } }"}\'',
        t,
    )

    t = "ntn_" + digits(11) + r(ALNUM, 35)
    cred("notion", "env", "en", f"NOTION_TOKEN={t}", t)
    t = "secret_" + r(ALNUM, 43)
    cred("notion", "code", "en", f'notion = Client(auth="{t}")', t)
    t = "ntn_" + digits(11) + r(ALNUM, 35)
    cred("notion", "prose", "zh", f"Notion 集成的密钥：{t}", t)

    t = r(ALNUM, 24)
    cred("vercel", "env", "en", f"VERCEL_TOKEN={t}\nVERCEL_ORG_ID=team_{r(ALNUM, 24)}", t)
    t = r(ALNUM, 24)
    cred("vercel", "cli", "en", f"vercel deploy --prod --token {t}", t)

    t = "nfp_" + r(ALNUM, 36)
    cred("netlify", "env", "en", f"NETLIFY_AUTH_TOKEN={t}", t)
    t = "nfp_" + r(ALNUM, 36)
    cred("netlify", "cli", "en", f"netlify deploy --prod --auth {t} --site {uuid4()}", t)

    s = hexs(32)
    cred(
        "sentry-dsn",
        "env",
        "en",
        f"SENTRY_DSN=https://{hexs(32)}:{s}@o{digits(6)}.ingest.sentry.io/{digits(7)}",
        s,
    )
    s = hexs(32)
    cred(
        "sentry-dsn",
        "code",
        "en",
        f'sentry_sdk.init(dsn="https://{hexs(32)}:{s}@sentry.acme.io/12", traces_sample_rate=0.2)',
        s,
    )
    t = "sntryu_" + hexs(64)
    cred("sentry-token", "env", "en", f"SENTRY_AUTH_TOKEN={t}", t)
    t = "sntryu_" + hexs(64)
    cred("sentry-token", "env", "en", f"[auth]\ntoken={t}\n\n[defaults]\norg=acme", t)

    a, b2 = hexs(32), hexs(40)
    cred("datadog", "env", "en", f"DD_API_KEY={a}\nDD_APP_KEY={b2}\nDD_SITE=datadoghq.eu", [a, b2])
    a = hexs(32)
    cred(
        "datadog",
        "header",
        "en",
        f'curl -X GET "https://api.datadoghq.com/api/v1/validate" -H "DD-API-KEY: {a}"',
        a,
    )
    a = hexs(32)
    cred("datadog", "yaml", "en", f"api_key: {a}\nsite: datadoghq.com\nlogs_enabled: true", a)

    t = "NRAK-" + r(UPPER + DIGITS, 27)
    cred("newrelic", "env", "en", f"NEW_RELIC_API_KEY={t}", t)
    k = hexs(36) + "NRAL"
    cred(
        "newrelic", "yaml", "en", f"common: &default_settings\n  license_key: '{k}'\n  app_name: acme-web", k
    )

    t = "00" + r(ALNUM + "_-", 40)
    cred("okta", "env", "en", f"OKTA_ORG_URL=https://acme.okta.com\nOKTA_API_TOKEN={t}", t)
    t = "00" + r(ALNUM + "_-", 40)
    cred("okta", "header", "en", f"Authorization: SSWS {t}", t)

    t = f"PMAK-{hexs(24)}-{hexs(34)}"
    cred("postman", "env", "en", f"POSTMAN_API_KEY={t}", t)
    t = f"PMAK-{hexs(24)}-{hexs(34)}"
    cred("postman", "header", "en", f"curl https://api.getpostman.com/collections -H 'X-Api-Key: {t}'", t)

    t = "dp.st.prd." + r(ALNUM, 40)
    cred("doppler", "env", "en", f"DOPPLER_TOKEN={t}", t)
    t = "dp.pt." + r(ALNUM, 43)
    cred("doppler", "cli", "en", f"doppler run --token {t} -- npm start", t)

    op_doc = {
        "signInAddress": "acme.1password.com",
        "userAuth": {
            "method": "SRPg-4096",
            "alg": "PBES2g-HS256",
            "iterations": 650000,
            "salt": r(ALNUM, 22),
        },
        "email": f"{r(LOWER, 12)}@1passwordserviceaccounts.com",
        "srpX": hexs(64),
        "muk": {
            "alg": "A256GCM",
            "ext": True,
            "k": r(ALNUM + "-_", 43),
            "key_ops": ["encrypt", "decrypt"],
            "kty": "oct",
            "kid": "mp",
        },
        "secretKey": "A3-" + r(UPPER + DIGITS, 6),
        "deviceUuid": r(LOWER, 26),
    }
    t = "ops_" + b64_bytes(json.dumps(op_doc, separators=(",", ":")).encode()).rstrip("=")
    cred("1password", "env", "en", f"OP_SERVICE_ACCOUNT_TOKEN={t}", t)
    k = "A3-" + "-".join(r(UPPER + DIGITS, n) for n in (6, 6, 5, 5, 5, 5))
    cred("1password", "prose", "en", f"my 1Password Secret Key is {k} (emergency kit, keep offline)", k)

    k = "AAAA" + r(ALNUM + "_-", 7) + ":APA91b" + r(ALNUM + "_-", 134)
    cred(
        "firebase",
        "code",
        "en",
        f"headers = {{'Authorization': 'key={k}', 'Content-Type': 'application/json'}}\n"
        "requests.post('https://fcm.googleapis.com/fcm/send', headers=headers, json=msg)",
        k,
    )
    t = "1//0" + r(ALNUM + "_-", 99)
    cred("firebase", "env", "en", f"FIREBASE_TOKEN={t}", t)

    def mapbox_secret() -> str:
        payload = b64_bytes(
            json.dumps({"u": r(LOWER, 8), "a": r(LOWER + DIGITS, 25)}, separators=(",", ":")).encode(), "url"
        )
        return f"sk.{payload}.{r(ALNUM + '_-', 22)}"

    t = mapbox_secret()
    cred("mapbox", "env", "en", f"machine api.mapbox.com\n  login mapbox\n  password {t}", t)
    t = mapbox_secret()
    cred("mapbox", "env", "en", f"MAPBOX_DOWNLOADS_TOKEN={t}", t)

    bech32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
    k = "AGE-SECRET-KEY-1" + r(bech32, 58)
    cred(
        "age",
        "code",
        "en",
        f"# created: 2024-05-03T10:22:01+02:00\n# public key: age1{r(bech32.lower(), 58)}\n{k}",
        k,
    )
    k = "AGE-SECRET-KEY-1" + r(bech32, 58)
    cred("age", "env", "en", f"SOPS_AGE_KEY={k}", k)

    t = "hvs.CAESI" + r(ALNUM + "_-", 86)
    cred("vault", "env", "en", f"VAULT_ADDR=https://vault.acme.io:8200\nVAULT_TOKEN={t}", t)
    t = "hvs." + r(ALNUM, 24)
    cred("vault", "cli", "en", f"vault login {t}", t)

    t = "dapi" + hexs(32)
    cred(
        "databricks",
        "env",
        "en",
        f"[DEFAULT]\nhost  = https://adb-{digits(16)}.7.azuredatabricks.net\ntoken = {t}",
        t,
    )
    t = "dapi" + hexs(32)
    cred("databricks", "env", "en", f"DATABRICKS_TOKEN={t}", t)

    t = r(ALNUM, 14) + ".atlasv1." + r(ALNUM, 67)
    cred(
        "terraform",
        "json",
        "en",
        json.dumps({"credentials": {"app.terraform.io": {"token": t}}}, indent=2),
        t,
    )
    t = "pul-" + hexs(40)
    cred("pulumi", "env", "en", f"PULUMI_ACCESS_TOKEN={t}", t)
    t = "glsa_" + r(ALNUM, 32) + "_" + hexs(8)
    cred(
        "grafana",
        "header",
        "en",
        f"curl -H 'Authorization: Bearer {t}' https://grafana.acme.io/api/dashboards/uid/k8s-nodes",
        t,
    )

    s = "GOCSPX-" + r(ALNUM + "_-", 28)
    doc = {
        "installed": {
            "client_id": f"{digits(12)}-{r(LOWER + DIGITS, 32)}.apps.googleusercontent.com",
            "project_id": "acme-cli",
            "client_secret": s,
            "redirect_uris": ["http://localhost"],
        }
    }
    cred("google-oauth", "json", "en", json.dumps(doc, indent=2), s)
    t = "1//0" + r(ALNUM + "_-", 99)
    cred(
        "google-oauth",
        "json",
        "en",
        json.dumps({"refresh_token": t, "scope": "https://www.googleapis.com/auth/drive"}),
        t,
    )

    p = "pscale_pw_" + r(ALNUM + "_", 43)
    cred(
        "planetscale",
        "url",
        "en",
        f"DATABASE_URL=mysql://{r(LOWER + DIGITS, 12)}:{p}@aws.connect.psdb.cloud/shop?sslaccept=strict",
        p,
    )
    t = "A" * 22 + r(ALNUM, 20) + "%3D" + r(ALNUM, 50)
    cred("twitter", "env", "en", f"TWITTER_BEARER_TOKEN={t}", t)

    # --- Kubernetes -------------------------------------------------------------------
    p = human_password()
    enc = base64.b64encode(p.encode()).decode()
    cred(
        "k8s-secret-data",
        "yaml",
        "en",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\n"
        "data:\n  username: YXBw\n"
        f"  password: {enc}",
        enc,
    )
    p = strong_password()
    cred(
        "k8s-secret-data",
        "yaml",
        "en",
        f'apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\nstringData:\n  SMTP_PASSWORD: "{p}"',
        p,
    )
    p = human_password()
    cred(
        "k8s-secret-data",
        "cli",
        "en",
        "kubectl create secret generic db-credentials --from-literal=username=app "
        f"--from-literal=password={p}",
        p,
    )

    # --- keyword-led values in config ------------------------------------------------------
    p = human_password()
    cred(
        "json-password",
        "json",
        "en",
        json.dumps({"smtp": {"host": "smtp.acme.io", "port": 587, "user": "noreply", "pass": p}}, indent=2),
        p,
    )
    p = strong_password()
    cred(
        "json-password",
        "json",
        "en",
        json.dumps({"database": {"primary": {"host": "10.0.3.12", "user": "app", "password": p}}}, indent=2),
        p,
    )
    p = human_password()
    cred(
        "json-password",
        "log",
        "en",
        "2024-05-03T10:22:01Z INFO config loaded: "
        + json.dumps({"db": {"user": "etl", "passwd": p}, "workers": 4}),
        p,
    )
    p = human_password()
    cred(
        "json-password",
        "json",
        "en",
        json.dumps({"users": [{"name": "alice", "pwd": p, "role": "admin"}]}),
        p,
    )
    p = human_password()
    cred(
        "json-password",
        "json",
        "zh",
        "配置文件是这样的：\n"
        + json.dumps({"mysql": {"host": "127.0.0.1", "user": "root", "password": p}}, ensure_ascii=False),
        p,
    )
    p = human_password()
    cred(
        "json-password", "json", "en", json.dumps({"ftp": {"credentials": {"login": "backup", "pass": p}}}), p
    )

    s = r(ALNUM, 32)
    cred(
        "json-secret",
        "json",
        "en",
        json.dumps({"auth": {"provider": "oidc", "client_id": "web-portal", "client_secret": s}}, indent=2),
        s,
    )
    k = hexs(32)
    cred(
        "json-secret",
        "json",
        "en",
        json.dumps({"services": {"geocoder": {"api_key": k, "timeout": 5}}}, indent=2),
        k,
    )
    t = r(ALNUM, 48)
    cred("json-secret", "json", "en", json.dumps({"session": {"token": t, "user": "alice"}}), t)
    s = r(ALNUM + "!#%&*@^", 40)
    cred("json-secret", "json", "en", json.dumps({"jwt": {"secret": s, "expires_in": "7d"}}, indent=2), s)
    k = r(ALNUM, 36)
    cred(
        "json-secret", "code", "en", f"const config = {{\n  apiKey: '{k}',\n  region: 'eu-central-1',\n}};", k
    )
    t = r(ALNUM, 40)
    cred(
        "json-secret",
        "json",
        "zh",
        "接口返回：" + json.dumps({"code": 0, "data": {"accessToken": t, "expire": 7200}}),
        t,
    )

    p = human_password()
    cred(
        "yaml-config",
        "yaml",
        "en",
        "spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n"
        f"    username: app\n    password: {p}",
        p,
    )
    p = strong_password(14, ALNUM)
    cred(
        "yaml-config",
        "yaml",
        "en",
        f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {p}",
        p,
    )
    p = human_password()
    cred("yaml-config", "yaml", "en", f"ansible_user: deploy\nansible_become_password: {p}", p)
    p = human_password()
    cred(
        "yaml-config",
        "yaml",
        "en",
        f"production:\n  adapter: postgresql\n  database: shop_production\n  username: shop\n  password: {p}",
        p,
    )
    p = strong_password(16, ALNUM)
    cred("yaml-config", "yaml", "en", f"grafana:\n  adminUser: admin\n  adminPassword: {p}", p)
    p = human_password()
    cred(
        "yaml-config", "yaml", "zh", f"# 数据库配置\ndb:\n  host: 10.0.0.5\n  user: root\n  password: {p}", p
    )
    s = r(ALNUM, 40)
    cred("yaml-config", "yaml", "en", f"oauth:\n  client_id: acme-web\n  client_secret: {s}", s)

    p = human_password()
    cred("curl-user", "cli", "en", f"curl -u alice:{p} https://jenkins.acme.io/api/json", p)
    p = strong_password(14, ALNUM)
    cred(
        "curl-user",
        "cli",
        "en",
        f"curl --user 'deploy:{p}' --upload-file app.tar.gz https://nexus.acme.io/repository/raw/",
        p,
    )
    p = human_password()
    cred(
        "curl-user",
        "cli",
        "en",
        f"curl -u elastic:{p} -X GET 'http://localhost:9200/_cluster/health?pretty'",
        p,
    )
    p = human_password()
    cred("curl-user", "cli", "zh", f"用 curl -u ops:{p} http://10.0.0.9:8080/status 试一下", p)

    p = human_password()
    cred("cli-password-flag", "cli", "en", f"mysql -h db.internal -u root -p{p} shop", p)
    p = strong_password(14, ALNUM)
    cred("cli-password-flag", "cli", "en", f"sshpass -p '{p}' ssh root@10.0.0.5", p)
    p = human_password()
    cred("cli-password-flag", "cli", "en", f"docker login -u acmebot -p {p} registry.acme.io", p)
    p = human_password()
    cred("cli-password-flag", "cli", "en", f"mysqldump -uroot -p'{p}' --all-databases > all.sql", p)
    p = strong_password(20, ALNUM)
    cred("cli-password-flag", "cli", "en", f"redis-cli -h cache.internal -a {p} INFO", p)
    p = human_password()
    cred(
        "cli-password-flag",
        "cli",
        "en",
        f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}",
        p,
    )
    p = human_password()
    cred("cli-password-flag", "cli", "en", f"net user Administrator {p}", p)
    p = human_password()
    cred(
        "cli-password-flag",
        "cli",
        "en",
        f"mongosh 'mongodb://db.internal:27017' -u admin -p {p} --authenticationDatabase admin",
        p,
    )
    p = human_password()
    cred("cli-password-flag", "cli", "en", f"keytool -list -keystore server.jks -storepass {p}", p)
    p = human_password()
    cred("cli-password-flag", "cli", "zh", f"解压用 unzip -P {p} 客户资料.zip", p)
    p = strong_password(12, ALNUM)
    cred("cli-password-flag", "cli", "en", f"htpasswd -b -c /etc/nginx/.htpasswd admin {p}", p)

    # --- credentials in log lines ------------------------------------------------------------
    p = url_password(human_password())
    cred(
        "postgres-url",
        "log",
        "en",
        f"2024-05-03T10:22:01Z ERROR db: connect postgres://app:{p}@db:5432/app failed: connection refused",
        p,
    )
    u, s = slack_hook()
    cred("slack-webhook", "log", "en", f"[worker-3] POST {u} -> 200 (0.21s)", s)
    t = dckr()
    cred(
        "dockerhub",
        "log",
        "en",
        f"2024-05-03T08:01:12.4410Z Run docker login -u acmebot -p {t}\nLogin Succeeded",
        t,
    )
    k, s = "LTAI" + r(ALNUM, 20), r(ALNUM, 30)
    cred(
        "alibaba",
        "log",
        "zh",
        f"2024-05-03 10:22:01 [INFO] 初始化 OSS 客户端 accessKeyId={k} accessKeySecret={s}",
        [k, s],
    )
    t = telegram()
    cred(
        "telegram",
        "log",
        "en",
        f'DEBUG httpx: HTTP Request: POST https://api.telegram.org/bot{t}/sendMessage "HTTP/1.1 200 OK"',
        t,
    )

    t = r(ALNUM + "-_", 40)
    cred("generic-api-key", "prose", "en", f"the API key for the weather service is {t}", t)
    t = hexs(32)
    cred("generic-api-key", "prose", "en", f"API key: {t}", t)
    t = r(ALNUM, 32)
    cred("generic-api-key", "prose", "en", f"token for the internal metrics endpoint -> {t}", t)
    t = r(ALNUM, 24)
    cred("generic-api-key", "env", "en", f"INTERNAL_SERVICE_TOKEN={t}", t)
    t = hexs(40)
    cred("generic-api-key", "prose", "zh", f"第三方短信平台的 AppKey：{t}", t)

    # --- passwords in English prose --------------------------------------------------------
    en_phrasings = [
        "the password for the staging db is {p}",
        "password is: {p}",
        "pw: {p}",
        "use {p} as the password",
        "my login is alice / {p}",
        "The wifi password is {p}",
        "login: admin, password: {p}",
        "user ops, pass {p}",
        "creds for the router: admin/{p}",
        "Password for jenkins — {p}",
        "I've set the root password to {p}, change it after first login.",
        "The new password is {p} (case-sensitive).",
        "Sorry, typo: the password is actually {p}",
        "you can log in with username 'marketing' and password '{p}'",
        "PW = {p}",
        "Staging Grafana\nURL: https://grafana.staging.acme.io\nuser: admin\npassword: {p}",
        "Email: alice@acme.io Password: {p}",
        "My Netflix login is alice@example.com / {p}",
        "ssh root@10.0.4.17, password {p}",
        "sudo password is {p}",
        "the archive password is {p}",
        "IT reset my password to {p} this morning",
        "temp password: {p} (you'll be asked to change it)",
        "Credentials: user: svc_backup pass: {p}",
        "DB creds: postgres/{p}",
        "pass={p}",
        "The admin panel is at /admin, log in as admin with {p}.",
        "my password's {p}",
        "Password → {p}",
        'the password is "{p}"',
        "password= {p}",
        "| service | user | password |\n|---|---|---|\n| staging db | app | {p} |",
        "Password:\n{p}",
        "Use the following credentials to log in:\n\nUsername: jdoe\nPassword: {p}",
        "the shared account is team@acme.io and the password is {p} — don't change it",
        "Hi Bob, the VPN passphrase is {p}. Cheers",
    ]
    fixed = {0: "Winter2024!", 1: "Hunter2xyz"}
    for i, phrasing in enumerate(en_phrasings):
        p = fixed.get(i) or (strong_password(14) if i % 5 == 4 else human_password())
        cred("password-en", "prose", "en", phrasing.format(p=p), p)
    passphrase = "-".join(rng.sample([w.lower() for w in WORDS], 4)) + str(rng.randint(10, 99))
    cred("password-en", "prose", "en", f"the GPG passphrase is {passphrase}", passphrase)

    # --- passwords in Chinese prose ---------------------------------------------------------
    zh_phrasings = [
        "密码是：{p}",
        "密码为：{p}",
        "密码：{p}",
        "密码:{p}",
        "数据库密码是 {p}，别外传。",
        "服务器 root 密码是{p}，用完记得改",
        "WiFi 密码：{p}",
        "登录账号 alice，密码 {p}",
        "用户名：admin 密码：{p}",
        "口令是{p}",
        "管理员口令：{p}",
        "测试环境的账号密码都是 test / {p}",
        "你用 {p} 这个密码登录试试",
        "新密码已经改成 {p} 了",
        "初始密码为{p}，首次登录后请修改。",
        "邮箱密码：{p}（区分大小写）",
        "堡垒机的密码是「{p}」",
        "“{p}”就是数据库的密码",
        "账号：13800138000 密码：{p}",
        "我把 Redis 的密码设成了 {p}",
        "压缩包解压密码：{p}",
        "VPN 账号 zhangsan，口令 {p}",
        "sudo 密码是 {p}。",
        "管理后台 https://admin.example.cn 账号 admin 密码 {p}",
        "密码是 {p} ，记得保密",
        "默认密码：{p}；登录后立即修改",
        "生产库连接密码为 `{p}`",
        "MySQL root 密码：{p}\n端口：3306",
        "把密码 {p} 填到配置里就行",
        "路由器后台密码为:{p}",
        "Jenkins 的登录密码是{p}，用户名 admin。",
        "我的 iCloud 密码是 {p}，帮我记一下",
        "跳板机：10.0.8.1 用户：ops 密码：{p}",
        "老板说共享盘的访问密码改成了{p}",
    ]
    for i, phrasing in enumerate(zh_phrasings):
        p = "Winter2024" if i == 0 else (strong_password(12) if i % 4 == 3 else human_password())
        cred("password-zh", "prose", "zh", phrasing.format(p=p), p)
    for phrasing in (
        "密钥：{k}",
        "API 密钥是 {k}",
        "令牌：{k}",
        "访问令牌为 {k}，有效期 30 天。",
        "Git 仓库的 token 是 {k}",
    ):
        k = r(ALNUM, 32)
        cred("password-zh", "prose", "zh", phrasing.format(k=k), k)

    # --- passwords holding & ) ] < > $ % # ! ---------------------------------------------------
    special = [
        ("prose", "en", "password is: {p}", ""),
        ("env", "en", "DB_PASSWORD={p}", "$"),
        ("json", "en", None, ""),
        ("yaml", "en", 'admin_password: "{p}"', "$"),
        ("prose", "zh", "密码是 {p}", ""),
        ("prose", "en", "the password is {p}, yes with the symbols", "%"),
        ("cli", "en", "mysql -u root -p'{p}' shop", ""),
        ("cli", "en", "PGPASSWORD='{p}' psql -h db.internal -U app", "<"),
        ("prose", "en", "pass: {p}", "#"),
        ("yaml", "en", 'environment:\n  POSTGRES_PASSWORD: "{p}"', ""),
        ("prose", "en", "admin password → {p}", "$"),
        ("env", "en", "ADMIN_PASS='{p}'", "!"),
        ("prose", "zh", "密码为：{p}（注意有特殊字符）", "$"),
        ("prose", "en", "my login is ops / {p}", ""),
        ("prose", "en", "the password for the staging db is {p}", ")"),
        ("env", "en", "SMTP_PASS={p}", "&"),
    ]
    for fmt, lang, phrasing, start in special:
        p = special_password(start)
        text = (
            json.dumps({"db": {"user": "app", "password": p}}, indent=2)
            if phrasing is None
            else phrasing.format(p=p)
        )
        cred("password-special", fmt, lang, text, p)
    enc = url_password(special_password())
    cred("password-special", "url", "en", f"DATABASE_URL=postgres://app:{enc}@db.internal:5432/app", enc)


# ----------------------------------------------------------------------------- look-alikes
LOOKS: list[dict[str, str]] = []


def look(category: str, lang: str, text: str) -> None:
    n = sum(c["category"] == category for c in LOOKS) + 1
    LOOKS.append({"id": f"{category}-{n:02d}", "category": category, "lang": lang, "text": text})


def sha1() -> str:
    return hexs(40)


def build_lookalikes() -> None:
    # --- git -----------------------------------------------------------------------------
    for text in (
        f"Fixed in {hexs(7)}, will be in the next release.",
        f"git revert {sha1()}",
        f"Merge commit '{sha1()}' into main",
        f"commit {sha1()}\nAuthor: Alice Chen <alice@acme.io>\n"
        "Date:   Fri May 3 10:22:01 2024 +0200\n\n    Fix login redirect",
        f"can you cherry-pick {hexs(8)} and {hexs(8)} onto release/2.4?",
        f"HEAD is now at {hexs(7)} docs: update README",
        f"git diff {hexs(7)}..{hexs(7)} -- src/auth/",
        f"https://github.com/acme/web/commit/{sha1()}",
        f"The regression started at {hexs(12)} (bisected).",
        f"Submodule path 'vendor/lib': checked out '{sha1()}'",
        f"index {hexs(7)}..{hexs(7)} 100644\n--- a/config.py\n+++ b/config.py",
        f"Squashed {hexs(7)} {hexs(7)} {hexs(7)} into one commit",
    ):
        look("commit-hash", "en", text)
    for text in (
        f"这个 bug 在提交 {hexs(7)} 里修了",
        f"回滚到 {sha1()} 之前的版本",
        f"请帮我看一下 {hexs(10)} 这个 commit 为什么 CI 挂了",
    ):
        look("commit-hash", "zh", text)

    # --- UUIDs -----------------------------------------------------------------------------
    for text in (
        f"request id {uuid4()} failed with 502",
        f'{{"trace_id": "{uuid4()}", "span_id": "{hexs(16)}", "level": "error"}}',
        f"Tenant {uuid4()} was migrated to the eu-west cluster.",
        f"GET /api/v1/orders/{uuid4()} HTTP/1.1",
        f"X-Request-ID: {uuid4()}",
        f"the user's id is {uuid4()}",
        f"AZURE_SUBSCRIPTION_ID={uuid4()}",
        f"correlation-id={uuid4()} duration=120ms status=200",
        f"Volume {uuid4()} attached to /dev/xvdf",
        f"subscription: {uuid4()}\nresource group: rg-prod-weu",
    ):
        look("uuid", "en", text)
    for text in (
        f"工单关联的设备 ID：{uuid4()}",
        f"日志里的 traceId 是 {uuid4()}，帮我查一下",
        f"会话 ID {uuid4()} 已过期",
    ):
        look("uuid", "zh", text)

    # --- versions ---------------------------------------------------------------------------
    for text in (
        "Upgraded to v2.31.4, the crash is gone.",
        "Python 3.12.1 (main, Dec  7 2023, 20:45:44) [GCC 11.4.0] on linux",
        "node v20.11.0, npm 10.2.4",
        "version: 1.0.0-rc.2+build.5",
        "Bump django from 4.2.11 to 4.2.13",
        "requires openssl>=3.0.13,<4",
        "git tag -a v3.0.0-beta.1 -m 'beta'",
        "Chrome/124.0.6367.119 Safari/537.36",
        "kubectl version: Client Version: v1.29.4, Server Version: v1.28.9-eks-036c24b",
        "image: postgres:16.2-alpine3.19",
        "Release 2024.05.03 is out; previous was 2024.04.19.",
        "the API version header is Stripe-Version: 2024-04-10",
    ):
        look("version", "en", text)
    for text in ("升级到 v5.3.2 之后就好了", "当前版本号：3.8.0-SNAPSHOT", "微信版本 8.0.49 有这个问题"):
        look("version", "zh", text)

    # --- order, ticket, invoice numbers ------------------------------------------------------
    for text in (
        f"Order #112-{digits(7)}-{digits(7)} has shipped.",
        f"Invoice INV-2024-{digits(6)} is overdue.",
        f"see JIRA PROJ-{rng.randint(1000, 9999)} for details",
        f"Your confirmation code is {r(UPPER + DIGITS, 6)} (booking reference).",
        f"Ticket #{digits(6)} was escalated to tier 2.",
        f"PO number 4500{digits(6)}, delivery note DN-{digits(8)}",
        f"Tracking number 1Z{r(UPPER + DIGITS, 16)}",
        f"Case {digits(8)} opened with AWS Support",
        f"refund RF-{r(UPPER + DIGITS, 10)} processed",
        f"Receipt #{digits(4)}-{digits(4)}, total €42.90",
        f"Serial number: {r(UPPER + DIGITS, 12)}",
        f"GitHub issue #{rng.randint(1000, 40000)} and PR #{rng.randint(1000, 40000)}",
    ):
        look("order-number", "en", text)
    for text in (
        f"订单号：E{digits(17)}",
        f"工单号 {digits(14)}，请尽快处理",
        f"快递单号 SF{digits(13)}",
        f"发票号码 {digits(8)}，发票代码 {digits(12)}",
        f"退款流水号：{digits(20)}",
    ):
        look("order-number", "zh", text)

    # --- base64 images -------------------------------------------------------------------------
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    jpg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01"
    for i, (head, mime) in enumerate(
        [
            (png, "png"),
            (jpg, "jpeg"),
            (png, "png"),
            (jpg, "jpeg"),
            (png, "png"),
            (png, "png"),
            (jpg, "jpeg"),
            (png, "png"),
        ]
    ):
        data = b64_bytes(head + rand_bytes(rng.randint(150, 600)))
        uri = f"data:image/{mime};base64,{data}"
        forms = [
            f"![chart]({uri})",
            f'<img src="{uri}" alt="logo">',
            json.dumps(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in this picture?"},
                        {"type": "image_url", "image_url": {"url": uri}},
                    ],
                }
            ),
            f".icon {{ background-image: url({uri}); }}",
            f"here is the screenshot: {uri}",
            f"截图：{uri}",
            f'{{"avatar": "{uri}"}}',
            f"favicon = '{uri}'",
        ]
        look("base64-image", "zh" if i == 5 else "en", forms[i])

    # --- checksums ---------------------------------------------------------------------------
    for text in (
        f"{hexs(64)}  aibuddy-1.4.0.tar.gz",
        f"SHA256 (aibuddy-1.4.0-py3-none-any.whl) = {hexs(64)}",
        f"Checksums\n\n| file | sha256 |\n|---|---|\n| app-linux-amd64 | {hexs(64)} |\n"
        f"| app-darwin-arm64 | {hexs(64)} |",
        f"md5: {hexs(32)}",
        f'ETag: "{hexs(32)}"',
        f"integrity sha512-{b64_bytes(rand_bytes(64))}",
        f"sha1sum: {hexs(40)}  ubuntu-22.04.4-live-server-amd64.iso",
        f"Verified: the file hash is {hexs(64)}, matches the release page.",
        f'"content_hash": "{hexs(64)}"',
        f"git lfs: oid sha256:{hexs(64)}\nsize 1048576",
    ):
        look("checksum", "en", text)
    look("checksum", "zh", f"校验和（SHA-256）：{hexs(64)}，下载后请核对")

    # --- password and credential words in English prose -----------------------------------------
    for text in (
        "password reset link sent",
        "A password reset link has been sent to a***@acme.io.",
        "the password must have 12 characters",
        "Passwords must be at least 12 characters and include a digit and a symbol.",
        "I forgot my password",
        "Your password has expired. Please choose a new one.",
        "password: required",
        "Enter your password below.",
        "the password is required",
        "the password is too short",
        "the password is stored in 1Password under Prod / DB",
        "my password is the same as before",
        "The password field is empty.",
        "Password: ********",
        "password: [hidden]",
        "Wrong password. Try again or click Forgot password to reset it.",
        "Never share your password with anyone, including support staff.",
        "We changed how passwords are hashed (bcrypt → argon2id).",
        "Change the default password on first login.",
        "Do you remember the password for the router?",
        'password authentication failed for user "app"',
        "secret management is on the roadmap for Q3",
        "the secret to good sourdough is time",
        "Keep your API keys out of the repository.",
        "rotate the keys every 90 days",
        "my password manager is Bitwarden",
        "the credentials are in the vault, ask Dana for access",
        "Login failed: invalid username or password",
    ):
        look("password-prose", "en", text)
    for text in (
        "忘记密码了",
        "密码需要至少8位",
        "密码需要包含大小写字母和数字",
        "请输入密码",
        "密码错误，请重试",
        "密码已重置，请查收邮件",
        "修改密码后需要重新登录",
        "密码强度：弱",
        "口令过期了，怎么改？",
        "我不记得邮箱密码是什么了",
        "密钥管理服务 KMS",
        "密钥轮换策略是 90 天一次",
        "访问令牌已过期，请重新登录",
        "令牌桶算法",
        "这个接口需要 token 吗？",
        "初始密码会通过短信发给你",
        "密码不能和用户名相同",
        "请联系管理员重置口令",
        "公钥和私钥的区别是什么？",
        "密码是什么来着？",
    ):
        look("password-prose", "zh", text)

    # --- tokens in the LLM sense and others ---------------------------------------------------
    for text in (
        "the token budget is 8k per request",
        "max_tokens=4096",
        "completion_tokens: 512, prompt_tokens: 1873, total_tokens: 2385",
        "tokens per minute limit: 90,000",
        "CSRF token missing or incorrect.",
        "refresh token expired, log in again",
        '{"token_type": "bearer", "expires_in": 3600}',
        "The tokenizer splits 'unbelievable' into 3 tokens.",
        "Bearer tokens expire after one hour.",
        "token count: 12,044",
        "Set max_output_tokens to 2048 for the summary step.",
    ):
        look("token-prose", "en", text)
    look("token-prose", "zh", "上下文窗口是 128k tokens，输出最多 4096 个 token")
    look("token-prose", "zh", "这次调用消耗了 2385 个 token")

    # --- placeholders --------------------------------------------------------------------------
    for text in (
        "DB_PASSWORD=${DB_PASSWORD}",
        "OPENAI_API_KEY=<your-api-key>",
        "export OPENAI_API_KEY=sk-...",
        "password: xxxx",
        "api_key: ****",
        "STRIPE_SECRET_KEY=your-key-here",
        'password: "{{ vault_db_password }}"',
        "NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
        'curl -H "Authorization: Bearer $SLACK_TOKEN" https://slack.com/api/auth.test',
        "set API_KEY=%API_KEY%",
        "const key = process.env.STRIPE_SECRET_KEY;",
        'secret = os.environ["AWS_SECRET_ACCESS_KEY"]',
        "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "Authorization: Bearer <token>",
        "postgres://user:password@localhost:5432/dbname",
        "mysql://USER:PASS@HOST:3306/DB",
        "REPLACE_ME",
        "api_key = 'YOUR_API_KEY_HERE'",
        "token: <insert token>",
        "password=<redacted>",
        "ANTHROPIC_API_KEY=sk-ant-xxxxxxxxxxxxxxxxxxxx",
        "client_secret: ${CLIENT_SECRET:?must be set}",
    ):
        look("placeholder", "en", text)
    look("placeholder", "zh", "把 OPENAI_API_KEY=<你的密钥> 写到 .env 里")
    look("placeholder", "zh", "密码：******（已隐藏）")

    # --- public keys and certificates ---------------------------------------------------------
    look("public-key", "en", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{clean_b64(b'', 280)} alice@laptop")
    look("public-key", "en", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{clean_b64(b'', 32)[:43]} deploy@ci")
    look(
        "public-key",
        "en",
        "-----BEGIN PUBLIC KEY-----\n"
        + "\n".join(pem_lines("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + clean_b64(b"", 250)))
        + "\n-----END PUBLIC KEY-----",
    )
    look(
        "public-key",
        "en",
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(pem_lines("MIIDdzCCAl+gAwIBAgIE" + clean_b64(b"", 700)))
        + "\n-----END CERTIFICATE-----",
    )
    look(
        "public-key",
        "en",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
        + "\n".join(pem_lines("mQINBGX" + clean_b64(b"", 400)))
        + "\n=Zk3q\n-----END PGP PUBLIC KEY BLOCK-----",
    )
    look("public-key", "en", f"age public key: age1{r('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}")
    look("public-key", "en", f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{clean_b64(b'', 32)[:43]}")
    look("public-key", "en", f"GPG fingerprint: {' '.join(r(UPPER[:6] + DIGITS, 4) for _ in range(10))}")
    look(
        "public-key",
        "zh",
        "把这个公钥加到服务器的 authorized_keys："
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{clean_b64(b'', 32)[:43]} zhang@mac",
    )
    look(
        "public-key",
        "en",
        f'"jwks": {{"keys": [{{"kty": "RSA", "e": "AQAB", "kid": "{hexs(16)}", '
        f'"n": "{clean_b64(b"", 256, "url")}"}}]}}',
    )

    # --- secret names, environment variable names -----------------------------------------------
    for text in (
        "kubectl get secret db-credentials -n prod -o yaml",
        "envFrom:\n  - secretRef:\n      name: stripe-api-key",
        "valueFrom:\n  secretKeyRef:\n    name: postgres-password\n    key: password",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db/password-AbCdEf",
        "gcloud secrets versions access latest --secret=openai-api-key",
        "vault kv get secret/prod/payments",
        "The secret 'github-token' was rotated on May 3.",
        "az keyvault secret show --vault-name acme-kv --name sql-admin-password",
    ):
        look("secret-name", "en", text)
    for text in (
        "set OPENAI_API_KEY in your shell before running the script",
        "DB_PASSWORD=",
        "export GITHUB_TOKEN",
        "Error: AWS_SECRET_ACCESS_KEY is not set",
        "Required env vars: DATABASE_URL, REDIS_URL, SECRET_KEY_BASE, STRIPE_WEBHOOK_SECRET",
        "unset AWS_SESSION_TOKEN",
        "echo $ANTHROPIC_API_KEY | wc -c",
        "printenv | grep -i token",
    ):
        look("env-name", "en", text)
    look("env-name", "zh", "环境变量 DASHSCOPE_API_KEY 没配置，所以报错")

    # --- paths ------------------------------------------------------------------------------------
    for text in (
        "chmod 600 ~/.ssh/id_rsa",
        "ssl_certificate_key /etc/ssl/private/server.key;",
        "secrets/prod.env is in .gitignore",
        r"C:\Users\alice\AppData\Roaming\npm\.npmrc",
        "config/credentials.yml.enc",
        "open ~/.aws/credentials and check the profile name",
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "src/auth/password_reset.py line 42",
    ):
        look("file-path", "en", text)
    look("file-path", "zh", "密钥文件放在 /etc/app/keys/ 目录下")

    # --- URLs ---------------------------------------------------------------------------------
    for text in (
        "https://github.com/acme/web/pull/1234",
        "https://api.stripe.com/v1/charges?limit=3",
        "https://acme.io/reset-password?step=2&lang=en",
        "https://docs.python.org/3/library/secrets.html#secrets.token_urlsafe",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
        f"https://docs.google.com/document/d/1{r(ALNUM + '-_', 43)}/edit",
        "https://console.aws.amazon.com/iam/home#/security_credentials",
        f"https://acme.atlassian.net/browse/OPS-{rng.randint(100, 999)}?focusedCommentId={digits(6)}",
        "http://localhost:3000/callback?code_challenge_method=S256",
        "https://platform.openai.com/api-keys",
    ):
        look("url", "en", text)
    look("url", "zh", "文档在 https://help.aliyun.com/zh/ram/user-guide/create-an-accesskey-pair")
    for text in (
        "git@github.com:acme/infra.git",
        "ssh://git@gitlab.acme.io:2222/platform/api.git",
        "postgres://app@db.internal:5432/app",
        "https://alice@bitbucket.org/acme/payments.git",
        f"SENTRY_DSN=https://{hexs(32)}@o{digits(6)}.ingest.sentry.io/{digits(7)}",
        "redis://cache.internal:6379/0",
        "ftp://anonymous@ftp.gnu.org/gnu/",
    ):
        look("url-user-only", "en", text)

    # --- email, payment references, colours, digests ------------------------------------------
    for text in (
        "alice.chen@acme.io",
        "Reply to noreply+password-reset@acme.io",
        "cc: security@acme.io, ops@acme.io",
    ):
        look("email", "en", text)
    look("email", "zh", "有问题发邮件到 zhangwei@example.cn")
    for text in (
        "IBAN DE89 3704 0044 0532 0130 00, BIC COBADEFFXXX",
        f"Payment reference RF18 5390 0754 {digits(4)}",
        f"SEPA mandate reference ACME-{digits(10)}",
        "Card ending in 4242, exp 12/27",
    ):
        look("payment-ref", "en", text)
    look("payment-ref", "zh", f"转账备注：货款 {digits(8)}")
    for text in (
        "--brand: #1e90ff;",
        "color: #FF5733",
        "background: #0d1117; border: 1px solid #30363d;",
        "Use #2D9CDB for links and #EB5757 for errors.",
    ):
        look("hex-colour", "en", text)
    look("hex-colour", "zh", "主色调改成 #E60012 吧")
    for text in (
        f"image: nginx@sha256:{hexs(64)}",
        f"Digest: sha256:{hexs(64)}",
        f"docker pull ghcr.io/acme/api@sha256:{hexs(64)}",
        f'"config": {{"digest": "sha256:{hexs(64)}", "size": 7023}}',
    ):
        look("docker-digest", "en", text)

    # --- API docs --------------------------------------------------------------------------------
    for text in (
        "Pass your key in the Authorization header.",
        "Authorization: Bearer YOUR_TOKEN",
        "Use HTTP Basic auth with your API key as the username and an empty password.",
        "Set the X-API-Key header to the key shown in your dashboard.",
        'curl https://api.acme.io/v1/me -H "Authorization: Bearer $ACME_TOKEN"',
        "The token endpoint returns access_token, token_type and expires_in.",
        "Secret keys start with sk_live_ and must never be exposed client-side.",
        "GitHub tokens now start with ghp_, gho_, ghu_, ghs_ or ghr_.",
        "Store the webhook signing secret (whsec_...) in your server environment.",
        "-u, --user <user:password>  Server user and password",
    ):
        look("api-docs", "en", text)
    look("api-docs", "zh", "在请求头中加入 Authorization: Bearer <你的令牌>")
    look("api-docs", "zh", "API Key 请在控制台的「密钥管理」页面创建")

    # --- identifiers that look random -----------------------------------------------------------
    for text in (
        f"customer cus_{r(ALNUM, 14)} was charged",
        f"PaymentIntent pi_3{r(ALNUM, 23)} succeeded",
        f"charge ch_3{r(ALNUM, 23)} refunded",
        f"subscription sub_1{r(ALNUM, 23)} is past_due",
        f"invoice in_1{r(ALNUM, 23)} finalized",
        f"price_1{r(ALNUM, 23)}",
        f"evt_1{r(ALNUM, 23)}: checkout.session.completed",
        f"connected account acct_1{r(ALNUM, 15)}",
    ):
        look("stripe-id", "en", text)
    for text in (
        "arn:aws:iam::123456789012:role/github-actions-deploy",
        "arn:aws:s3:::acme-prod-logs/2024/05/*",
        "arn:aws:lambda:eu-west-1:123456789012:function:resize-images:42",
        "AWS account 123456789012, region eu-west-1",
    ):
        look("aws-arn", "en", text)
    for text in (
        "s3://acme-prod-backups-eu-west-1/db/",
        "bucket: acme-static-assets-7f3a2c",
        "gs://acme-ml-datasets/raw/",
    ):
        look("bucket", "en", text)
    for text in (
        "gtag('config', 'G-7XK2P9QL4M');",
        "UA-12345678-1",
        "GTM-5X7K2PQ",
        "fbq('init', '1234567890123456');",
    ):
        look("analytics-id", "en", text)
    for text in (
        f"Stripe.js: Stripe('pk_live_51{r(ALNUM, 97)}')",
        f"STRIPE_PUBLISHABLE_KEY=pk_test_51{r(ALNUM, 97)}",
        "mapboxgl.accessToken = 'pk."
        f"{b64_bytes(json.dumps({'u': 'acme', 'a': r(LOWER + DIGITS, 25)}).encode(), 'url')}"
        f".{r(ALNUM + '_-', 22)}';",
        f'<div class="g-recaptcha" data-sitekey="6Lc{r(ALNUM + "_-", 37)}"></div>',
        f"NEXT_PUBLIC_POSTHOG_KEY=phc_{r(ALNUM, 43)}",
        f"Algolia app id {r(UPPER + DIGITS, 10)}, index products",
    ):
        look("publishable-key", "en", text)
    look("publishable-key", "zh", f"前端用的是可公开的 publishable key：pk_live_51{r(ALNUM, 97)}")
    for text in (
        f"Slack channel C0{r(UPPER + DIGITS, 8)}, user U0{r(UPPER + DIGITS, 8)}",
        f"Discord guild {digits(18)}, channel {digits(19)}",
        "Telegram chat id -1001234567890",
        f'MongoDB _id: ObjectId("{hexs(24)}")',
        f"ULID {r('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)}",
        f"nanoid: {r(ALNUM + '_-', 21)}",
        f"bitcoin address bc1q{r('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 38)}",
        f"ETH 0x{hexs(40)}",
        f"Twilio account SID AC{hexs(32)} (the auth token is in the vault)",
        f"the OpenAI org id is org-{r(ALNUM, 24)}",
        f"request_id: req_{r(ALNUM, 24)}",
        f"Chrome extension id {r('abcdefghijklmnop', 32)}",
        f"Apple Team ID {r(UPPER + DIGITS, 10)}, bundle id io.acme.app",
        f"Google OAuth client id {digits(12)}-{r(LOWER + DIGITS, 32)}.apps.googleusercontent.com",
        f"Firebase project acme-app-{r(LOWER + DIGITS, 5)}, messagingSenderId {digits(12)}",
        f"App ID: wx{hexs(16)}",
    ):
        look("identifier", "en", text)
    look("identifier", "zh", f"小程序的 AppID 是 wx{hexs(16)}")
    look("identifier", "zh", f"用户 openid：o{r(ALNUM + '_-', 27)}")

    # --- code and logs about secrets ----------------------------------------------------------
    for text in (
        "password = getpass.getpass('Password: ')",
        "if password != confirm_password:\n    raise ValueError('passwords do not match')",
        "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
        "const apiKey = process.env.API_KEY;",
        "def check_password(user: User, password: str) -> bool:",
        "SECRET_KEY_LENGTH = 64",
        "password_hash = argon2.hash(password)",
        "api_key: str = Field(..., description='Your API key')",
        "self.token_cache = LRUCache(maxsize=1024)",
        "for token in tokenizer.encode(text):",
        "password: str | None = None",
        "if not secrets.compare_digest(token, expected):",
    ):
        look("code", "en", text)
    look("code", "zh", "# 从环境变量读取密钥，不要写死在代码里\napi_key = os.getenv('API_KEY')")
    for text in (
        "INFO auth: login succeeded for alice",
        "WARN token refresh scheduled in 300s",
        "401 Unauthorized: invalid api key",
        'ERROR: password authentication failed for user "postgres"',
        "[sshd] Failed password for invalid user admin from 203.0.113.7 port 51122 ssh2",
        "DEBUG jwt verified: sub=1294 exp=1714809600",
        "audit: secret 'prod/db' read by role deploy",
        "token bucket refilled: 100/100",
    ):
        look("log", "en", text)
    look("log", "zh", "2024-05-03 10:22:01 错误：用户 admin 密码错误，剩余尝试次数 2")
    look("log", "zh", "令牌校验通过，用户 ID 1294")

    # --- numbers and time ------------------------------------------------------------------
    for text in (
        "PID 48213 listening on port 5432",
        "timestamp 1714723200123",
        "phone +1 (555) 867-5309",
        "MAC address 3c:22:fb:9a:41:7e",
        "IPv6 2001:db8:85a3::8a2e:370:7334",
        "build 20240503.7 (run 8891234567)",
    ):
        look("number", "en", text)
    look("number", "zh", "手机号 13800138000，验证码已发送")
    # --- more Chinese look-alikes ----------------------------------------------------------------
    look("api-docs", "zh", "请把 API 密钥保存在环境变量里，不要提交到仓库")
    look("token-prose", "zh", "JWT 令牌由三部分组成：头部、载荷和签名")
    look("password-prose", "zh", "数据库密码策略：每 90 天更换一次")
    look("password-prose", "zh", "密码学课程第三讲：RSA 和椭圆曲线")
    look("password-prose", "zh", "私钥丢了怎么办？")
    look("uuid", "zh", f"这个 UUID 是 {uuid4()}，对应哪台机器？")
    look("docker-digest", "zh", f"镜像摘要 sha256:{hexs(64)}")
    look("identifier", "zh", "阿里云 RAM 角色 ARN：acs:ram::1234567890123456:role/ecs-admin")
    look("bucket", "zh", "OSS bucket 名称：acme-prod-images，地域 cn-hangzhou")
    look("analytics-id", "zh", "百度统计的代码里有 hm.js?" + hexs(32))
    look("placeholder", "zh", "打码后的密钥：sk-****************************abcd")
    look("version", "zh", "版本号 v2.1.0-beta.3 已发布")
    look("placeholder", "en", "Connected to amqp://guest:**@localhost:5672//")
    look(
        "placeholder",
        "en",
        "openai.AuthenticationError: Error code: 401 - "
        "Incorrect API key provided: sk-proj-****************abcd",
    )


def main() -> None:
    build_credentials()
    build_lookalikes()
    for name, rows in (("credentials.jsonl", CREDS), ("lookalikes.jsonl", LOOKS)):
        with (HERE / name).open("w", encoding="utf-8", newline="\n") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    providers = {c["provider"] for c in CREDS}
    print(f"{len(CREDS)} credentials ({len(providers)} providers), {len(LOOKS)} look-alikes")


if __name__ == "__main__":
    main()
