"""The credential detector: each kind it redacts, and ordinary sentences it must leave alone."""

from __future__ import annotations

import random
import string
from collections import Counter

import pytest

from aibuddy_cli.redaction.detect import describe, find, redact, redact_value, screen

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
AWS_SECRET = fake(ALNUM + "/+", 40, 12)
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
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [redacted: secret]", "secret"),
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


# --- shapes from the world: what a hand-written list missed (issue 33), and look-alikes ---------

B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
WHOLE = [  # (text, the secret that must be gone whole)
    (f"redis://:{(p := 'S3cretRedisPass')}@cache:6379/0", p),
    ("密码是：Winter2024", "Winter2024"),
    ("数据库密码为：Spring#2025，别外传", "Spring#2025"),
    ("the password for the staging db is Winter2024!", "Winter2024!"),
    ("password is: Hunter2xyz", "Hunter2xyz"),
    (f"Authorization: Basic {(p := 'YWxpY2U6' + fake(ALNUM, 16, 21) + '==')}", p),
    (f"signing secret {(p := 'whsec_' + fake(ALNUM, 32, 22))}", p),
    (f"{(p := 'xapp-1-A' + fake(string.ascii_uppercase + string.digits, 10, 23) + '-' + fake(string.digits, 13, 24) + '-' + fake(HEX, 64, 25))}", p),  # noqa: E501
    (f"post to https://hooks.slack.com/services/T{fake(ALNUM, 8, 26).upper()}/B{fake(ALNUM, 10, 27).upper()}/{(p := fake(ALNUM, 24, 28))}", p),  # noqa: E501
    (f"hf token {(p := 'hf_' + fake(string.ascii_letters, 34, 29))}", p),
    (f"//registry.npmjs.org/:_authToken={(p := 'npm_' + fake(ALNUM, 36, 30))}", p),
    (f"SENDGRID={(p := 'SG.' + fake(URLSAFE, 22, 31) + '.' + fake(URLSAFE, 43, 32))}", p),
    ("DB_PASS=Tr0ub4dor&3 next", "Tr0ub4dor&3"),
    ("ADMIN_PASS=p@ss)w]rd<9", "p@ss)w]rd<9"),
    ('{"user": "bob", "pass": "$uper$ecret9"}', "$uper$ecret9"),
    (f"AWS_ACCESS_KEY_ID=[redacted: api key]\nAWS_SECRET_ACCESS_KEY={(p := fake(B64, 40, 33))}", p),
    (f"keys for the bucket: [redacted: api key] {(p := fake(B64, 40, 34))} (read-only)", p),
    ("docker login -u bot -p Falcon1234x registry.io", "Falcon1234x"),
    ("sshpass -p 'x9Yq2Lm#' ssh root@10.0.0.5", "x9Yq2Lm#"),
    ("redis-cli -h cache -a XW5NtQkLPSZ9DN0hks2e INFO", "XW5NtQkLPSZ9DN0hks2e"),
    ("keytool -list -keystore s.jks -storepass Mango-zephyr-296", "Mango-zephyr-296"),
    ("openssl pkcs12 -export -out b.p12 -passout pass:harbor_Hazel8*", "harbor_Hazel8*"),
    ("db.internal:5432:app:app:ember_Meadow2#", "ember_Meadow2#"),
    ("| service | user | password |\n|---|---|---|\n| staging db | app | Tulip1779* |", "Tulip1779*"),
    ("新密码已经改成 drift_Thistle5& 了", "drift_Thistle5&"),
    ("你用 LilacIndigo60 这个密码登录试试", "LilacIndigo60"),
    ("测试环境的账号密码都是 test / K#t9d^raE9Hc", "K#t9d^raE9Hc"),
    ("IT reset my password to FalconFjord55 this morning", "FalconFjord55"),
    ("Password → Tulip1009?", "Tulip1009?"),
    ("The admin panel is at /admin, log in as admin with Thistle1107%.", "Thistle1107%"),
    ("creds for the router: admin/basil507Jasper", "basil507Jasper"),
    (f"vault login {(p := 'hvs.' + fake(ALNUM, 24, 35))}", p),
    (f"https://api.telegram.org/bot{(p := '5614172641:AA' + fake(URLSAFE, 33, 36))}/getUpdates", p),
    (f"https://discord.com/api/webhooks/8116003213064547197/{(p := fake(URLSAFE, 68, 37))}", p),
    (f"公众号的 AppSecret 是 {(p := fake(HEX, 32, 38))}，别泄露。", p),
    (f"SAS: https://x.blob.core.windows.net/c?sv=2022-11-02&sig={(p := fake(ALNUM, 43, 39) + '%3D')}", p),
    (f"my key is {OPENAI}.", OPENAI),  # a sentence's full stop right after a key
    (f"密钥是{GITHUB}。", GITHUB),  # a Chinese mark right after it
    (f"token = {GITHUB}  # kingfisher:ignore", GITHUB),  # a text never exempts itself
    # found by the blind held-out set (bench/sets/secrets_heldout), then fixed:
    (f'client = Client("AC{fake(HEX, 32, 42)}", "{(p := fake(HEX, 32, 43))}")', p),
    (f"Cookie: csrftoken=x; sessionid={(p := fake(string.ascii_lowercase + string.digits, 32, 44))}", p),
    (f'<add key="ClearTextPassword" value="{(p := fake(ALNUM, 16, 45))}" />', p),
    (f'dsn := "shop:{(p := fake(ALNUM, 15, 46))}@tcp(10.1.2.3:3306)/shop"', p),
    (f"define( 'DB_PASSWORD', '{(p := 'OM^c!I9uX&*bU')}' );", p),
    (f"Uid=report;Pwd={{{(p := 'P&*;vM@fy89!4IC$')}}};TrustServerCertificate=yes", p),
    ("the password is Bramble#Har'bor92, apostrophe included", "Bramble#Har'bor92"),
    ("新密码是 春眠lg#19晓，中文字符也算在里面。", "春眠lg#19晓"),
    ("我把测试库的密码（RHhHKL@4N2wEFii）写在白板上了", "RHhHKL@4N2wEFii"),
    (f"百度地图 AK 是 {(p := fake(ALNUM, 32, 47))}，配额一天 30 万次", p),
    (f"Password for the elastic user (reset with `reset -u elastic`):\n  {(p := fake(ALNUM, 20, 48))}\n", p),
    (f"sqlcmd -S tcp:10.0.8.4,1433 -U sa -P '{(p := 'um%lJq4bEKQ^^r')}' -Q \"SELECT 1\"", p),
    (f"tailscale up --authkey={(p := 'tskey-auth-' + fake(ALNUM, 12, 49) + '-' + fake(ALNUM, 33, 50))}", p),
    # found by the second blind set (bench/sets/secrets_heldout2: tool outputs and notes), then fixed:
    (f"$ terraform output -raw grafana_admin_password\n{(p := 'Cq%xYh^SIXYaiSah6s')}\n$ ", p),
    (f"● Bash(cat config/master.key)\n  ⎿  {(p := fake(HEX, 32, 52))}", p),
    (f'{{"name": "Authorization", "value": "Basic {(p := fake(B64, 24, 53))}="}}', p),
    (f'{{"name": "Cookie", "value": "csrftoken=x; sessionid={(p := fake(HEX, 32, 54))}"}}', p),
    (f'"db_password": {{"sensitive": true, "type": "string", "value": "{(p := fake(ALNUM, 22, 55))}"}}', p),
    ("mysql> CREATE USER 'ro'@'10.%' IDENTIFIED BY 'lIq#oPxj9Vd@1kLXW6';", "lIq#oPxj9Vd@1kLXW6"),
    (f"requirepass {(p := fake(HEX, 64, 56))}", p),
    ("network={\n\tpsk=\"cobalt-pebble-falcon-harbor\"\n}", "cobalt-pebble-falcon-harbor"),
    ("gitlab_rails['smtp_password'] = \"PT-ryG7oPU\"", "PT-ryG7oPU"),
    ('$pass = ConvertTo-SecureString "Huangbo&1981" -AsPlainText -Force', "Huangbo&1981"),
    ("[smtp.gmail.com]:587 carla@gmail.com:pufw osqq jvog sbvw", "pufw osqq jvog sbvw"),
    ("Backup codes (generated 2025-01-16):\n1. 4202 1890\n2. 5657 5391\n3. 8384 1957\n", "5657 5391"),
    ("Enter this setup key instead:\n\n    bzuu tfnf tiaa maxi nwyt ykbv ybkw dwgd\n", "bzuu tfnf tiaa maxi"),
    ("Recovery phrase (12 words):\nscorpion hobby bundle olive melody oyster bubble abandon bicycle "
     "recipe canyon arrow\n", "scorpion hobby bundle olive melody"),
    ("family streaming account -> jonas@gmail.com / Harbor^Granite80", "Harbor^Granite80"),
    (f"AppSecret(小程序密钥)：{(p := fake(HEX, 32, 57))}", p),
    (f"Access Key Id,Secret Access Key\n{fake(ALNUM, 20, 58).upper()},{(p := fake(ALNUM, 40, 59))}", p),
    ("| 主机 | IP | 账号 | 密码 |\n|---|---|---|---|\n| db | 10.0.0.1 | root | p27Q&oZ55LqSbBI2 |",
     "p27Q&oZ55LqSbBI2"),
    (f"✔  Use this token to login on a CI server:\n\n{(p := '1//0' + fake(URLSAFE, 90, 60))}\n", p),
    ("-----BEGIN OpenVPN Static key V1-----\n" + (p := "\n".join(fake(HEX, 32, 61 + i) for i in range(4)))
     + "\n-----END OpenVPN Static key V1-----", p),
    # found by the third blind set (chats, notes and what an assistant remembers), then fixed:
    ("@dan staging db pasword: Juniper#0019  (rotate it after the demo pls)", "Juniper#0019"),
    ("ftp.larkfield.io  u: upload_bot  p: FCXfn1uiR&*5UDn!", "FCXfn1uiR&*5UDn!"),
    ("[10:02] Tom: the staging pw is\n[10:02] Tom: Puffin?2087\n[10:03] Priya: ty", "Puffin?2087"),
    ("张伟 10:41\n服务器密码是\n张伟 10:41\nKnXnaT1RkDVAYCsC\n李娜 10:42\n👌", "KnXnaT1RkDVAYCsC"),
    ("wp-admin: admin / Tapir!8498", "Tapir!8498"),
    ("the QR on the fridge decodes to WIFI:T:WPA;S:Casa_Moreno;P:toucan-4303;;", "toucan-4303"),
    ("the pin for the side door is 9125, it beeps twice then you push hard", "9125"),
    ("The user's debit card PIN is 1384 — they said not to share it.", "1384"),
    ("支付密码我改成184671了，你帮我记一下", "184671"),
    ("门禁密码 211837#，进门后记得关好", "211837#"),
    ("Temp password set to ql2jOc5ZI$Qh, asked them to change it.", "ql2jOc5ZI$Qh"),
    (f"okta api token: SSWS {(p := '009DIkGlYSurG74PGZezwzqwS7oPFXbXftSQBXYlqM')}", p),
    ("pw 👉 Gannet!2573 🙏", "Gannet!2573"),
    ("LINE Notify 權杖 P5Ml1yQk9ikGKf3JEVXyOYfEndpr3txe31gT9UdlRW5 已發行",
     "P5Ml1yQk9ikGKf3JEVXyOYfEndpr3txe31gT9UdlRW5"),
    (f"七牛的 AK/SK 分别是 {fake(URLSAFE, 40, 80)} 和 {(p := fake(ALNUM, 40, 81))}", p),
    (f"callback?state=x&code={(p := fake(ALNUM, 32, 82))}&scope=email", p),
    (f"Reset link: https://portal.example.io/accounts/reset/MTg/{(p := '5247l8-' + fake(HEX, 32, 83))}/", p),
    ("The user's Apple app-specific password (Thunderbird) is vmdh-dfgt-ilet-qiws.", "vmdh-dfgt-ilet-qiws"),
    ("用户的阿里云 AccessKey Secret 为 lWJac4BLeYZDSravFogx1ft3Qv831E（ID：LTAI5thsJbyvqTPViLsufTa3）。",
     "LTAI5thsJbyvqTPViLsufTa3"),
]


