"""The credential detector: each kind it redacts, and ordinary sentences it must leave alone."""

from __future__ import annotations

import random
import string
from collections import Counter

import pytest

from aibuddy_cli.redaction import describe, find, redact, redact_value, screen

# Made up, shaped like the real thing: random characters of each provider's alphabet and length,
# assembled at run time so that no file holds a whole one.
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"


def fake(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


OPENAI = "sk-proj-" + fake(URLSAFE, 74, 1) + "T3BlbkFJ" + fake(URLSAFE, 74, 2)
ANTHROPIC = "sk-ant-api03-" + fake(URLSAFE, 93, 3) + "AA"
AWS = "AKIA" + fake(string.ascii_uppercase + "234567", 16, 4)
ASIA = "ASIA" + fake(string.ascii_uppercase + "234567", 16, 5)
GITHUB = "ghp_" + fake(ALNUM, 36, 6)
GITHUB_PAT = "github_pat_" + fake(ALNUM + "_", 82, 7)
SLACK = "xoxb-" + "123456789012-1234567890123-" + fake(ALNUM, 24, 8)
GOOGLE = "AIza" + fake(URLSAFE, 35, 9)
STRIPE = "sk_live_" + fake(ALNUM, 99, 10)
STRIPE_RESTRICTED = "rk_live_" + fake(ALNUM, 99, 11)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2R9Lw0xHqnFf\n"
    "q7gFk9Xb2n1YcZlPp8r0OQ==\n"
    "-----END RSA PRIVATE KEY-----"
)

POSITIVES = [
    (f"my key is {OPENAI}", "my key is [redacted: api key]", "api key"),
    (f"OPENAI_API_KEY={OPENAI}", "OPENAI_API_KEY=[redacted: api key]", "api key"),
    (f"use {ANTHROPIC} for claude", "use [redacted: api key] for claude", "api key"),
    (f"aws id {AWS} in us-east-1", "aws id [redacted: api key] in us-east-1", "api key"),
    (ASIA, "[redacted: api key]", "api key"),
    (f"maps key {GOOGLE}.", "maps key [redacted: api key].", "api key"),
    (f"stripe {STRIPE}", "stripe [redacted: token]", "token"),
    (f"restricted {STRIPE_RESTRICTED}", "restricted [redacted: token]", "token"),
    (f"push with {GITHUB}", "push with [redacted: token]", "token"),
    (f"fine-grained {GITHUB_PAT}", "fine-grained [redacted: token]", "token"),
    (f"bot token {SLACK}", "bot token [redacted: token]", "token"),
    (f"before\n{PEM}\nafter", "before\n[redacted: private key]\nafter", "private key"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAAB",
        "[redacted: private key]",
        "private key",
    ),  # cut off before its END line
    (f"session {JWT} expires", "session [redacted: jwt] expires", "jwt"),
    (
        "Authorization: Bearer abcdef1234567890ABCDEF.xyz",
        "Authorization: Bearer [redacted: token]",
        "token",
    ),
    (
        "curl -H 'authorization: bearer 0123456789abcdefghij'",
        "curl -H 'authorization: bearer [redacted: token]'",
        "token",
    ),
    ("my password is hunter22", "my password is [redacted: password]", "password"),
    ("My password is Sw0rdfish!", "My password is [redacted: password]", "password"),
    ("password: swordfish", "password: [redacted: password]", "password"),
    ("passwd=abc123", "passwd=[redacted: password]", "password"),
    ("db_password = 'correct horse battery staple'", "db_password = '[redacted: password]'", "password"),
    ('{"password": "hunter22"}', '{"password": "[redacted: password]"}', "password"),
    ("the wifi password is hunter22.", "the wifi password is [redacted: password].", "password"),
    (
        "postgres://admin:hunter22@db.example.com/prod",
        "postgres://admin:[redacted: password]@db.example.com/prod",
        "password",
    ),
    ("secret = s3cr3tvalue", "secret = [redacted: secret]", "secret"),
    ("client_secret: 8dyfuiRyq=vVc3RRr_edRk-fK__JItpZ", "client_secret: [redacted: secret]", "secret"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [redacted: secret]",
        "secret",
    ),
    ("token: abcd1234efgh5678", "token: [redacted: token]", "token"),
    ("access_token=ya29.a0AfH6SMBx3", "access_token=[redacted: token]", "token"),
    ("api_key=AbC123xyz789", "api_key=[redacted: api key]", "api key"),
    ("密码是abc12345", "密码是[redacted: password]", "password"),
    ("服务器密码：123456，别告诉别人", "服务器密码：[redacted: password]，别告诉别人", "password"),
    ("密码为 Pa55word!", "密码为 [redacted: password]", "password"),
    ("令牌: tok_9f8e7d6c5b4a", "令牌: [redacted: token]", "token"),
    ("my api key is abcd1234efgh5678ijkl", "my api key is [redacted: api key]", "api key"),
    ("secret key: abcd1234efgh5678ijkl", "secret key: [redacted: secret]", "secret"),
    ("PGPASSWORD=hunter22 psql -h db", "PGPASSWORD=[redacted: password] psql -h db", "password"),
    ("MYSQL_PWD=hunter22", "MYSQL_PWD=[redacted: password]", "password"),
    ("密码是「abc123」", "密码是「[redacted: password]」", "password"),
    ("password=hunter2&user=bob", "password=[redacted: password]&user=bob", "password"),
]