@pytest.mark.parametrize(("text", "secret"), WHOLE, ids=range(len(WHOLE)))
def test_shapes_a_hand_written_list_missed_are_redacted_whole(text: str, secret: str) -> None:
    clean, counts = redact(text)
    assert secret not in clean and sum(counts.values()) >= 1, clean
    pieces = {secret[i : i + 5] for i in range(len(secret) - 4)}
    assert not any(piece in clean for piece in pieces if piece not in text.replace(secret, "")), clean


LOOK_ALIKES = [
    "GITHUB_TOKEN=ghp_" + "X" * 36,
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "postgres://user:password@localhost:5432/dbname",
    "mysql://USER:PASS@HOST:3306/DB",
    "api_key = 'YOUR_API_KEY_HERE'",
    "client_secret: ${CLIENT_SECRET:?must be set}",
    "password = getpass.getpass('Password: ')",
    "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
    "const apiKey = process.env.API_KEY;",
    "integrity sha512-" + fake(B64, 86, 40) + "==",
    "STRIPE_PUBLISHABLE_KEY=pk_test_" + fake(ALNUM, 99, 41),
    "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db/password-AbCdEf",
    "-u, --user <user:password>  Server user and password",
    "Your boarding pass: 14B22X, gate 9.",
    "docker run -p 8080:80 nginx && ssh -p 2222 deploy@host",
    "The auth flow uses OAuth with PKCE.",
    "Refunded pi_3MtwBwLkdIwHu7ix28a3tqPa and ch_3MmlLrLkdIwHu7ix0snN0B15 today.",
    "Request id 123e4567-e89b-12d3-a456-426614174000, commit 3f2a9c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f.",
    "Named the repo MyFavouriteProjectName and the branch user_profile_settings_v2.",
    "打码后的密钥：sk-****************************abcd",
    "age public key: age1f4crc4894cefcz09x367nz26ukf0064mz4mg64ga33un3xx7d0r6c6wkev",
    "忘记密码了，重置密码的链接已发送到邮箱。令牌桶算法限流。",
    "export DB_PASSWORD=$(vault read -field=pw secret/db)",
    "Incorrect API key provided: sk-proj-****Q2xd. "
    "You can find your API key at https://platform.openai.com/account/api-keys.",
    "gpg:                using RSA key A08696016A943A3B1725EA255B0F1AB70D8CC48A",
    "kubectl create secret generic db --from-file=password=./db-password.txt --dry-run=client",
    "Build cache key: node-modules-87f584a2231dd5efa6dc239195d38bb71ed1887047e18091125cb17a393bd2bb",
    'Notice that nowhere in the code is the plaintext password "`secret`", we only have the hash.',
    "密码：请联系管理员。密码是什么？",
    # from the second blind set:
    "access_key     ****************79MD shared-credentials-file",
    "  - Token: gho_************************************",
    "      ~ password = (sensitive value)",
    "DB_PASSWORD=${DB_PASSWORD:?set DB_PASSWORD}\nREDIS_PASSWORD=${REDIS_PASSWORD:-}",
    "APP_KEY=\nAPP_DEBUG=true\nDB_PASSWORD=\nMAIL_MAILER=log",
    "$pass = Read-Host -AsSecureString 'Password'",
    "db_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256",
    '"hashed_secret": "' + fake(HEX, 40, 70) + '"',
    "NEXT_PUBLIC_POSTHOG_KEY=phc_" + fake(ALNUM, 43, 71),
    "Cache restored from key: node-modules-Linux-" + fake(HEX, 64, 72),
    '{"name": "cookie", "value": "_ga=GA1.1.868676936.5054110589; theme=dark"}',
    "SQL> conn hr\nEnter password:\nConnected.",
    "[comparing-the-guess-to-the-secret-number]:\nch02-00-guessing-game-tutorial.html#compare",
    "| 服务 | 账号 | 密码 |\n|---|---|---|\n| Grafana | admin | 见密码柜 |\n| Jenkins | 个人账号 | LDAP |",
    # from the third blind set:
    "饿了么红包口令：MHSZSU",
    "I changed my password yesterday; the key is in the drawer. Pass me the token from the meeting.",
    "Your code is in the repo at src/main.py; see the docs at https://example.com/?utm_source=x&ref=home.",
    "[09:14] Priya: I reset my password\n[09:15] Tom: ok\n[09:15] Tom: thanks",
]


@pytest.mark.parametrize("text", LOOK_ALIKES, ids=range(len(LOOK_ALIKES)))
def test_look_alikes_and_stand_ins_are_left_alone(text: str) -> None:
    assert redact(text) == (text, Counter())


def test_where_the_catalogue_cannot_be_had_the_common_prefixes_still_redact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aibuddy_cli.app import doctor as health
    from aibuddy_cli.redaction import catalog as redaction_catalog

    monkeypatch.setattr(redaction_catalog, "_built", [None])
    monkeypatch.setattr(redaction_catalog, "_about", ["ImportError: no build for this platform"])
    assert redact(f"maps {GOOGLE} and password: Hunter2xyz") == (  # AIza…: a prefix of FALLBACK_PREFIXES
        "maps [redacted: api key] and password: [redacted: password]",
        Counter({"api key": 1, "password": 1}),
    )
    key = "sk-" + fake(ALNUM, 40, 51)
    assert redact(f"my key {key} and password: Hunter2xyz") == (
        "my key [redacted: api key] and password: [redacted: password]",
        Counter({"api key": 1, "password": 1}),
    )
    check = health.secrets_check()
    assert not check.ok and "common prefixes only" in check.detail and "ImportError" in check.detail