ORDINARY = [
    "I forgot my password again.",
    "The token budget is 4000 per request.",
    "The password is required.",
    "The password is incorrect, try again.",
    "Bearer tokens expire after an hour.",
    "We use JWTs for auth; see the docs.",
    "Set max_tokens to 500 for summaries.",
    "The secret is out.",
    "The secret to good reports is brevity.",
    "Keep the API key in a vault, never in chat.",
    "Use a concise format for every weekly report.",
    "Tokens: the unit a model reads.",
    "token: 4000",
    "My password manager is 1Password.",
    "Password-protected files are refused.",
    "Read the task-management-system-overview document first.",
    "Ask the risk-assessment-committee-members before Friday.",
    "password: ********",
    "password=${DB_PASSWORD}",
    "api_key: <your key here>",
    "Authorization header: Bearer <token>",
    "The token is valid for one hour.",
    "The passcode is four digits long.",
    "Prefer tabs over spaces; password rules are in the wiki.",
    "Visit https://example.com/docs for more.",
    "Maria Lopez handles the venue; she prefers email.",
    "The deadline moved to 2026-12-15, tell the team.",
    "Rotate the keys every 90 days.",
    "我忘了密码。",
    "密码是什么？",
    "密码错误，请重试。",
    "令牌预算是四千。",
    "我喜欢简洁的周报格式。",
    "周报要分三个部分：完成、下一步、风险。",
    "请用中文回答，不要用英文。",
    "Already redacted: password: [redacted: password] and [redacted: api key].",
    "Password: must contain a digit.",
    "Password: Enter yours below.",
    "Run pwd to see the folder.",
]



@pytest.mark.parametrize(("text", "expected", "kind"), POSITIVES)
def test_each_kind_of_credential_is_redacted_with_its_label(text: str, expected: str, kind: str) -> None:
    clean, counts = redact(text)
    assert clean == expected
    assert counts == Counter({kind: 1})
    assert redact(clean) == (clean, Counter())  # redacting twice changes nothing more


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_are_left_as_they_are(text: str) -> None:
    assert redact(text) == (text, Counter())
    assert find(text) == []


def test_findings_carry_the_rule_or_prefix_as_a_hint_and_never_the_value() -> None:
    (finding,) = find(f"key {OPENAI}")
    assert finding.kind == "api key" and finding.hint == "openai-api-key"
    assert OPENAI not in repr(finding)
    (bearer,) = find("Authorization: Bearer abcdef1234567890ABCDEF")
    assert bearer.hint == "Authorization: Bearer …"


def test_several_values_in_one_text_are_counted_by_kind() -> None:
    text = f"a {OPENAI}, b {AWS}, password: hunter22, jwt {JWT}"
    clean, counts = redact(text)
    assert counts == Counter({"api key": 2, "password": 1, "jwt": 1})
    assert describe(counts) == "2 api keys, 1 password, 1 jwt"
    assert OPENAI not in clean and AWS not in clean and "hunter22" not in clean and JWT not in clean


def test_nested_values_are_redacted_and_keys_kept() -> None:
    counts: Counter[str] = Counter()
    value = {"name": "Ada", "notes": [f"key {GITHUB}", 3, None], "bio": "password: hunter22"}
    assert redact_value(value, counts) == {
        "name": "Ada",
        "notes": ["key [redacted: token]", 3, None],
        "bio": "password: [redacted: password]",
    }
    assert counts == Counter({"token": 1, "password": 1})


def test_screen_redacts_automatic_writes_and_keeps_explicit_ones_with_a_warning() -> None:
    warnings: list[str] = []
    row = {"note": f"key {OPENAI}"}
    assert screen(row, automatic=True, warnings=warnings, what="update, a row of vendors") == {
        "note": "key [redacted: api key]"
    }
    assert screen(row, automatic=False, warnings=warnings, what="table add vendors: a row") is row
    assert warnings == [
        "update, a row of vendors: redacted 1 api key (automatic writes never store such values)",
        "table add vendors: a row holds what looks like 1 api key; kept because you wrote it explicitly "
        "(automatic writes redact such values; `aibuddy scan` lists them)",
    ]
    assert all(OPENAI not in w for w in warnings)
    assert screen({"note": "fine"}, automatic=True, warnings=warnings, what="x") == {"note": "fine"}
    assert len(warnings) == 2
