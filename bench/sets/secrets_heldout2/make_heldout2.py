#!/usr/bin/env python3
# ruff: noqa: E501  (a data generator: its lines are the literal texts of the set)
"""Write the second blind held-out set for the secret redactor (credentials.jsonl, lookalikes.jsonl).

Written without the redactor's code, its tests or the two earlier sets in view. The angle of this
batch: what passes through an AI coding agent's transcript and a person's notes over a month — tool
outputs (env dumps, `cat .env`, `docker inspect`, `kubectl get secret -o yaml`, `terraform output`,
git/pip/npm/maven/docker config files, CI logs, HAR and Postman exports, SQL, Ansible/Helm values,
systemd units, PowerShell, Java/Rails/Laravel/WordPress settings, Redis/Kafka/SMTP/LDAP/VPN/Wi-Fi
configs), notes and chats in English and Chinese; and the same outputs with nothing secret in them.

Every value is fabricated at random in its provider's documented shape (gitleaks' rules and the
providers' pages); none is a real key, none holds a stand-in word (EXAMPLE, test, ...) or a run such as
1234 or aaaa. Run: python make_heldout2.py [FOLDER]  (rewrites both files, here by default).

Decisions on what counts as a credential here (the `secret` field lists exactly what must go):
- base64 of a password or key (a Kubernetes Secret's `data:`, a docker config `auth`, HTTP Basic)
  IS the credential: base64 is an encoding anyone reverses, so the encoded string must go.
- 2FA backup/recovery codes ARE credentials (each logs in in place of the second factor); every code
  is listed. TOTP seeds (otpauth `secret=`, "setup key") are credentials.
- A wallet recovery phrase (12/24 BIP39 words) IS a credential (it is the wallet's private key); the
  whole phrase is the secret. A BitLocker recovery key and a 1Password Secret Key are too.
- Identifiers that grant nothing alone are not listed as the secret even when printed beside it:
  AWS/Aliyun/Tencent access key IDs, usernames, merchant ids, app ids, key ids, token accessors.
- Ciphertext whose key is elsewhere (Ansible Vault, SOPS ENC[...], Rails credentials.yml.enc,
  sealed secrets, jasypt ENC(...)) is NOT a credential: those are look-alikes, as are hashes,
  digests, public keys, certificates, publishable keys (Stripe pk_live_, Mapbox pk., a Sentry DSN)
  and public API page tokens/cursors (nextPageToken, pageToken, after= cursors), which grant nothing.
- A provider's documented constant start (`ghp_`, `sk-proj-`, `SEC`, the base64 of a PEM header...)
  is recorded as `fixed_prefix`: it may stay in the output.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20260915
R = random.Random(SEED)
HERE = Path(__file__).resolve().parent

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UPPER + "234567"
URLSAFE_SYMBOLS = "!-_.~*"

BANNED = ("example", "test", "sample", "dummy", "fake", "demo", "xxxx", "changeme", "placeholder", "your")


def plausible(value: str) -> bool:
    """No stand-in word and no run of four equal, ascending or descending characters."""
    low = value.lower()
    if any(word in low for word in BANNED):
        return False
    for i in range(len(value) - 3):
        steps = {ord(value[i + k + 1]) - ord(value[i + k]) for k in range(3)}
        if len(steps) == 1 and steps.pop() in (-1, 0, 1):
            return False
    return True


def draw(make: Callable[[], str]) -> str:
    for _ in range(1000):
        value = make()
        if plausible(value):
            return value
    raise RuntimeError("no plausible value drawn")


def chars(alphabet: str, n: int) -> str:
    return draw(lambda: "".join(R.choice(alphabet) for _ in range(n)))


def alnum(n: int) -> str:
    return chars(ALNUM, n)


def hexs(n: int) -> str:
    return chars(HEX, n)


def b64(n: int) -> str:
    return chars(B64, n)


def b64url(n: int) -> str:
    return chars(B64URL, n)


def b32(n: int) -> str:
    return chars(B32, n)


def lower(n: int) -> str:
    return chars(LOWER, n)


def upper_alnum(n: int) -> str:
    return chars(UPPER + DIGITS, n)


def digits(n: int) -> str:
    return draw(lambda: R.choice("123456789") + "".join(R.choice(DIGITS) for _ in range(n - 1)))


def b64_of(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def b64url_nopad(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def random_b64_bytes(n: int) -> str:
    """base64 of n random bytes (a key as `openssl rand -base64 n` prints it)."""
    return draw(lambda: b64_of(bytes(R.getrandbits(8) for _ in range(n))))


def uid() -> str:
    return str(uuid.UUID(int=R.getrandbits(128), version=4))


def pick(options: list[Any] | tuple[Any, ...]) -> Any:
    return R.choice(options)


# ---------------------------------------------------------------------------------------------
# people, machines, places
# ---------------------------------------------------------------------------------------------

FIRST = ["maya", "tobias", "ines", "kwame", "lena", "arjun", "sofia", "dmitri", "noor", "oliver",
         "priya", "mateo", "hana", "felix", "amara", "jonas", "yuki", "carla", "emeka", "greta"]
PINYIN = ["zhangwei", "liuyang", "wangfang", "chenjie", "lihua", "zhaolei", "sunli", "zhoumin",
          "wuhao", "xuting", "huangbo", "linjing"]
ZH_NAMES = ["王磊", "张伟", "刘洋", "陈杰", "李华", "赵蕾", "孙丽", "周敏", "吴昊", "徐婷", "黄波", "林静"]
ORGS = ["northwind", "lumen-labs", "brightpath", "kestrel", "orbitly", "fernhill", "tidewater",
        "quillsoft", "harborline", "copperleaf", "vantage-io", "mossgrove"]
APPS = ["billing", "ledger", "checkout", "inventory", "notifier", "reports", "gateway", "search",
        "onboarding", "scheduler", "payouts", "catalog"]
WORDS = ["marmot", "lantern", "quokka", "saffron", "harbor", "tundra", "pylon", "copper", "nimbus",
         "orchid", "falcon", "juniper", "walrus", "cobalt", "tamarind", "breeze", "glacier",
         "sparrow", "thistle", "basalt", "meadow", "ember", "pebble", "lagoon", "cinder", "willow",
         "otter", "fennel", "granite", "mango", "zephyr", "bramble", "hazel", "puffin", "quartz"]
# words of the BIP39 English list (bitcoin/bips, bip-0039/english.txt)
BIP39 = ("abandon ability absorb abstract accident acoustic adapt advice afford agent airport alarm "
         "album alley almost amateur anchor ancient angle animal ankle antenna anxiety apology arctic "
         "arena armor arrow artwork aspect asthma athlete atom auction august autumn avocado awkward "
         "bacon badge balcony bamboo banner barrel basket beach beauty begin behave bench betray "
         "bicycle biology blanket blossom blush bonus border bounce bracket brass breeze brick broccoli "
         "bronze bubble buffalo bundle burger cabbage cactus camera canal canoe canvas canyon carbon "
         "cargo carpet castle catalog cattle celery cement cereal chalk champion chaos cherry chimney "
         "cinnamon citizen clarify clinic clutch coconut coffee comic copper coral cotton cousin coyote "
         "cradle crater cricket crouch crystal cushion cycle dawn debris decade deer dentist desert "
         "diamond diesel dinosaur dolphin donkey dragon drastic dune dwarf eagle echo elbow elephant "
         "embrace emerge engine enrich envelope episode erosion essay ethics evoke exhaust exile "
         "exotic fabric faculty fatigue feature fence festival fiber fiction fitness flame "
         "flavor fluid foam fossil fragile frost gadget galaxy garlic gauge giraffe glimpse "
         "gospel gravity guitar hamster harvest hazard hedgehog helmet hobby hockey hollow "
         "humble hybrid icon imitate immune index infant inhale inmate ivory jaguar "
         "jazz jelly jungle kangaroo ketchup kidney kitten kiwi ladder lava lawsuit lemon "
         "leopard liberty lizard lobster lottery lumber lunar lyrics magnet mammal mango maple marble "
         "meadow melody mimic mosquito muffin mushroom napkin nephew noodle olive onion orbit "
         "orchard ostrich oyster paddle panther parrot peanut pelican pepper piano pigeon pioneer "
         "pizza planet plastic pony pottery pudding pumpkin puzzle pyramid quantum rabbit raccoon "
         "radar raven razor recipe ribbon rocket rookie saddle salmon satoshi sausage scorpion "
         "shrimp siren sketch slender slogan snack soccer spider spoon squirrel stadium stereo "
         "stool sugar sunset swamp symbol syrup tackle tattoo tenant thunder timber tobacco tomato "
         "tornado tortoise trophy trumpet tuition tunnel turtle umbrella uncle unveil urban vacuum "
         "valley velvet venue veteran violin volcano voyage walnut wasp weasel whale wheat whisper "
         "wolf wrestle yellow zebra").split()
TLDS = ["io", "net", "dev", "co", "cloud", "app"]


def org() -> str:
    return pick(ORGS)


def person() -> str:
    return pick(FIRST)


def domain() -> str:
    return f"{org()}.{pick(TLDS)}"


def host(kind: str = "db") -> str:
    return f"{kind}-{R.randint(1, 9):02d}.{pick(['prod', 'stg', 'internal', 'eu1', 'us2'])}.{domain()}"


def ip(private: bool = True) -> str:
    if private:
        return pick([f"10.{R.randint(0, 40)}.{R.randint(0, 254)}.{R.randint(2, 250)}",
                     f"192.168.{R.randint(0, 60)}.{R.randint(2, 250)}",
                     f"172.{R.randint(16, 31)}.{R.randint(0, 254)}.{R.randint(2, 250)}"])
    return f"{R.randint(39, 223)}.{R.randint(0, 254)}.{R.randint(0, 254)}.{R.randint(2, 250)}"


def day() -> str:
    return f"2025-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}"


def clock() -> str:
    return f"{R.randint(8, 23):02d}:{R.randint(0, 59):02d}"


# ---------------------------------------------------------------------------------------------
# passwords as people and generators make them
# ---------------------------------------------------------------------------------------------


def password(style: str | None = None, safe: bool = False) -> str:
    """A password in one of the shapes people use; `safe` keeps to characters a URL userinfo or a
    quoted shell word takes without escaping."""
    symbols = URLSAFE_SYMBOLS if safe else "!#%^*-_+=.@&"

    def make() -> str:
        kind = style or pick(["words", "generated", "short", "pinyin", "passphrase", "generated"])
        if kind == "words":
            a, b = R.sample(WORDS, 2)
            return f"{a.capitalize()}{R.choice(symbols)}{b.capitalize()}{R.randint(10, 99)}"
        if kind == "generated":
            return "".join(R.choice(ALNUM + symbols) for _ in range(R.randint(18, 26)))
        if kind == "short":
            core = [R.choice(UPPER), R.choice(LOWER), R.choice(DIGITS), R.choice(symbols)]
            core += [R.choice(ALNUM) for _ in range(R.randint(6, 8))]
            R.shuffle(core)
            return "".join(core)
        if kind == "pinyin":
            return f"{pick(PINYIN).capitalize()}{R.choice(symbols)}{R.randint(1960, 2024)}"
        if kind == "passphrase":
            return "-".join(R.sample(WORDS, 4))
        if kind == "alnum":
            return "".join(R.choice(ALNUM) for _ in range(R.randint(20, 32)))
        raise ValueError(kind)

    return draw(make)


# ---------------------------------------------------------------------------------------------
# provider-shaped values
# ---------------------------------------------------------------------------------------------


def openai_key() -> str:
    return f"sk-proj-{b64url(74)}T3BlbkFJ{b64url(74)}"


def openai_legacy() -> str:
    return f"sk-{alnum(20)}T3BlbkFJ{alnum(20)}"


def anthropic_key() -> str:
    return f"sk-ant-api03-{b64url(93)}AA"


def aws_key_id(prefix: str = "AKIA") -> str:
    return prefix + chars(UPPER + "234567", 16)


def aws_secret() -> str:
    return chars(ALNUM + "+/", 40)


def aws_session_token() -> str:
    return "IQoJb3JpZ2luX2Vj" + chars(ALNUM + "+/", R.randint(340, 420)) + "="


def github(prefix: str = "ghp_") -> str:
    return prefix + alnum(36)


def github_fine() -> str:
    return f"github_pat_{alnum(22)}_{alnum(59)}"


def gitlab(prefix: str = "glpat-") -> str:
    return prefix + chars(ALNUM + "-_", 20)


def slack_bot() -> str:
    return f"xoxb-{digits(12)}-{digits(13)}-{alnum(24)}"


def stripe_secret(prefix: str = "sk_live_") -> str:
    return prefix + alnum(R.choice([24, 99]))


def hf_token() -> str:
    return "hf_" + chars(LOWER + UPPER, 34)


def npm_token() -> str:
    return "npm_" + alnum(36)


def pypi_token() -> str:
    return "pypi-AgEIcHlwaS5vcmc" + b64url(R.randint(150, 180))


def docker_pat() -> str:
    return "dckr_pat_" + b64url(27)


def jwt(payload: dict[str, Any], alg: str = "HS256") -> str:
    head = b64url_nopad(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url_nopad(json.dumps(payload, separators=(",", ":")).encode())
    return f"{head}.{body}.{b64url(43 if alg.startswith('HS') else 342)}"


def user_jwt() -> str:
    now = R.randint(1_735_000_000, 1_760_000_000)
    return jwt({"sub": digits(8), "email": f"{person()}@{domain()}", "role": "authenticated",
                "iat": now, "exp": now + 3600})


def pem_body(lines: int, first: str = "MIIE") -> str:
    rows = [first + b64(64 - len(first))] + [b64(64) for _ in range(lines - 2)]
    return "\n".join(rows + [b64(R.randint(20, 60)) + "=="])


def azure_client_secret() -> str:
    return f"{alnum(3)}{R.randint(0, 9)}Q~{chars(ALNUM + '_~.-', 34)}"


def azure_storage_key() -> str:
    return random_b64_bytes(64)


def sendgrid() -> str:
    return f"SG.{b64url(22)}.{b64url(43)}"


def confluent_secret() -> str:
    return chars(ALNUM + "+/", 64)


def gmail_app_password() -> str:
    return " ".join(lower(4) for _ in range(4))


def seed_phrase(words: int) -> str:
    return " ".join(R.sample(BIP39, words))


# ---------------------------------------------------------------------------------------------
# the two sets: each template is a function returning one item; registered in order
# ---------------------------------------------------------------------------------------------

CRED_TEMPLATES: list[tuple[str, str, str, int, Callable[[], tuple[Any, ...]]]] = []
LOOK_TEMPLATES: list[tuple[str, str, int, Callable[[], str]]] = []


def cred(provider: str, fmt: str, lang: str = "en", times: int = 1) -> Callable[..., Any]:
    """Register a credential template: it returns (text, secret or [secrets][, fixed_prefix list])."""

    def register(fn: Callable[[], tuple[Any, ...]]) -> Callable[[], tuple[Any, ...]]:
        CRED_TEMPLATES.append((provider, fmt, lang, times, fn))
        return fn

    return register


def look(category: str, lang: str = "en", times: int = 1) -> Callable[..., Any]:
    """Register a look-alike template: it returns a text with no secret in it."""

    def register(fn: Callable[[], str]) -> Callable[[], str]:
        LOOK_TEMPLATES.append((category, lang, times, fn))
        return fn

    return register


def env_lines(user: str, extra: int = 8) -> list[str]:
    """Ordinary variables of a developer's shell."""
    home = f"/home/{user}"
    pool = [
        f"HOME={home}", f"USER={user}", f"LOGNAME={user}", "SHELL=/bin/bash", "LANG=en_US.UTF-8",
        "TERM=xterm-256color", f"PWD={home}/src/{pick(APPS)}", "SHLVL=1", "EDITOR=nvim",
        f"PATH={home}/.local/bin:{home}/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"XDG_RUNTIME_DIR=/run/user/{R.randint(1000, 1010)}", "COLORTERM=truecolor",
        f"SSH_AUTH_SOCK=/tmp/ssh-{alnum(10)}/agent.{R.randint(1000, 99999)}",
        f"NVM_DIR={home}/.nvm", f"GOPATH={home}/go", "PAGER=less", "LESS=-R",
        f"VIRTUAL_ENV={home}/src/{pick(APPS)}/.venv", "PYTHONDONTWRITEBYTECODE=1",
        f"HOSTNAME={pick(['devbox', 'ws', 'lt'])}-{R.randint(10, 99)}", "TZ=Europe/Berlin",
        f"KUBECONFIG={home}/.kube/config", "DOCKER_BUILDKIT=1", "NODE_ENV=development",
        f"OLDPWD={home}", "_=/usr/bin/env", "MAIL=/var/mail/" + user,
    ]
    return R.sample(pool, extra)


# =============================================================================================
# credentials, English: tool outputs in an agent's transcript
# =============================================================================================


@cred("openai", "env-dump")
def _env_openai() -> tuple[Any, ...]:
    key = openai_key()
    lines = env_lines(person(), 10) + [f"OPENAI_API_KEY={key}"]
    return "$ env | sort\n" + "\n".join(sorted(lines)), key, ["sk-proj-"]


@cred("aws", "env-dump")
def _printenv_aws() -> tuple[Any, ...]:
    secret = aws_secret()
    text = (f"$ printenv | grep AWS\nAWS_DEFAULT_REGION={pick(['eu-west-1', 'us-east-2', 'ap-southeast-1'])}\n"
            f"AWS_ACCESS_KEY_ID={aws_key_id()}\nAWS_SECRET_ACCESS_KEY={secret}\nAWS_PAGER=")
    return text, secret


@cred("multiple", "env-dump")
def _env_many() -> tuple[Any, ...]:
    ant, gh = anthropic_key(), github()
    lines = env_lines(person(), 14) + [f"ANTHROPIC_API_KEY={ant}", f"GITHUB_TOKEN={gh}"]
    R.shuffle(lines)
    return "Tool result (Bash: env):\n" + "\n".join(lines), [ant, gh], ["sk-ant-api03-", "ghp_"]


@cred("multiple", "dotenv")
def _dotenv_node() -> tuple[Any, ...]:
    pw, sk = password(safe=True), stripe_secret()
    text = (f"$ cat .env\nNODE_ENV=production\nPORT=3000\n"
            f"DATABASE_URL=postgresql://{pick(APPS)}:{pw}@{host()}:5432/{pick(APPS)}?sslmode=require\n"
            f"STRIPE_SECRET_KEY={sk}\nNEXT_PUBLIC_SITE_URL=https://{domain()}\nLOG_LEVEL=info")
    return text, [pw, sk], ["sk_live_"]


@cred("django", "dotenv")
def _dotenv_django() -> tuple[Any, ...]:
    key = chars(LOWER + DIGITS + "!@#%^&*(-_=+)", 50)
    pw = password()
    text = (f"     1\tDEBUG=False\n     2\tSECRET_KEY='{key}'\n     3\tALLOWED_HOSTS={domain()},localhost\n"
            f"     4\tEMAIL_HOST=smtp.{domain()}\n     5\tEMAIL_HOST_USER=noreply\n     6\tEMAIL_HOST_PASSWORD={pw}")
    return text, [key, pw]


@cred("postgres-password", "docker-inspect")
def _inspect_pg() -> tuple[Any, ...]:
    pw = password()
    env = [f"POSTGRES_PASSWORD={pw}", "POSTGRES_USER=app", "POSTGRES_DB=app",
           "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/16/bin",
           "GOSU_VERSION=1.17", "LANG=en_US.utf8", "PG_MAJOR=16", "PG_VERSION=16.4-1.pgdg120+2",
           "PGDATA=/var/lib/postgresql/data"]
    body = json.dumps([{"Id": hexs(64), "Config": {"Hostname": hexs(12), "Env": env,
                                                   "Image": "postgres:16"}}], indent=4)
    return "$ docker inspect pg\n" + body, pw


@cred("mysql-password", "docker-inspect")
def _inspect_mysql() -> tuple[Any, ...]:
    root, app = password(), password()
    env = [f"MYSQL_ROOT_PASSWORD={root}", "MYSQL_DATABASE=shop", "MYSQL_USER=shop",
           f"MYSQL_PASSWORD={app}", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "GOSU_VERSION=1.17", "MYSQL_MAJOR=8.4", "MYSQL_VERSION=8.4.2-1.el9", "MYSQL_SHELL_VERSION=8.4.1-1.el9"]
    text = ("$ docker inspect --format '{{json .Config.Env}}' mysql-1 | jq .\n" + json.dumps(env, indent=2))
    return text, [root, app]


@cred("datadog", "docker-inspect")
def _inspect_dd() -> tuple[Any, ...]:
    key = hexs(32)
    env = [f"DD_API_KEY={key}", "DD_SITE=datadoghq.eu", "DD_LOGS_ENABLED=true",
           "DD_APM_NON_LOCAL_TRAFFIC=true", "DOCKER_DD_AGENT=true",
           "PATH=/opt/datadog-agent/bin/agent/:/opt/datadog-agent/embedded/bin/:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    return '"Env": ' + json.dumps(env, indent=12), key


@cred("k8s-secret", "kubectl-yaml", times=2)
def _k8s_yaml() -> tuple[Any, ...]:
    user, pw = pick(APPS), password()
    enc = b64_of(pw.encode())
    text = (f"$ kubectl get secret {user}-db -n {pick(['prod', 'payments', 'default'])} -o yaml\napiVersion: v1\n"
            f"data:\n  password: {enc}\n  username: {b64_of(user.encode())}\n  host: {b64_of(host().encode())}\n"
            f"kind: Secret\nmetadata:\n  creationTimestamp: \"{day()}T{clock()}:11Z\"\n  name: {user}-db\n"
            f"  resourceVersion: \"{digits(8)}\"\n  uid: {uid()}\ntype: Opaque")
    return text, enc


@cred("stripe", "kubectl-json")
def _k8s_json() -> tuple[Any, ...]:
    sk = stripe_secret("rk_live_")
    enc = b64_of(sk.encode())
    body = {"apiVersion": "v1", "data": {"STRIPE_API_KEY": enc, "STRIPE_ACCOUNT": b64_of(b"acct_" + alnum(16).encode())},
            "kind": "Secret", "metadata": {"name": "stripe", "namespace": "billing", "uid": uid()},
            "type": "Opaque"}
    return "$ kubectl get secret stripe -n billing -o json\n" + json.dumps(body, indent=4), enc


@cred("postgres-password", "shell-output")
def _k8s_decode() -> tuple[Any, ...]:
    pw = password()
    text = (f"$ kubectl get secret {pick(APPS)}-pg -o jsonpath='{{.data.password}}' | base64 -d; echo\n{pw}\n$ ")
    return text, pw


@cred("rds-password", "terraform-output")
def _tf_json() -> tuple[Any, ...]:
    pw = password("alnum")
    body = {"db_endpoint": {"sensitive": False, "type": "string",
                            "value": f"{pick(APPS)}.c{alnum(10).lower()}.eu-central-1.rds.amazonaws.com:5432"},
            "db_password": {"sensitive": True, "type": "string", "value": pw},
            "vpc_id": {"sensitive": False, "type": "string", "value": "vpc-0" + hexs(16)}}
    return "$ terraform output -json\n" + json.dumps(body, indent=2), pw


@cred("generic-password", "terraform-output")
def _tf_raw() -> tuple[Any, ...]:
    pw = password("generated")
    return f"$ terraform output -raw grafana_admin_password\n{pw}$ ", pw


@cred("github", "git-config")
def _git_config_list() -> tuple[Any, ...]:
    tok = github("ghs_")
    o, a = org(), pick(APPS)
    text = (f"$ git config --list --show-origin | grep -v alias\nfile:/etc/gitconfig\tcore.autocrlf=input\n"
            f"file:{'/home/runner'}/.gitconfig\tuser.name=github-actions[bot]\n"
            f"file:.git/config\tcore.repositoryformatversion=0\nfile:.git/config\tcore.bare=false\n"
            f"file:.git/config\tremote.origin.url=https://x-access-token:{tok}@github.com/{o}/{a}.git\n"
            f"file:.git/config\tremote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\n"
            f"file:.git/config\tbranch.main.remote=origin")
    return text, tok, ["ghs_"]


@cred("multiple", "git-credentials")
def _git_credentials() -> tuple[Any, ...]:
    gh, gl = github(), gitlab()
    text = (f"$ cat ~/.git-credentials\nhttps://{person()}:{gh}@github.com\n"
            f"https://oauth2:{gl}@gitlab.{domain()}")
    return text, [gh, gl], ["ghp_", "glpat-"]


@cred("jfrog", "pip-config")
def _pip_config() -> tuple[Any, ...]:
    key = "AKCp" + alnum(69)
    o = org()
    text = (f"$ pip config list\nglobal.extra-index-url='https://ci-{person()}:{key}@{o}.jfrog.io/artifactory/api/pypi/pypi-virtual/simple'\n"
            f"global.timeout='60'\ninstall.trusted-host='{o}.jfrog.io'")
    return text, key, ["AKCp"]


@cred("gitlab", "pip-config")
def _pip_conf_gitlab() -> tuple[Any, ...]:
    tok = gitlab()
    text = (f"# ~/.config/pip/pip.conf\n[global]\nindex-url = https://pypi.org/simple\n"
            f"extra-index-url = https://__token__:{tok}@gitlab.com/api/v4/projects/{digits(8)}/packages/pypi/simple")
    return text, tok, ["glpat-"]


@cred("npm", "npmrc")
def _npmrc() -> tuple[Any, ...]:
    tok = npm_token()
    text = (f"$ cat ~/.npmrc\nregistry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={tok}\n"
            "fund=false\naudit-level=high")
    return text, tok, ["npm_"]


@cred("github", "npmrc")
def _npmrc_github() -> tuple[Any, ...]:
    tok = github()
    text = (f"@{org()}:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={tok}\n"
            "always-auth=true")
    return text, tok, ["ghp_"]


@cred("nexus", "maven-settings")
def _m2() -> tuple[Any, ...]:
    pw = password()
    text = (f"<settings>\n  <servers>\n    <server>\n      <id>nexus-releases</id>\n      <username>deploy</username>\n"
            f"      <password>{pw}</password>\n    </server>\n  </servers>\n  <mirrors>\n    <mirror>\n"
            f"      <id>central</id>\n      <url>https://nexus.{domain()}/repository/maven-public/</url>\n"
            "      <mirrorOf>*</mirrorOf>\n    </mirror>\n  </mirrors>\n</settings>")
    return text, pw


@cred("docker-registry", "docker-config")
def _docker_config() -> tuple[Any, ...]:
    user, pat = person(), docker_pat()
    auth = b64_of(f"{user}:{pat}".encode())
    body = {"auths": {"https://index.docker.io/v1/": {"auth": auth},
                      f"registry.{domain()}": {}}, "currentContext": "desktop-linux"}
    return "$ cat ~/.docker/config.json\n" + json.dumps(body, indent="\t"), auth


@cred("gitlab", "docker-config")
def _docker_config_gitlab() -> tuple[Any, ...]:
    tok = gitlab()
    auth = b64_of(f"ci-bot:{tok}".encode())
    text = ('{\n  "auths": {\n    "registry.gitlab.com": {\n      "auth": "' + auth + '"\n    }\n  },\n'
            '  "credsStore": ""\n}')
    return text, auth


@cred("openai", "notebook")
def _nb_openai() -> tuple[Any, ...]:
    key = openai_key()
    text = (f"In [3]: import os\n   ...: os.environ[\"OPENAI_API_KEY\"] = \"{key}\"\n"
            "   ...: from openai import OpenAI\n   ...: client = OpenAI()\n\nIn [4]: client.models.list().data[0].id\n"
            "Out[4]: 'gpt-4o-mini'")
    return text, key, ["sk-proj-"]


@cred("anthropic", "notebook")
def _colab_env() -> tuple[Any, ...]:
    key = anthropic_key()
    text = (f"%env ANTHROPIC_API_KEY={key}\n!pip -q install anthropic\n"
            "import anthropic\nclient = anthropic.Anthropic()")
    return text, key, ["sk-ant-api03-"]


@cred("huggingface", "notebook")
def _nb_hf() -> tuple[Any, ...]:
    tok = hf_token()
    text = (f"from huggingface_hub import login\nlogin(token=\"{tok}\")\n\n"
            "Token is valid (permission: write).\nYour token has been saved to /root/.cache/huggingface/token\n"
            "Login successful")
    return text, tok, ["hf_"]


@cred("jwt", "postman")
def _postman_bearer() -> tuple[Any, ...]:
    tok = user_jwt()
    body = {"info": {"_postman_id": uid(), "name": f"{pick(APPS)} API",
                     "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
            "auth": {"type": "bearer", "bearer": [{"key": "token", "value": tok, "type": "string"}]},
            "item": [{"name": "List invoices", "request": {"method": "GET",
                                                           "url": "{{baseUrl}}/v1/invoices?limit=20"}}]}
    return json.dumps(body, indent="\t"), tok


@cred("generic-api-key", "postman")
def _postman_apikey() -> tuple[Any, ...]:
    key = alnum(40)
    body = {"name": "Create shipment", "request": {"method": "POST", "header": [
        {"key": "Content-Type", "value": "application/json"},
        {"key": "X-API-Key", "value": key, "type": "text"}],
        "url": {"raw": f"https://api.{domain()}/v2/shipments", "protocol": "https"}}}
    return json.dumps(body, indent=2), key


@cred("http-auth", "har")
def _har_bearer_cookie() -> tuple[Any, ...]:
    tok, sess = b64url(R.randint(40, 64)), hexs(32)
    headers = [{"name": ":authority", "value": f"app.{domain()}"}, {"name": "accept", "value": "application/json"},
               {"name": "authorization", "value": f"Bearer {tok}"},
               {"name": "cookie", "value": f"_session_id={sess}; theme=dark; _ga=GA1.1.{digits(9)}.{digits(10)}"},
               {"name": "user-agent", "value": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"}]
    body = {"request": {"method": "GET", "url": f"https://app.{domain()}/api/me", "httpVersion": "h2",
                        "headers": headers}}
    return json.dumps(body, indent=2), [tok, sess]


@cred("basic-auth", "har")
def _har_basic() -> tuple[Any, ...]:
    enc = b64_of(f"{person()}:{password()}".encode())
    text = ('        "headers": [\n          {\n            "name": "Authorization",\n'
            f'            "value": "Basic {enc}"\n          }},\n          {{\n            "name": "Accept",\n'
            '            "value": "*/*"\n          }\n        ],')
    return text, enc


@cred("session-cookie", "curl")
def _curl_nextauth() -> tuple[Any, ...]:
    jwe = f"eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..{b64url(22)}.{b64url(R.randint(300, 420))}.{b64url(22)}"
    text = (f"curl 'https://{domain()}/api/auth/session' \\\n  -H 'accept: */*' \\\n"
            f"  -H 'cookie: __Secure-next-auth.callback-url=https%3A%2F%2F{domain()}; __Secure-next-auth.session-token={jwe}' \\\n"
            "  -H 'referer: https://app/' \\\n  --compressed")
    return text, jwe


@cred("session-cookie", "har")
def _har_django() -> tuple[Any, ...]:
    sid = chars(LOWER + DIGITS, 32)
    text = (f'{{"name": "Cookie", "value": "csrftoken={alnum(32)}; sessionid={sid}; django_language=en"}}')
    return text, sid


@cred("mysql-password", "sql")
def _sql_mysql() -> tuple[Any, ...]:
    pw = password()
    text = (f"mysql> CREATE USER 'report_ro'@'10.%' IDENTIFIED BY '{pw}';\nQuery OK, 0 rows affected (0.02 sec)\n\n"
            "mysql> GRANT SELECT ON analytics.* TO 'report_ro'@'10.%';\nQuery OK, 0 rows affected (0.01 sec)")
    return text, pw


@cred("postgres-password", "sql")
def _sql_pg() -> tuple[Any, ...]:
    pw = password()
    text = (f"{pick(APPS)}=# ALTER ROLE app_rw WITH LOGIN PASSWORD '{pw}' VALID UNTIL '2026-06-30';\nALTER ROLE\n"
            f"{pick(APPS)}=# GRANT CONNECT ON DATABASE {pick(APPS)} TO app_rw;\nGRANT")
    return text, pw


@cred("mssql-password", "sql")
def _sql_mssql() -> tuple[Any, ...]:
    pw = password()
    text = (f"USE [master]\nGO\nCREATE LOGIN [etl_loader] WITH PASSWORD = N'{pw}', DEFAULT_DATABASE = [Staging], "
            "CHECK_EXPIRATION = OFF, CHECK_POLICY = ON\nGO")
    return text, pw


@cred("oracle-password", "sql")
def _sql_oracle() -> tuple[Any, ...]:
    pw = password("short")
    text = f"SQL> ALTER USER hr IDENTIFIED BY \"{pw}\" ACCOUNT UNLOCK;\n\nUser altered.\n\nSQL> conn hr\nEnter password:\nConnected."
    return text, pw


@cred("generic-password", "ansible")
def _ansible_vars() -> tuple[Any, ...]:
    become, root = password(), password()
    text = (f"# group_vars/dbservers.yml\nansible_user: deploy\nansible_become: true\n"
            f"ansible_become_password: {become}\nmysql_root_password: \"{root}\"\nmysql_bind_address: 0.0.0.0\n"
            "mysql_max_connections: 400")
    return text, [become, root]


@cred("ssh-password", "ansible")
def _ansible_inventory() -> tuple[Any, ...]:
    pw = password("short")
    text = (f"[web]\nweb01 ansible_host={ip()} ansible_user=deploy\n"
            f"web02 ansible_host={ip()} ansible_user=deploy ansible_password='{pw}' ansible_port=2222\n\n"
            "[web:vars]\nansible_python_interpreter=/usr/bin/python3")
    return text, pw


@cred("postgres-password", "helm-values")
def _helm_values() -> tuple[Any, ...]:
    admin, app = password("alnum"), password()
    text = (f"# values-prod.yaml\npostgresql:\n  enabled: true\n  auth:\n    username: {pick(APPS)}\n"
            f"    postgresPassword: {admin}\n    password: \"{app}\"\n    database: {pick(APPS)}\n"
            "  primary:\n    persistence:\n      size: 50Gi")
    return text, [admin, app]


@cred("redis-password", "helm-command")
def _helm_set() -> tuple[Any, ...]:
    pw = password("alnum")
    text = (f"$ helm upgrade --install cache bitnami/redis -n {pick(APPS)} \\\n    --set architecture=standalone \\\n"
            f"    --set auth.password={pw} \\\n    --set master.persistence.size=8Gi\nRelease \"cache\" has been upgraded. Happy Helming!")
    return text, pw


@cred("grafana", "systemd")
def _systemd_env() -> tuple[Any, ...]:
    tok = f"glsa_{alnum(32)}_{hexs(8)}"
    text = (f"# /etc/systemd/system/dash-sync.service\n[Unit]\nDescription=Sync dashboards\n\n[Service]\n"
            f"Type=oneshot\nUser=grafana-sync\nEnvironment=\"GRAFANA_URL=https://grafana.{domain()}\"\n"
            f"Environment=\"GRAFANA_TOKEN={tok}\"\nExecStart=/usr/local/bin/dash-sync --prune\n")
    return text, tok, ["glsa_"]


@cred("postgres-password", "systemd")
def _systemctl_show() -> tuple[Any, ...]:
    pw = password(safe=True)
    text = (f"$ systemctl show -p Environment {pick(APPS)}.service\n"
            f"Environment=LANG=C.UTF-8 PGHOST={host()} PGUSER=svc PGPASSWORD={pw} RUST_LOG=info")
    return text, pw


@cred("openai", "powershell")
def _ps_env() -> tuple[Any, ...]:
    key = openai_key()
    text = (f"PS C:\\Users\\{person()}\\src> $env:OPENAI_API_KEY = \"{key}\"\n"
            f"PS C:\\Users\\{person()}\\src> python .\\summarize.py .\\notes\\")
    return text, key, ["sk-proj-"]


@cred("windows-password", "powershell")
def _ps_securestring() -> tuple[Any, ...]:
    pw = password()
    text = (f"$user = \"CORP\\svc_backup\"\n$pass = ConvertTo-SecureString \"{pw}\" -AsPlainText -Force\n"
            "$cred = New-Object System.Management.Automation.PSCredential($user, $pass)\n"
            f"Invoke-Command -ComputerName FS0{R.randint(1, 9)} -Credential $cred -ScriptBlock {{ Get-PSDrive }}")
    return text, pw


@cred("azure-ad", "powershell")
def _ps_azure() -> tuple[Any, ...]:
    sec = azure_client_secret()
    text = (f"$env:AZURE_TENANT_ID = \"{uid()}\"\n$env:AZURE_CLIENT_ID = \"{uid()}\"\n"
            f"$env:AZURE_CLIENT_SECRET = \"{sec}\"\nConnect-AzAccount -ServicePrincipal -Tenant $env:AZURE_TENANT_ID")
    return text, sec


@cred("multiple", "java-properties")
def _java_props() -> tuple[Any, ...]:
    db, mail = password(), password()
    text = (f"spring.datasource.url=jdbc:postgresql://{host()}:5432/{pick(APPS)}\nspring.datasource.username={pick(APPS)}\n"
            f"spring.datasource.password={db}\nspring.jpa.hibernate.ddl-auto=validate\n"
            f"spring.mail.host=smtp.{domain()}\nspring.mail.username=alerts@{domain()}\nspring.mail.password={mail}")
    return text, [db, mail]


@cred("mysql-password", "spring-yaml")
def _spring_yaml() -> tuple[Any, ...]:
    pw = password()
    text = (f"spring:\n  datasource:\n    url: jdbc:mysql://{host()}:3306/{pick(APPS)}?useSSL=true\n"
            f"    username: {pick(APPS)}_svc\n    password: '{pw}'\n  jpa:\n    open-in-view: false")
    return text, pw


@cred("rails", "rails-credentials")
def _rails_credentials() -> tuple[Any, ...]:
    base, sec = hexs(128), aws_secret()
    text = (f"$ bin/rails credentials:show\nsecret_key_base: {base}\n\naws:\n  access_key_id: {aws_key_id()}\n"
            f"  secret_access_key: {sec}\n\nsmtp:\n  user_name: postmaster@mg.{domain()}")
    return text, [base, sec]


@cred("rails", "agent-tool")
def _rails_master_key() -> tuple[Any, ...]:
    key = hexs(32)
    return f"● Bash(cat config/master.key)\n  ⎿  {key}", key


@cred("laravel", "dotenv")
def _laravel_env() -> tuple[Any, ...]:
    app_key, db, mail = random_b64_bytes(32), password(), password()
    text = (f"APP_NAME={pick(APPS).capitalize()}\nAPP_ENV=production\nAPP_KEY=base64:{app_key}\nAPP_DEBUG=false\n"
            f"APP_URL=https://{domain()}\n\nDB_CONNECTION=mysql\nDB_HOST=127.0.0.1\nDB_PORT=3306\n"
            f"DB_DATABASE={pick(APPS)}\nDB_USERNAME=forge\nDB_PASSWORD={db}\n\nMAIL_MAILER=smtp\n"
            f"MAIL_HOST=smtp.mailgun.org\nMAIL_PORT=587\nMAIL_USERNAME=postmaster@mg.{domain()}\n"
            f"MAIL_PASSWORD={mail}\nMAIL_ENCRYPTION=tls")
    return text, [app_key, db, mail]


@cred("wordpress", "wp-config")
def _wp_config() -> tuple[Any, ...]:
    db = password()
    salt = draw(lambda: "".join(R.choice(ALNUM + "!#%^*-_+=.@&|~;:,<>?[]{}()") for _ in range(64)))
    text = (f"/** Database username */\ndefine( 'DB_USER', 'wp_{lower(5)}' );\n\n/** Database password */\n"
            f"define( 'DB_PASSWORD', '{db}' );\n\n/** Database hostname */\ndefine( 'DB_HOST', 'localhost' );\n\n"
            f"define( 'AUTH_KEY',         '{salt}' );")
    return text, [db, salt]


@cred("redis-password", "redis-conf")
def _redis_conf() -> tuple[Any, ...]:
    pw = hexs(64)
    text = (f"$ grep -v '^#' /etc/redis/redis.conf | grep -v '^$' | head\nbind 127.0.0.1 -::1\nprotected-mode yes\n"
            f"port 6379\ntimeout 0\ntcp-keepalive 300\nrequirepass {pw}\nmaxmemory 2gb\nmaxmemory-policy allkeys-lru")
    return text, pw


@cred("redis-password", "shell")
def _redis_cli() -> tuple[Any, ...]:
    pw = password(safe=True)
    text = (f"$ redis-cli -h {host('cache')} -p 6380 --tls -a '{pw}' --no-auth-warning INFO keyspace\n"
            f"# Keyspace\ndb0:keys={R.randint(1000, 90000)},expires={R.randint(10, 900)},avg_ttl={digits(7)}")
    return text, pw


@cred("upstash", "dotenv")
def _redis_url() -> tuple[Any, ...]:
    pw = "A" + alnum(R.randint(33, 38))
    text = f"REDIS_URL=rediss://default:{pw}@{pick(WORDS)}-{pick(WORDS)}-{R.randint(10000, 99999)}.upstash.io:6379"
    return text, pw


@cred("confluent", "kafka-properties")
def _kafka_confluent() -> tuple[Any, ...]:
    sec = confluent_secret()
    text = (f"bootstrap.servers=pkc-{lower(5)}.eu-west-1.aws.confluent.cloud:9092\nsecurity.protocol=SASL_SSL\n"
            f"sasl.mechanisms=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f"required username=\"{upper_alnum(16)}\" password=\"{sec}\";\nsession.timeout.ms=45000")
    return text, sec


@cred("kafka-scram", "kafka-properties")
def _kafka_scram() -> tuple[Any, ...]:
    pw = password()
    text = (f"KAFKA_OPTS: >-\n  -Dsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required\n"
            f"  username=\"svc-{pick(APPS)}\" password=\"{pw}\";")
    return text, pw


@cred("gmail-app-password", "postfix")
def _postfix_sasl() -> tuple[Any, ...]:
    pw = gmail_app_password()
    text = (f"$ sudo cat /etc/postfix/sasl_passwd\n[smtp.gmail.com]:587 {person()}.{org()}@gmail.com:{pw}\n"
            "$ sudo postmap /etc/postfix/sasl_passwd")
    return text, pw


@cred("sendgrid", "django-settings")
def _smtp_sendgrid() -> tuple[Any, ...]:
    key = sendgrid()
    text = (f"EMAIL_BACKEND = 'django.core.mail.backends.smtp.EmailBackend'\nEMAIL_HOST = 'smtp.sendgrid.net'\n"
            f"EMAIL_PORT = 587\nEMAIL_USE_TLS = True\nEMAIL_HOST_USER = 'apikey'\nEMAIL_HOST_PASSWORD = '{key}'")
    return text, key, ["SG."]


@cred("smtp-password", "gitlab-rb")
def _gitlab_rb_smtp() -> tuple[Any, ...]:
    pw = password()
    text = (f"gitlab_rails['smtp_enable'] = true\ngitlab_rails['smtp_address'] = \"smtp.office365.com\"\n"
            f"gitlab_rails['smtp_port'] = 587\ngitlab_rails['smtp_user_name'] = \"gitlab@{domain()}\"\n"
            f"gitlab_rails['smtp_password'] = \"{pw}\"\ngitlab_rails['smtp_domain'] = \"{domain()}\"")
    return text, pw


@cred("ldap-password", "shell")
def _ldapsearch() -> tuple[Any, ...]:
    pw = password()
    dc = ",".join(f"dc={p}" for p in domain().split("."))
    text = (f"$ ldapsearch -x -H ldaps://ldap.{domain()} -D \"cn=readonly,{dc}\" -w '{pw}' "
            f"-b \"ou=people,{dc}\" \"(uid={person()})\" mail memberOf")
    return text, pw


@cred("ldap-password", "sssd")
def _sssd() -> tuple[Any, ...]:
    pw = password()
    text = (f"[domain/corp]\nid_provider = ldap\nauth_provider = ldap\nldap_uri = ldaps://ldap.{domain()}\n"
            f"ldap_default_bind_dn = uid=sssd,ou=services,dc=corp,dc=lan\nldap_default_authtok_type = password\n"
            f"ldap_default_authtok = {pw}\ncache_credentials = True")
    return text, pw


@cred("ldap-password", "grafana-ldap")
def _grafana_ldap() -> tuple[Any, ...]:
    pw = password()
    text = (f"[[servers]]\nhost = \"ad.{domain()}\"\nport = 636\nuse_ssl = true\n"
            f"bind_dn = \"CN=svc-grafana,OU=Service Accounts,DC=corp,DC=local\"\nbind_password = '{pw}'\n"
            "search_filter = \"(sAMAccountName=%s)\"")
    return text, pw


@cred("wireguard", "vpn-config")
def _wireguard() -> tuple[Any, ...]:
    priv, psk = random_b64_bytes(32), random_b64_bytes(32)
    text = (f"$ sudo cat /etc/wireguard/wg0.conf\n[Interface]\nAddress = 10.8.0.{R.randint(2, 200)}/24\n"
            f"PrivateKey = {priv}\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {random_b64_bytes(32)}\n"
            f"PresharedKey = {psk}\nEndpoint = vpn.{domain()}:51820\nAllowedIPs = 0.0.0.0/0, ::/0\nPersistentKeepalive = 25")
    return text, [priv, psk]


@cred("openvpn", "vpn-config")
def _openvpn_tls() -> tuple[Any, ...]:
    body = "\n".join(hexs(32) for _ in range(16))
    text = (f"remote vpn.{domain()} 1194 udp\nauth-user-pass\nkey-direction 1\n<tls-auth>\n#\n# 2048 bit OpenVPN static key\n#\n"
            f"-----BEGIN OpenVPN Static key V1-----\n{body}\n-----END OpenVPN Static key V1-----\n</tls-auth>")
    return text, body


@cred("openvpn", "vpn-config")
def _openvpn_auth() -> tuple[Any, ...]:
    pw = password()
    text = f"$ cat /etc/openvpn/client/auth.txt\n{person()}.{lower(3)}\n{pw}\n$ sudo systemctl restart openvpn-client@office"
    return text, pw


@cred("ipsec-psk", "vpn-config")
def _ipsec() -> tuple[Any, ...]:
    psk = random_b64_bytes(24)
    text = f"# /etc/ipsec.secrets\n{ip(False)} {ip(False)} : PSK \"{psk}\""
    return text, psk


@cred("wifi-psk", "wpa-supplicant")
def _wpa() -> tuple[Any, ...]:
    pw = password(pick(["words", "passphrase", "short"]))
    text = (f"ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev\nupdate_config=1\ncountry=DE\n\n"
            f"network={{\n\tssid=\"{pick(WORDS).capitalize()}Net-5G\"\n\tpsk=\"{pw}\"\n\tkey_mgmt=WPA-PSK\n}}")
    return text, pw


@cred("wifi-psk", "wpa-supplicant")
def _wpa_hex() -> tuple[Any, ...]:
    psk = hexs(64)
    text = f"network={{\n\tssid=\"office-{lower(3)}\"\n\t#psk=\"...\"\n\tpsk={psk}\n}}"
    return text, psk


@cred("wifi-psk", "nmcli")
def _nmcli() -> tuple[Any, ...]:
    pw = password("words")
    ssid = f"{pick(WORDS).capitalize()}-Home"
    text = f"$ nmcli -s -g 802-11-wireless-security.psk connection show '{ssid}'\n{pw}"
    return text, pw


@cred("router-admin", "note")
def _router_note() -> tuple[Any, ...]:
    pw = password("short")
    model = pick(["ASUS RT-AX86U", "Fritz!Box 7590", "TP-Link Archer AX55", "UniFi Dream Machine"])
    text = (f"home network\n- router: {model} at 192.168.{pick([0, 1, 178, 50])}.1\n- admin login: admin / {pw} "
            f"(changed {day()})\n- guest wifi turned off, WPS off")
    return text, pw


@cred("2fa-backup-codes", "backup-codes")
def _github_codes() -> tuple[Any, ...]:
    codes = [f"{hexs(5)}-{hexs(5)}" for _ in range(16)]
    text = ("github-recovery-codes.txt\n\n" + "\n".join(codes) +
            "\n\nPut these in a safe spot. If you lose your device and don't have the recovery codes you will lose access to your account.")
    return text, codes


@cred("2fa-backup-codes", "note")
def _google_codes() -> tuple[Any, ...]:
    codes = [f"{digits(4)} {digits(4)}" for _ in range(10)]
    text = (f"Backup codes for {person()}.{org()}@gmail.com (generated {day()}):\n"
            + "\n".join(f"{i + 1}. {c}" for i, c in enumerate(codes)) + "\nKeep these somewhere safe. Each code can be used once.")
    return text, codes


@cred("totp-seed", "otpauth-uri")
def _totp_uri() -> tuple[Any, ...]:
    seed = b32(32)
    issuer = pick(["AWS", "Cloudflare", "Okta", "GitLab", "Proton"])
    text = (f"qr decoded: otpauth://totp/{issuer}:{person()}%40{domain()}?secret={seed}&issuer={issuer}"
            "&algorithm=SHA1&digits=6&period=30")
    return text, seed


@cred("totp-seed", "note")
def _totp_setup_key() -> tuple[Any, ...]:
    key = " ".join(lower(4) for _ in range(8))
    text = (f"Can't scan the QR code? Enter this setup key in your authenticator app instead:\n\n    {key}\n\n"
            "Spaces don't matter. Time based: yes")
    return text, key


@cred("bip39-seed", "note", times=2)
def _seed_note() -> tuple[Any, ...]:
    n = pick([12, 24])
    phrase = seed_phrase(n)
    text = (f"{pick(['Ledger', 'MetaMask', 'Trezor'])} recovery phrase ({n} words), written {day()}:\n{phrase}\n"
            "(paper copy in the fire safe)")
    return text, phrase


@cred("bitlocker-recovery", "note")
def _bitlocker() -> tuple[Any, ...]:
    key = "-".join(digits(6) for _ in range(8))
    text = (f"BitLocker recovery key for {pick(['DESKTOP', 'LAPTOP'])}-{upper_alnum(7)}\n"
            f"Key ID: {uid()[:8].upper()}\nRecovery key: {key}")
    return text, key


@cred("1password-secret-key", "note")
def _onepassword() -> tuple[Any, ...]:
    key = f"A3-{upper_alnum(6)}-{upper_alnum(6)}-{upper_alnum(5)}-{upper_alnum(5)}-{upper_alnum(5)}-{upper_alnum(5)}"
    text = (f"1Password Emergency Kit\nSign-in address: my.1password.com\nEmail: {person()}@{domain()}\n"
            f"Secret Key: {key}")
    return text, key, ["A3-"]


@cred("gitlab", "ci-log")
def _ci_gitlab_echo() -> tuple[Any, ...]:
    tok = gitlab("gldt-")
    text = (f"$ echo \"deploying {pick(APPS)} with $CI_DEPLOY_USER / $CI_DEPLOY_PASSWORD\"\n"
            f"deploying {pick(APPS)} with gitlab+deploy-token-{R.randint(100, 9999)} / {tok}\n"
            "$ helm upgrade --install ...")
    return text, tok, ["gldt-"]


@cred("gitlab", "shell-trace")
def _set_x_curl() -> tuple[Any, ...]:
    tok = gitlab()
    text = (f"+ curl -sSf --header 'PRIVATE-TOKEN: {tok}' "
            f"'https://gitlab.{domain()}/api/v4/projects/{R.randint(10, 900)}/pipelines?ref=main&per_page=5'\n"
            "+ jq -r '.[0].status'\nsuccess")
    return text, tok, ["glpat-"]


@cred("docker-hub", "ci-log")
def _jenkins_docker_login() -> tuple[Any, ...]:
    pat = docker_pat()
    text = (f"[Pipeline] sh\n+ docker login -u {org()}ci -p {pat}\n"
            "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded")
    return text, pat, ["dckr_pat_"]


@cred("sonarqube", "ci-log")
def _sonar() -> tuple[Any, ...]:
    tok, when = "squ_" + hexs(40), day()
    text = (f"[{when}T09:14:02Z] Running command: export SONAR_HOST_URL=https://sonar.{domain()}\n"
            f"[{when}T09:14:02Z] Running command: export SONAR_TOKEN={tok}\n"
            f"[{when}T09:14:03Z] INFO: Scanner configuration file: /opt/sonar-scanner/conf/sonar-scanner.properties")
    return text, tok, ["squ_"]


@cred("aws", "aws-credentials")
def _aws_credentials() -> tuple[Any, ...]:
    a, b = aws_secret(), aws_secret()
    text = (f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {aws_key_id()}\naws_secret_access_key = {a}\n\n"
            f"[prod-admin]\naws_access_key_id = {aws_key_id()}\naws_secret_access_key = {b}\nregion = eu-central-1")
    return text, [a, b]


@cred("aws", "aws-cli-json")
def _aws_sts() -> tuple[Any, ...]:
    sec, tok = aws_secret(), aws_session_token()
    body = {"Credentials": {"AccessKeyId": aws_key_id("ASIA"), "SecretAccessKey": sec, "SessionToken": tok,
                            "Expiration": f"{day()}T{clock()}:41+00:00"}}
    return "$ aws sts get-session-token --serial-number arn:aws:iam::" + digits(12) + ":mfa/me --token-code " + digits(6) + "\n" + json.dumps(body, indent=4), [sec, tok], ["IQoJb3JpZ2luX2Vj"]


@cred("github", "gh-cli")
def _gh_auth_token() -> tuple[Any, ...]:
    tok = github("gho_")
    return f"$ gh auth token\n{tok}", tok, ["gho_"]


@cred("github", "gh-cli")
def _gh_status_show() -> tuple[Any, ...]:
    tok = github("gho_")
    text = (f"$ gh auth status --show-token\ngithub.com\n  ✓ Logged in to github.com account {person()}-{lower(3)} (keyring)\n"
            f"  - Active account: true\n  - Git operations protocol: https\n  - Token: {tok}\n"
            "  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'")
    return text, tok, ["gho_"]


@cred("azure-ad", "az-cli-json")
def _az_sp() -> tuple[Any, ...]:
    pw = azure_client_secret()
    body = {"appId": uid(), "displayName": f"sp-{pick(APPS)}-deploy", "password": pw, "tenant": uid()}
    text = ("$ az ad sp create-for-rbac --name sp-deploy --role Contributor --scopes /subscriptions/" + uid() + "\n"
            "Creating 'Contributor' role assignment under scope '/subscriptions/...'\n"
            "The output includes credentials that you must protect. Be sure that you do not include these credentials in your code or check the credentials into your source control.\n"
            + json.dumps(body, indent=2))
    return text, pw


@cred("azure-storage", "az-cli-json")
def _az_keys() -> tuple[Any, ...]:
    k1, k2 = azure_storage_key(), azure_storage_key()
    body = [{"creationTime": f"{day()}T08:12:44.512345+00:00", "keyName": "key1", "permissions": "FULL", "value": k1},
            {"creationTime": f"{day()}T08:12:44.512345+00:00", "keyName": "key2", "permissions": "FULL", "value": k2}]
    return "$ az storage account keys list -g rg-data -n st" + lower(10) + "\n" + json.dumps(body, indent=2), [k1, k2]


@cred("azure-storage", "dotenv")
def _azure_conn() -> tuple[Any, ...]:
    key = azure_storage_key()
    text = (f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=st{lower(9)};"
            f"AccountKey={key};EndpointSuffix=core.windows.net")
    return text, key


@cred("gcp-service-account", "json-key")
def _gcp_sa() -> tuple[Any, ...]:
    body = pem_body(12, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
    escaped = body.replace("\n", "\\n")
    proj = f"{org()}-{lower(4)}-{digits(6)}"
    text = ("{\n  \"type\": \"service_account\",\n  \"project_id\": \"" + proj + "\",\n"
            f"  \"private_key_id\": \"{hexs(40)}\",\n"
            f"  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{escaped}\\n-----END PRIVATE KEY-----\\n\",\n"
            f"  \"client_email\": \"ci-deployer@{proj}.iam.gserviceaccount.com\",\n  \"client_id\": \"{digits(21)}\",\n"
            "  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}")
    return text, escaped, ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]


@cred("ssh-private-key", "shell-output")
def _ssh_private() -> tuple[Any, ...]:
    const = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    body = "\n".join([const + b64(70 - len(const))] + [b64(70) for _ in range(3)] + [b64(R.randint(20, 40)) + "="])
    text = f"$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    return text, body, [const]


@cred("slack-webhook", "note")
def _slack_webhook() -> tuple[Any, ...]:
    tail = alnum(24)
    text = (f"alerts channel webhook (#{pick(APPS)}-alerts): https://hooks.slack.com/services/T0{upper_alnum(8)}/B0{upper_alnum(9)}/{tail}\n"
            "posts as 'deploy-bot', created by ops")
    return text, tail


@cred("discord-webhook", "dotenv")
def _discord_webhook() -> tuple[Any, ...]:
    tok = b64url(68)
    return f"DISCORD_WEBHOOK_URL=https://discord.com/api/webhooks/{digits(19)}/{tok}", tok


@cred("telegram-bot", "code")
def _telegram() -> tuple[Any, ...]:
    tok = f"{digits(10)}:AA{b64url(33)}"
    text = f"import telebot\n\nbot = telebot.TeleBot(\"{tok}\", parse_mode=\"HTML\")\n\n@bot.message_handler(commands=['start'])"
    return text, tok


@cred("stripe-webhook", "cli-output")
def _stripe_listen() -> tuple[Any, ...]:
    sec = "whsec_" + alnum(32)
    text = (f"$ stripe listen --forward-to localhost:4242/webhook\n> Ready! You are using Stripe API Version [2024-06-20]. "
            f"Your webhook signing secret is {sec} (^C to quit)\n{day()} {clock()}:03   --> charge.succeeded [evt_{alnum(24)}]")
    return text, sec, ["whsec_"]


@cred("ngrok", "cli-output")
def _ngrok() -> tuple[Any, ...]:
    tok = f"2{alnum(26)}_{alnum(21)}"
    text = f"$ ngrok config add-authtoken {tok}\nAuthtoken saved to configuration file: /home/{person()}/.config/ngrok/ngrok.yml"
    return text, tok


@cred("google-oauth", "cli-output")
def _firebase_ci() -> tuple[Any, ...]:
    tok = "1//0" + b64url(R.randint(96, 104))
    text = (f"✔  Success! Use this token to login on a CI server:\n\n{tok}\n\n"
            "Example: firebase deploy --token \"$FIREBASE_TOKEN\"")
    return text, tok, ["1//0"]


@cred("google-oauth", "cli-output")
def _gcloud_token() -> tuple[Any, ...]:
    tok = "ya29.a0" + b64url(R.randint(180, 220))
    text = f"$ gcloud auth print-access-token\n{tok}"
    return text, tok, ["ya29.a0"]


@cred("pypi", "pypirc")
def _pypirc() -> tuple[Any, ...]:
    tok = pypi_token()
    text = f"[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = {tok}"
    return text, tok, ["pypi-AgEIcHlwaS5vcmc"]


@cred("heroku", "netrc")
def _netrc() -> tuple[Any, ...]:
    tok, login = "HRKU-AA" + b64url(58), f"{person()}@{domain()}"
    text = (f"$ cat ~/.netrc\nmachine api.heroku.com\n  login {login}\n  password {tok}\n"
            f"machine git.heroku.com\n  login {login}\n  password {tok}")
    return text, tok, ["HRKU-AA"]


@cred("postgres-password", "pgpass")
def _pgpass() -> tuple[Any, ...]:
    pw = password(safe=True)
    return f"$ cat ~/.pgpass\n{host()}:5432:*:{pick(APPS)}_admin:{pw}\nlocalhost:5432:*:postgres:postgres", pw


@cred("mongodb", "dotenv")
def _mongo() -> tuple[Any, ...]:
    pw = password("alnum")
    text = (f"MONGODB_URI=mongodb+srv://{pick(APPS)}-svc:{pw}@cluster0.{lower(5)}.mongodb.net/"
            f"{pick(APPS)}?retryWrites=true&w=majority&appName=Cluster0")
    return text, pw


@cred("mysql-password", "jdbc-url")
def _jdbc() -> tuple[Any, ...]:
    pw = password(safe=True)
    text = (f"2025-{R.randint(1, 12):02d}-0{R.randint(1, 9)} 10:22:31.118 INFO  HikariDataSource - HikariPool-1 - Starting...\n"
            f"url=jdbc:mysql://{host()}:3306/shop?user=shop&password={pw}&useSSL=true&serverTimezone=UTC")
    return text, pw


@cred("sentry", "ini")
def _sentryclirc() -> tuple[Any, ...]:
    tok = "sntryu_" + hexs(64)
    return f"$ cat ~/.sentryclirc\n[auth]\ntoken={tok}\n\n[defaults]\norg={org()}\nproject={pick(APPS)}", tok, ["sntryu_"]


@cred("datadog", "shell")
def _docker_run_dd() -> tuple[Any, ...]:
    key = hexs(32)
    text = (f"docker run -d --name dd-agent -e DD_API_KEY={key} -e DD_SITE=\"datadoghq.eu\" \\\n"
            "  -v /var/run/docker.sock:/var/run/docker.sock:ro -v /proc/:/host/proc/:ro gcr.io/datadoghq/agent:7")
    return text, key


@cred("postgres-password", "shell")
def _docker_run_pg() -> tuple[Any, ...]:
    pw = password()
    return f"docker run --name pg -e POSTGRES_PASSWORD='{pw}' -p 5432:5432 -d postgres:16-alpine", pw


@cred("grafana", "curl")
def _grafana_curl() -> tuple[Any, ...]:
    tok = f"glsa_{alnum(32)}_{hexs(8)}"
    text = (f"curl -s -H \"Authorization: Bearer {tok}\" https://grafana.{domain()}/api/dashboards/uid/{alnum(9)} | jq .meta.version")
    return text, tok, ["glsa_"]


@cred("hashicorp-vault", "cli-output")
def _vault_login() -> tuple[Any, ...]:
    tok = "hvs.CAESI" + b64url(R.randint(86, 100))
    text = (f"$ vault login -method=oidc\nSuccess! You are now authenticated. The token information displayed below\n"
            "is already stored in the token helper. You do NOT need to run \"vault login\"\nagain.\n\n"
            f"Key                  Value\n---                  -----\ntoken                {tok}\n"
            f"token_accessor       {alnum(24)}\ntoken_duration       8h\ntoken_renewable      true\n"
            "token_policies       [\"default\" \"dev-read\"]")
    return text, tok, ["hvs.CAESI"]


@cred("cloudflare", "dotenv")
def _wrangler() -> tuple[Any, ...]:
    tok = b64url(40)
    return f"# .dev.vars\nCLOUDFLARE_ACCOUNT_ID={hexs(32)}\nCLOUDFLARE_API_TOKEN={tok}", tok


@cred("digitalocean", "shell")
def _doctl() -> tuple[Any, ...]:
    tok = "dop_v1_" + hexs(64)
    text = f"$ doctl auth init --context {org()} --access-token {tok}\nValidating token... ✔"
    return text, tok, ["dop_v1_"]


@cred("databricks", "ini")
def _databrickscfg() -> tuple[Any, ...]:
    tok = "dapi" + hexs(32)
    text = f"[DEFAULT]\nhost  = https://adb-{digits(16)}.{R.randint(1, 19)}.azuredatabricks.net\ntoken = {tok}\njobs-api-version = 2.1"
    return text, tok, ["dapi"]


@cred("snowflake", "ini")
def _snowsql() -> tuple[Any, ...]:
    pw = password()
    text = (f"[connections.prod]\naccountname = {lower(2)}{digits(5)}.eu-central-1\nusername = ETL_{pick(APPS).upper()}\n"
            f"password = {pw}\nwarehousename = LOAD_WH\nrolename = LOADER")
    return text, pw


@cred("aws", "rclone-conf")
def _rclone() -> tuple[Any, ...]:
    sec = aws_secret()
    text = (f"[s3-backup]\ntype = s3\nprovider = AWS\naccess_key_id = {aws_key_id()}\nsecret_access_key = {sec}\n"
            "region = eu-west-1\nacl = private")
    return text, sec


@cred("k8s-sa-token", "kubeconfig")
def _kubeconfig_token() -> tuple[Any, ...]:
    now = R.randint(1_735_000_000, 1_760_000_000)
    tok = jwt({"aud": ["https://kubernetes.default.svc"], "exp": now + 31536000, "iat": now,
               "iss": "https://kubernetes.default.svc", "kubernetes.io": {"namespace": "ci", "serviceaccount": {
                   "name": "deployer", "uid": uid()}}, "sub": "system:serviceaccount:ci:deployer"}, "RS256")
    text = (f"users:\n- name: deployer\n  user:\n    token: {tok}\ncontexts:\n- context:\n    cluster: {org()}-prod\n"
            "    user: deployer\n  name: prod")
    return text, tok


@cred("k8s-client-key", "kubeconfig")
def _kubeconfig_key() -> tuple[Any, ...]:
    pem = "-----BEGIN EC PRIVATE KEY-----\n" + pem_body(3, "MHcCAQEEI") + "\n-----END EC PRIVATE KEY-----\n"
    enc = b64_of(pem.encode())
    cert = b64_of(("-----BEGIN CERTIFICATE-----\n" + pem_body(6, "MIIB") + "\n-----END CERTIFICATE-----\n").encode())
    text = (f"- name: kind-{pick(APPS)}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {enc}")
    return text, enc, [enc[:40]]


@cred("multiple", "heroku-config")
def _heroku_config() -> tuple[Any, ...]:
    pw, rpw = lower(2) + hexs(62), "p" + hexs(63)
    text = (f"$ heroku config -a {pick(APPS)}-prod\n=== {pick(APPS)}-prod Config Vars\n"
            f"DATABASE_URL:     postgres://u{lower(13)}:{pw}@c{lower(6)}.cluster-{lower(10)}.eu-west-1.rds.amazonaws.com:5432/d{lower(13)}\n"
            f"LANG:             en_US.UTF-8\nRACK_ENV:         production\n"
            f"REDIS_URL:        rediss://:{rpw}@ec2-{R.randint(3, 54)}-{R.randint(1, 250)}-{R.randint(1, 250)}-{R.randint(1, 250)}.eu-west-1.compute.amazonaws.com:{R.randint(10000, 30000)}")
    return text, [pw, rpw]


@cred("supabase", "dotenv")
def _supabase() -> tuple[Any, ...]:
    ref = lower(20)
    now = R.randint(1_700_000_000, 1_735_000_000)
    anon = jwt({"iss": "supabase", "ref": ref, "role": "anon", "iat": now, "exp": now + 315360000})
    service = jwt({"iss": "supabase", "ref": ref, "role": "service_role", "iat": now, "exp": now + 315360000})
    text = (f"NEXT_PUBLIC_SUPABASE_URL=https://{ref}.supabase.co\nNEXT_PUBLIC_SUPABASE_ANON_KEY={anon}\n"
            f"SUPABASE_SERVICE_ROLE_KEY={service}")
    return text, service


@cred("openai", "code")
def _langchain() -> tuple[Any, ...]:
    key = openai_key()
    text = f"from langchain_openai import ChatOpenAI\n\nllm = ChatOpenAI(model=\"gpt-4o\", temperature=0, api_key=\"{key}\")"
    return text, key, ["sk-proj-"]


@cred("openai", "note")
def _openai_legacy() -> tuple[Any, ...]:
    key = openai_legacy()
    return f"old personal key from 2023 (revoke?): {key}", key


@cred("anthropic", "code")
def _anthropic_client() -> tuple[Any, ...]:
    key = anthropic_key()
    text = (f"import anthropic\n\nclient = anthropic.Anthropic(api_key='{key}')\n"
            "msg = client.messages.create(model=\"claude-sonnet-4-5\", max_tokens=512, messages=msgs)")
    return text, key, ["sk-ant-api03-"]


@cred("groq", "dotenv")
def _groq() -> tuple[Any, ...]:
    key = "gsk_" + alnum(52)
    return f"GROQ_API_KEY={key}\nGROQ_MODEL=llama-3.3-70b-versatile", key, ["gsk_"]


@cred("deepseek", "code")
def _deepseek() -> tuple[Any, ...]:
    key = "sk-" + hexs(32)
    text = f"client = OpenAI(api_key=\"{key}\", base_url=\"https://api.deepseek.com\")"
    return text, key


@cred("openrouter", "code")
def _openrouter() -> tuple[Any, ...]:
    key = "sk-or-v1-" + hexs(64)
    text = ("fetch(\"https://openrouter.ai/api/v1/chat/completions\", {\n  method: \"POST\",\n  headers: {\n"
            f"    \"Authorization\": \"Bearer {key}\",\n    \"Content-Type\": \"application/json\"\n  }},")
    return text, key, ["sk-or-v1-"]


@cred("replicate", "shell")
def _replicate() -> tuple[Any, ...]:
    tok = "r8_" + alnum(37)
    return f"export REPLICATE_API_TOKEN={tok}\npython run_flux.py --steps 28", tok, ["r8_"]


@cred("langsmith", "dotenv")
def _langsmith() -> tuple[Any, ...]:
    key = f"lsv2_pt_{hexs(32)}_{hexs(10)}"
    return f"LANGCHAIN_TRACING_V2=true\nLANGCHAIN_API_KEY={key}\nLANGCHAIN_PROJECT={pick(APPS)}-agent", key, ["lsv2_pt_"]


@cred("elevenlabs", "code")
def _elevenlabs() -> tuple[Any, ...]:
    key = "sk_" + hexs(48)
    return f"from elevenlabs.client import ElevenLabs\nclient = ElevenLabs(api_key=\"{key}\")", key


@cred("mistral", "dotenv")
def _mistral() -> tuple[Any, ...]:
    key = alnum(32)
    return f"MISTRAL_API_KEY={key}", key


@cred("jenkins", "shell-output")
def _jenkins_initial() -> tuple[Any, ...]:
    pw = hexs(32)
    text = f"$ docker exec jenkins cat /var/jenkins_home/secrets/initialAdminPassword\n{pw}"
    return text, pw


@cred("twilio", "dotenv")
def _twilio() -> tuple[Any, ...]:
    tok = hexs(32)
    return f"TWILIO_ACCOUNT_SID=AC{hexs(32)}\nTWILIO_AUTH_TOKEN={tok}\nTWILIO_FROM=+1{digits(10)}", tok


@cred("grafana-admin", "docker-compose")
def _compose_grafana() -> tuple[Any, ...]:
    pw, minio = password(), password("alnum")
    text = ("services:\n  grafana:\n    image: grafana/grafana:11.2.0\n    environment:\n"
            f"      - GF_SECURITY_ADMIN_USER=admin\n      - GF_SECURITY_ADMIN_PASSWORD={pw}\n"
            "  minio:\n    image: minio/minio\n    environment:\n      MINIO_ROOT_USER: backup\n"
            f"      MINIO_ROOT_PASSWORD: {minio}\n    command: server /data --console-address :9001")
    return text, [pw, minio]


@cred("minio", "shell")
def _mc_alias() -> tuple[Any, ...]:
    sec = alnum(40)
    text = f"$ mc alias set backup https://s3.{domain()} {upper_alnum(20)} {sec}\nAdded `backup` successfully."
    return text, sec


@cred("elastic", "cli-output")
def _elastic_install() -> tuple[Any, ...]:
    pw = chars(ALNUM + "_*=-", 20)
    enroll = b64_of(json.dumps({"ver": "8.15.1", "adr": [f"{ip()}:9200"], "fgr": hexs(64),
                                "key": f"{b64url(20)}:{b64url(22)}"}, separators=(",", ":")).encode())
    text = ("━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n"
            "✅ Elasticsearch security features have been automatically configured!\n"
            "✅ Authentication is enabled and cluster connections are encrypted.\n\n"
            "ℹ️  Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):\n"
            f"  {pw}\n\nℹ️  Configure Kibana to use this cluster:\n• Run Kibana and click the configuration link in the terminal when Kibana starts.\n"
            f"• Copy the following enrollment token and paste it into Kibana in your browser (valid for the next 30 minutes):\n  {enroll}")
    return text, [pw, enroll]


@cred("rabbitmq", "shell")
def _rabbit() -> tuple[Any, ...]:
    pw = password()
    text = f"$ rabbitmqctl add_user svc_{pick(APPS)} '{pw}'\nAdding user \"svc_{pick(APPS)}\" ...\nDone. Don't forget to grant the user permissions to some virtual hosts!"
    return text, pw


@cred("htpasswd", "shell")
def _htpasswd() -> tuple[Any, ...]:
    pw = password()
    return f"sudo htpasswd -bc /etc/nginx/.htpasswd staging '{pw}'\nAdding password for user staging", pw


@cred("mysql-password", "shell")
def _mysql_cli() -> tuple[Any, ...]:
    pw = password(safe=True)
    return f"$ mysql -h 127.0.0.1 -P 3307 -u root -p'{pw}' -e 'SHOW DATABASES;'\nmysql: [Warning] Using a password on the command line interface can be insecure.", pw


@cred("ssh-password", "shell")
def _sshpass() -> tuple[Any, ...]:
    pw = password(safe=True)
    return f"sshpass -p '{pw}' ssh -o StrictHostKeyChecking=no pi@{ip()} 'sudo reboot'", pw


@cred("gitlab", "shell")
def _git_clone_token() -> tuple[Any, ...]:
    tok = gitlab()
    text = (f"$ git clone https://oauth2:{tok}@gitlab.{domain()}/platform/{pick(APPS)}.git\nCloning into '{pick(APPS)}'...\n"
            f"remote: Enumerating objects: {R.randint(400, 9000)}, done.")
    return text, tok, ["glpat-"]


@cred("wifi-psk", "note")
def _wifi_note() -> tuple[Any, ...]:
    pw = password(pick(["words", "passphrase"]))
    return f"Cabin trip: wifi network is {pick(WORDS).capitalize()}Guest, password {pw} (router is behind the TV)", pw


@cred("streaming-login", "note")
def _streaming() -> tuple[Any, ...]:
    pw = password("words")
    return f"family streaming account -> {person()}.{org()}@gmail.com / {pw}  (don't change, the TV at mum's uses it)", pw


@cred("multiple", "agent-tool")
def _claude_read_env() -> tuple[Any, ...]:
    jwt_secret, sk = hexs(64), stripe_secret()
    text = (f"● Read(.env.production)\n  ⎿  Read 6 lines\n     1→NODE_ENV=production\n     2→JWT_SECRET={jwt_secret}\n"
            f"     3→STRIPE_SECRET_KEY={sk}\n     4→SENTRY_ENVIRONMENT=production\n     5→PORT=8080\n     6→")
    return text, [jwt_secret, sk], ["sk_live_"]


@cred("nextauth", "dotenv")
def _nextauth() -> tuple[Any, ...]:
    sec = random_b64_bytes(32)
    return f"NEXTAUTH_URL=https://{domain()}\nNEXTAUTH_SECRET={sec}\nGITHUB_ID=Iv1.{hexs(16)}", sec


@cred("flask", "code")
def _flask_secret() -> tuple[Any, ...]:
    key = hexs(64)
    return f"app = Flask(__name__)\napp.secret_key = '{key}'\napp.config['SESSION_COOKIE_SECURE'] = True", key


@cred("fernet-key", "dotenv")
def _fernet() -> tuple[Any, ...]:
    key = b64url_nopad(bytes(R.getrandbits(8) for _ in range(32))) + "="
    return f"# airflow\nAIRFLOW__CORE__FERNET_KEY={key}\nAIRFLOW__CORE__LOAD_EXAMPLES=False", key


@cred("age", "key-file")
def _age_key() -> tuple[Any, ...]:
    bech = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
    key = "AGE-SECRET-KEY-1" + chars(bech.upper(), 58)
    pub = "age1" + chars(bech, 58)
    return f"$ cat ~/.config/sops/age/keys.txt\n# created: {day()}T{clock()}:19+02:00\n# public key: {pub}\n{key}", key, ["AGE-SECRET-KEY-1"]


@cred("stripe", "zapier")
def _stripe_rk() -> tuple[Any, ...]:
    key = stripe_secret("rk_live_")
    return f"Zap step 3 (Webhooks by Zapier) -> Headers: Authorization | Bearer {key}", key, ["rk_live_"]


@cred("shopify", "theme-kit")
def _shopify() -> tuple[Any, ...]:
    tok = "shpat_" + hexs(32)
    text = f"production:\n  password: {tok}\n  theme_id: \"{digits(12)}\"\n  store: {org()}-store.myshopify.com"
    return text, tok, ["shpat_"]


@cred("notion", "dotenv")
def _notion() -> tuple[Any, ...]:
    tok = "ntn_" + digits(11) + alnum(35)
    return f"NOTION_TOKEN={tok}\nNOTION_DATABASE_ID={hexs(32)}", tok, ["ntn_"]


@cred("linear", "json-config")
def _linear() -> tuple[Any, ...]:
    key = "lin_api_" + alnum(40)
    return '{\n  "linear": {\n    "apiKey": "' + key + '",\n    "team": "ENG"\n  }\n}', key, ["lin_api_"]


@cred("postman", "shell")
def _newman() -> tuple[Any, ...]:
    key = f"PMAK-{hexs(24)}-{hexs(34)}"
    text = f"newman run \"https://api.getpostman.com/collections/{digits(8)}-{uid()}?apikey={key}\" -e staging.json"
    return text, key, ["PMAK-"]


@cred("atlassian", "dotenv")
def _jira() -> tuple[Any, ...]:
    tok = "ATATT3xFfGF0" + b64url(171) + "=" + chars("0123456789ABCDEF", 8)
    return f"JIRA_SITE=https://{org()}.atlassian.net\nJIRA_EMAIL={person()}@{domain()}\nJIRA_API_TOKEN={tok}", tok, ["ATATT3xFfGF0"]


@cred("okta", "yaml")
def _okta() -> tuple[Any, ...]:
    tok = "00" + b64url(40)
    return f"okta:\n  client:\n    orgUrl: https://{org()}.okta.com\n    token: {tok}", tok


@cred("pagerduty", "alertmanager")
def _pagerduty() -> tuple[Any, ...]:
    key = hexs(32)
    text = ("receivers:\n- name: oncall\n  pagerduty_configs:\n"
            f"  - routing_key: {key}\n    severity: '{{{{ .CommonLabels.severity }}}}'\n    send_resolved: true")
    return text, key


@cred("grafana-cloud", "prometheus")
def _grafana_cloud() -> tuple[Any, ...]:
    inner = json.dumps({"o": digits(6), "n": f"{pick(APPS)}-metrics-write", "k": alnum(24),
                        "m": {"r": "prod-eu-west-2"}}, separators=(",", ":"))
    tok = "glc_" + b64_of(inner.encode())
    text = (f"remote_write:\n  - url: https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push\n"
            f"    basic_auth:\n      username: {digits(7)}\n      password: {tok}")
    return text, tok, ["glc_"]


@cred("algolia", "dotenv")
def _algolia() -> tuple[Any, ...]:
    key = hexs(32)
    return f"ALGOLIA_APP_ID={upper_alnum(10)}\nALGOLIA_ADMIN_KEY={key}\nNEXT_PUBLIC_ALGOLIA_SEARCH_KEY={hexs(32)}", key


@cred("mapbox", "gradle-properties")
def _mapbox_secret() -> tuple[Any, ...]:
    inner = b64url_nopad(json.dumps({"u": person() + lower(3), "a": lower(25)}, separators=(",", ":")).encode())
    tok = f"sk.{inner}.{b64url(22)}"
    return f"org.gradle.jvmargs=-Xmx2048m\nMAPBOX_DOWNLOADS_TOKEN={tok}\nandroid.useAndroidX=true", tok, ["sk.eyJ"]


@cred("aws", "agent-chat")
def _agent_pasted_aws() -> tuple[Any, ...]:
    sec = aws_secret()
    text = (f"user: here are the creds for the sandbox account, key id {aws_key_id()} and secret {sec} — "
            "can you run the terraform plan?")
    return text, sec


@cred("github", "agent-chat")
def _agent_pasted_fine() -> tuple[Any, ...]:
    tok = github_fine()
    return f"use this fine-grained PAT for the release workflow (read/write contents only): {tok}", tok, ["github_pat_"]


@cred("slack", "yaml")
def _slack_bot_yaml() -> tuple[Any, ...]:
    tok, signing = slack_bot(), hexs(32)
    return f"slack:\n  bot_token: {tok}\n  signing_secret: {signing}\n  channel: \"#deploys\"", [tok, signing], ["xoxb-"]


@cred("generic-password", "markdown-table")
def _md_table() -> tuple[Any, ...]:
    a, b = password(), password()
    text = ("| service | host | user | password |\n|---|---|---|---|\n"
            f"| grafana | grafana.{domain()} | admin | {a} |\n| pgadmin | {ip()}:5050 | ops@{domain()} | {b} |")
    return text, [a, b]


# =============================================================================================
# credentials, Chinese: work notes, group chats, hand-over documents
# =============================================================================================


def zh_name() -> str:
    return pick(ZH_NAMES)


def aliyun_ak() -> str:
    return "LTAI5t" + alnum(18)


def aliyun_sk() -> str:
    return alnum(30)


def tencent_id() -> str:
    return "AKID" + alnum(32)


@cred("server-root", "note", "zh")
def _zh_root() -> tuple[Any, ...]:
    pw = password()
    text = (f"【跳板机】{ip(False)}，端口 22022\n账号：root\n密码：{pw}\n"
            f"备注：{day()} 由{zh_name()}重置，别在群里转发。")
    return text, pw


@cred("bastion-password", "chat", "zh")
def _zh_bastion() -> tuple[Any, ...]:
    pw = password("short")
    a, b = R.sample(ZH_NAMES, 2)
    text = (f"[{clock()}] {a}：堡垒机口令今天到期，我刚改了\n[{clock()}] {a}：新的是 {pw}  ，下周一前大家都改成自己的\n"
            f"[{clock()}] {b}：收到👌")
    return text, pw


@cred("mysql-password", "note", "zh")
def _zh_rds() -> tuple[Any, ...]:
    pw = password()
    text = (f"生产库（只读）：rm-{lower(2)}{alnum(14).lower()}.mysql.rds.aliyuncs.com:3306\n"
            f"账号 app_ro　密码 {pw}\n注意：只能从内网 VPC 访问；写库账号找{zh_name()}要。")
    return text, pw


@cred("aliyun", "note", "zh")
def _zh_aliyun() -> tuple[Any, ...]:
    sk = aliyun_sk()
    text = (f"OSS 上传用的子账号（RAM 用户 oss-uploader）\nAccessKey ID：{aliyun_ak()}\n"
            f"AccessKey Secret：{sk}\n权限：AliyunOSSFullAccess（只给了 {org()}-static 这个桶）")
    return text, sk


@cred("aliyun", "yaml", "zh")
def _zh_aliyun_sms() -> tuple[Any, ...]:
    sk = aliyun_sk()
    text = (f"# 阿里云短信配置（验证码模板 SMS_{digits(9)}）\naliyun:\n  sms:\n    access-key-id: {aliyun_ak()}\n"
            f"    access-key-secret: {sk}\n    sign-name: {pick(['云帆科技', '青禾健康', '北辰物流'])}\n    region-id: cn-hangzhou")
    return text, sk


@cred("wechat-pay", "note", "zh")
def _zh_wxpay() -> tuple[Any, ...]:
    key = alnum(32)
    text = (f"微信支付商户信息\n商户号（mchid）：{digits(10)}\nAPIv3 密钥：{key}\n"
            f"商户 API 证书序列号：{chars('0123456789ABCDEF', 40)}\n回调地址：https://pay.{domain()}/notify/wechat")
    return text, key


@cred("wechat-pay", "java-properties", "zh")
def _zh_wxpay_props() -> tuple[Any, ...]:
    key = alnum(32)
    text = (f"# 微信支付 v2（老接口，退款还在用）\nwx.pay.appId=wx{hexs(16)}\nwx.pay.mchId={digits(10)}\n"
            f"wx.pay.mchKey={key}\nwx.pay.keyPath=classpath:cert/apiclient_cert.p12")
    return text, key


@cred("dingtalk", "note", "zh")
def _zh_dingtalk() -> tuple[Any, ...]:
    tok, sec = hexs(64), "SEC" + hexs(64)
    text = (f"告警群机器人（钉钉，加签）\nWebhook：https://oapi.dingtalk.com/robot/send?access_token={tok}\n"
            f"加签密钥：{sec}\n关键词：告警")
    return text, [tok, sec], ["SEC"]


@cred("dingtalk", "java-properties", "zh")
def _zh_dingtalk_app() -> tuple[Any, ...]:
    sec = b64url(64)
    text = f"# 钉钉企业内部应用「审批同步」\ndingtalk.app-key=ding{lower(16)}\ndingtalk.app-secret={sec}\ndingtalk.agent-id={digits(10)}"
    return text, sec


@cred("feishu", "chat", "zh")
def _zh_feishu() -> tuple[Any, ...]:
    hook, sec = uid(), alnum(22)
    text = (f"{zh_name()}：飞书机器人配好了 https://open.feishu.cn/open-apis/bot/v2/hook/{hook}\n"
            f"{zh_name()}：签名校验的 secret 是 {sec}，代码里记得带 timestamp")
    return text, [hook, sec]


@cred("feishu", "dotenv", "zh")
def _zh_feishu_app() -> tuple[Any, ...]:
    sec = alnum(32)
    return f"# 飞书自建应用\nFEISHU_APP_ID=cli_{hexs(16)}\nFEISHU_APP_SECRET={sec}", sec


@cred("wecom", "note", "zh")
def _zh_wecom() -> tuple[Any, ...]:
    key = uid()
    text = f"企业微信群机器人（发布通知）：\nhttps://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={key}\n每分钟最多 20 条。"
    return text, key


@cred("tencent-cloud", "code", "zh")
def _zh_cos() -> tuple[Any, ...]:
    sk = alnum(32)
    text = ("from qcloud_cos import CosConfig, CosS3Client\n\n# 腾讯云 COS，先写死，上线前改成环境变量\n"
            f"secret_id = '{tencent_id()}'\nsecret_key = '{sk}'\n"
            "config = CosConfig(Region='ap-guangzhou', SecretId=secret_id, SecretKey=secret_key)")
    return text, sk


@cred("tencent-cloud", "note", "zh")
def _zh_tencent_sms() -> tuple[Any, ...]:
    sk = alnum(32)
    text = (f"腾讯云短信：SDK AppID {digits(10)}；SecretId={tencent_id()}；SecretKey={sk}；"
            f"签名「{pick(['易达出行', '森林书店', '禾苗教育'])}」，模板 ID {digits(7)}。")
    return text, sk


@cred("wechat-miniprogram", "note", "zh")
def _zh_mp() -> tuple[Any, ...]:
    sec = hexs(32)
    text = f"小程序后台 → 开发管理 → 开发设置\nAppID(小程序ID)：wx{hexs(16)}\nAppSecret(小程序密钥)：{sec}\n（重置过一次，{day()}）"
    return text, sec


@cred("wechat-official", "note", "zh")
def _zh_mp_aes() -> tuple[Any, ...]:
    aes, token = alnum(43), alnum(R.randint(16, 28))
    text = (f"公众号服务器配置\nURL：https://wx.{domain()}/callback\nToken：{token}\n"
            f"EncodingAESKey：{aes}\n消息加解密方式：安全模式")
    return text, [aes, token]


@cred("qiniu", "dotenv", "zh")
def _zh_qiniu() -> tuple[Any, ...]:
    sk = b64url(40)
    return f"# 七牛云存储\nQINIU_ACCESS_KEY={b64url(40)}\nQINIU_SECRET_KEY={sk}\nQINIU_BUCKET={org()}-img", sk


@cred("huawei-cloud", "note", "zh")
def _zh_huawei() -> tuple[Any, ...]:
    sk = alnum(40)
    text = f"华为云 OBS 访问密钥（credentials.csv 里抄出来的）：\nAccess Key Id,Secret Access Key\n{upper_alnum(20)},{sk}"
    return text, sk


@cred("wifi-psk", "note", "zh")
def _zh_home() -> tuple[Any, ...]:
    wifi, admin = password("words"), password("short")
    text = (f"家里网络备忘：\n- WiFi：{pick(WORDS).capitalize()}_5G，密码 {wifi}\n"
            f"- 光猫/路由器后台 192.168.1.1，管理员密码：{admin}\n- 宽带账号在电信营业厅的单子上")
    return text, [wifi, admin]


@cred("gitlab", "chat", "zh")
def _zh_gitlab() -> tuple[Any, ...]:
    tok = gitlab()
    a = zh_name()
    text = f"{a} {clock()}\n@{zh_name()} GitLab 的 token 发你了：{tok} ，只有 read_repository 权限，用完告诉我删掉"
    return text, tok, ["glpat-"]


@cred("vpn-password", "onboarding-doc", "zh")
def _zh_vpn() -> tuple[Any, ...]:
    pw = password("pinyin")
    text = (f"## 入职第一天\n1. 领电脑，找 IT 装 EasyConnect\n2. VPN 地址：https://vpn.{domain()}\n"
            f"3. 初始账号：工号；初始密码：{pw}（首次登录后必须修改）\n4. 加入企业微信「研发部」群")
    return text, pw


@cred("qq-mail-smtp", "note", "zh")
def _zh_qqmail() -> tuple[Any, ...]:
    code = lower(16)
    text = (f"报表邮件发送用的 QQ 邮箱：{digits(9)}@qq.com\nSMTP 服务器 smtp.qq.com:465（SSL）\n"
            f"授权码：{code}（不是 QQ 密码！）")
    return text, code


@cred("2fa-backup-codes", "note", "zh")
def _zh_backup_codes() -> tuple[Any, ...]:
    codes = [digits(8) for _ in range(8)]
    text = "阿里云账号 MFA 备用恢复码（每个只能用一次）：\n" + "、".join(codes) + "\n——存在保险柜的 U 盘里也有一份"
    return text, codes


@cred("bip39-seed", "note", "zh")
def _zh_seed() -> tuple[Any, ...]:
    phrase = seed_phrase(12)
    text = f"imToken 钱包助记词（12 个，按顺序）：\n{phrase}\n千万别截图发给任何人！"
    return text, phrase


@cred("redis-password", "handover-doc", "zh")
def _zh_redis() -> tuple[Any, ...]:
    pw = password("alnum")
    text = (f"运维交接文档 v{R.randint(2, 5)}\n三、缓存\nRedis 集群（阿里云 r-{lower(2)}{alnum(14).lower()}.redis.rds.aliyuncs.com），"
            f"实例密码：{pw}；\n淘汰策略 volatile-lru，大 key 巡检每周一跑。")
    return text, pw


@cred("bt-panel", "cli-output", "zh")
def _zh_bt() -> tuple[Any, ...]:
    pw, path = lower(8), lower(8)
    user = lower(8)
    text = ("==================================================================\n"
            "Congratulations! Installed successfully!\n"
            "========================面板账户登录信息==========================\n\n"
            f" 【云服务器】请在安全组放行 {R.randint(10000, 40000)} 端口\n"
            f" 外网面板地址: https://{ip(False)}:{R.randint(10000, 40000)}/{path}\n"
            f" 内网面板地址: https://{ip()}:{R.randint(10000, 40000)}/{path}\n"
            f" username: {user}\n password: {pw}\n\n"
            " 浏览器访问以下链接，添加宝塔客服\n==================================================================")
    return text, pw


@cred("nacos-config", "yaml", "zh")
def _zh_nacos() -> tuple[Any, ...]:
    pw = password()
    text = (f"# Nacos 配置：{pick(APPS)}-service-prod.yaml（分组 DEFAULT_GROUP）\nspring:\n  datasource:\n"
            f"    url: jdbc:mysql://{ip()}:3306/{pick(APPS)}?useUnicode=true&characterEncoding=utf8\n"
            f"    username: {pick(APPS)}\n    password: {pw}   # 上次改密：{day()}")
    return text, pw


@cred("jpush", "note", "zh")
def _zh_jpush() -> tuple[Any, ...]:
    sec = hexs(24)
    return f"极光推送：AppKey {hexs(24)}，Master Secret {sec}（服务端用，别放 App 里）", sec


@cred("alipay", "note", "zh")
def _zh_alipay() -> tuple[Any, ...]:
    const = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    key = const + b64(R.randint(300, 360)) + "="
    text = (f"支付宝开放平台 应用ID：2021{digits(12)}\n应用私钥（RSA2，PKCS8）：\n{key}\n"
            "支付宝公钥在开放平台「接口加签方式」里看")
    return text, key, [const]


@cred("openai", "chat", "zh")
def _zh_openai() -> tuple[Any, ...]:
    key = openai_key()
    return f"{zh_name()}：用这个 key 跑一下评测脚本吧 {key}，额度还剩 200 刀左右", key, ["sk-proj-"]


@cred("deepseek", "dotenv", "zh")
def _zh_deepseek() -> tuple[Any, ...]:
    key = "sk-" + hexs(32)
    return f"# 模型服务（DeepSeek 官方）\nDEEPSEEK_API_KEY={key}\nDEEPSEEK_BASE_URL=https://api.deepseek.com/v1", key


@cred("dashscope", "code", "zh")
def _zh_dashscope() -> tuple[Any, ...]:
    key = "sk-" + hexs(32)
    text = ("import dashscope\n# 通义千问，百炼控制台申请的\n"
            f"dashscope.api_key = \"{key}\"\nresp = dashscope.Generation.call(model='qwen-plus', prompt='你好')")
    return text, key


@cred("zhipu", "note", "zh")
def _zh_zhipu() -> tuple[Any, ...]:
    key = f"{hexs(32)}.{alnum(16)}"
    return f"智谱 GLM 的 API Key：{key}\n（id.secret 的格式，SDK 里直接填整串）", key


@cred("moonshot", "chat", "zh")
def _zh_moonshot() -> tuple[Any, ...]:
    key = "sk-" + alnum(48)
    return f"Kimi 的 key 换了：{key}　老的那个已经删了", key


@cred("multiple", "markdown-table", "zh")
def _zh_table() -> tuple[Any, ...]:
    rows, secrets = [], []
    for name in R.sample(["nginx-01", "app-01", "app-02", "mysql-master", "redis-01", "jenkins"], 3):
        pw = password()
        secrets.append(pw)
        rows.append(f"| {name} | {ip()} | root | {pw} | {pick(['CentOS 7.9', 'Ubuntu 22.04', 'Rocky 9'])} |")
    text = "### 服务器清单（测试环境）\n| 主机 | IP | 账号 | 密码 | 系统 |\n|---|---|---|---|---|\n" + "\n".join(rows)
    return text, secrets


@cred("generic-password", "chat", "zh")
def _zh_fullwidth() -> tuple[Any, ...]:
    pw = password("short")
    text = f"{zh_name()}：堡垒机账号 {pick(PINYIN)}，密码：{pw}（别外传哈），有问题找我。"
    return text, pw


@cred("docker-registry", "shell", "zh")
def _zh_ccr() -> tuple[Any, ...]:
    pw = password(safe=True)
    text = (f"# 推镜像到腾讯云个人版仓库\ndocker login ccr.ccs.tencentyun.com --username={digits(12)} -p '{pw}'\n"
            f"docker push ccr.ccs.tencentyun.com/{org()}/{pick(APPS)}:v{R.randint(1, 3)}.{R.randint(0, 20)}.{R.randint(0, 9)}")
    return text, pw


@cred("multiple", "dotenv", "zh")
def _zh_dotenv() -> tuple[Any, ...]:
    db, jwt_key = password(), hexs(48)
    text = (f"# 数据库\nDB_HOST={ip()}\nDB_USER={pick(APPS)}\n# 数据库密码（生产）\nDB_PASSWORD={db}\n\n"
            f"# 登录态签名密钥，改了所有人都会掉线\nJWT_SECRET={jwt_key}")
    return text, [db, jwt_key]


@cred("wifi-psk", "note", "zh")
def _zh_wifi() -> tuple[Any, ...]:
    pw = password("short")
    return f"研发部 WiFi（别给访客）：ssid RD-{upper_alnum(4)}，密码 {pw}", pw


@cred("jenkins", "note", "zh")
def _zh_jenkins() -> tuple[Any, ...]:
    tok = "11" + hexs(32)
    text = f"Jenkins 触发构建用的 API Token（用户 deploy-bot）：{tok}\ncurl -X POST https://ci.{domain()}/job/{pick(APPS)}/build --user deploy-bot:<token>"
    return text, tok


@cred("aws", "chat", "zh")
def _zh_aws() -> tuple[Any, ...]:
    sec = aws_secret()
    text = (f"[图片] {zh_name()}：截图看不清，我直接打出来\nAccess key ID: {aws_key_id()}\n"
            f"Secret access key: {sec}\n{zh_name()}：好的，我配到 ~/.aws/credentials 里")
    return text, sec


@cred("postgres-password", "sql", "zh")
def _zh_sql() -> tuple[Any, ...]:
    pw = password()
    text = f"-- 给报表组开只读账号（{zh_name()}，{day()}）\nCREATE USER bi_reader WITH PASSWORD '{pw}';\nGRANT pg_read_all_data TO bi_reader;"
    return text, pw


@cred("ssh-password", "note", "zh")
def _zh_ssh() -> tuple[Any, ...]:
    pw = password("pinyin")
    return f"NAS（群晖）：ssh admin@{ip()} -p 5022，密码是{pw}；套件中心里 Docker 已经装好。", pw


# =============================================================================================
# look-alikes: the same outputs with nothing secret in them
# =============================================================================================


@look("env-dump", times=3)
def _l_env() -> str:
    user = person()
    return "$ env | sort\n" + "\n".join(sorted(env_lines(user, R.randint(10, 16))))


@look("env-dump", times=2)
def _l_env_grep() -> str:
    user = person()
    lines = ["GIT_ASKPASS=/usr/share/code/resources/app/extensions/git/dist/askpass.sh",
             "VSCODE_GIT_ASKPASS_MAIN=/usr/share/code/resources/app/extensions/git/dist/askpass-main.js",
             "VSCODE_GIT_ASKPASS_NODE=/usr/share/code/code",
             f"VSCODE_GIT_IPC_HANDLE=/run/user/1000/vscode-git-{hexs(10)}.sock",
             "TOKENIZERS_PARALLELISM=false", f"PASSWORD_STORE_DIR=/home/{user}/.password-store",
             "KEYTIMEOUT=1", "SSH_ASKPASS=/usr/bin/ksshaskpass", "SSH_ASKPASS_REQUIRE=prefer",
             "SSH_AUTH_SOCK=/run/user/1000/keyring/ssh", "GPG_TTY=/dev/pts/3",
             "HF_HUB_DISABLE_TELEMETRY=1", "AWS_PROFILE=sandbox", "AWS_SDK_LOAD_CONFIG=1",
             "SECRETS_BACKEND=vault", f"VAULT_ADDR=https://vault.{domain()}:8200"]
    return "$ printenv | grep -iE 'key|token|pass|secret|auth|aws|vault'\n" + "\n".join(R.sample(lines, R.randint(6, 10)))


@look("env-dump", times=2)
def _l_env_container() -> str:
    fpr = chars("0123456789ABCDEF", 40)
    lines = [f"HOSTNAME={hexs(12)}", "PYTHON_VERSION=3.12.6", f"GPG_KEY={fpr}",
             f"PYTHON_SHA256={hexs(64)}", "LANG=C.UTF-8", "PIP_NO_CACHE_DIR=1",
             "PATH=/usr/local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME=/root", "PYTHONUNBUFFERED=1", "PORT=8000", f"KUBERNETES_SERVICE_HOST=10.{R.randint(0, 99)}.0.1",
             "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_PORT_443_TCP_PROTO=tcp"]
    return f"$ kubectl exec -it {pick(APPS)}-{hexs(9)}-{lower(5)} -- env\n" + "\n".join(lines)


@look("docker-inspect", times=2)
def _l_inspect() -> str:
    env = ["POSTGRES_USER=app", "POSTGRES_DB=app", "POSTGRES_PASSWORD_FILE=/run/secrets/pg_password",
           "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/16/bin",
           "GOSU_VERSION=1.17", "PG_MAJOR=16", "PG_VERSION=16.4-1.pgdg120+2", "PGDATA=/var/lib/postgresql/data"]
    body = [{"Id": hexs(64), "Created": f"{day()}T{clock()}:51.{digits(9)}Z",
             "Image": "sha256:" + hexs(64), "Config": {"Env": env, "Image": "postgres:16"}}]
    return "$ docker inspect db\n" + json.dumps(body, indent=4)


@look("masked-output", times=2)
def _l_aws_list() -> str:
    return ("$ aws configure list\n      Name                    Value             Type    Location\n"
            "      ----                    -----             ----    --------\n"
            f"   profile                  sandbox           manual    --profile\n"
            f"access_key     ****************{upper_alnum(4)} shared-credentials-file\n"
            f"secret_key     ****************{alnum(4)} shared-credentials-file\n"
            f"    region                eu-west-1      config-file    ~/.aws/config")


@look("masked-output", times=2)
def _l_gh_status() -> str:
    return (f"$ gh auth status\ngithub.com\n  ✓ Logged in to github.com account {person()}-{lower(3)} (keyring)\n"
            "  - Active account: true\n  - Git operations protocol: ssh\n  - Token: gho_************************************\n"
            "  - Token scopes: 'admin:public_key', 'gist', 'read:org', 'repo'")


@look("masked-output", times=2)
def _l_gha_log() -> str:
    return (f"Run aws-actions/configure-aws-credentials@v4\n  with:\n    aws-access-key-id: ***\n"
            "    aws-secret-access-key: ***\n    aws-region: eu-central-1\n"
            f"Run echo \"token length: ${{#NPM_TOKEN}}\"\ntoken length: 40\nRun npm publish --access public\n"
            f"+ {pick(['@', ''])}{org()}/{pick(APPS)}@{R.randint(1, 4)}.{R.randint(0, 20)}.{R.randint(0, 9)}")


@look("masked-output")
def _l_jenkins_mask() -> str:
    return ("[Pipeline] withCredentials\nMasking supported pattern matches of $REGISTRY_PASS\n[Pipeline] {\n[Pipeline] sh\n"
            "+ docker login -u ci -p **** registry.internal\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\n"
            "Login Succeeded")


@look("masked-output", times=2)
def _l_kubectl_describe() -> str:
    return (f"$ kubectl describe secret {pick(APPS)}-db\nName:         {pick(APPS)}-db\nNamespace:    prod\n"
            "Labels:       app.kubernetes.io/managed-by=Helm\nAnnotations:  meta.helm.sh/release-name: db\n\n"
            "Type:  Opaque\n\nData\n====\n"
            f"password:  {R.randint(16, 40)} bytes\nusername:  {R.randint(3, 12)} bytes\nhost:      {R.randint(20, 60)} bytes")


@look("masked-output", times=2)
def _l_tf_sensitive() -> str:
    return (f"$ terraform output\ndb_endpoint = \"{pick(APPS)}.c{lower(10)}.eu-central-1.rds.amazonaws.com:5432\"\n"
            "db_password = <sensitive>\n"
            f"vpc_id = \"vpc-0{hexs(16)}\"\n\n$ terraform plan | grep -A2 password\n"
            "      ~ password = (sensitive value)\n      # (12 unchanged attributes hidden)")


@look("masked-output")
def _l_fly() -> str:
    rows = "\n".join(f"{n:<24}{hexs(16)}\t{R.randint(2, 40)} days ago"
                     for n in ["DATABASE_URL", "SECRET_KEY_BASE", "STRIPE_API_KEY", "SENTRY_DSN"])
    return f"$ fly secrets list\nNAME                    DIGEST          \tCREATED AT\n{rows}"


@look("masked-output")
def _l_npm_config() -> str:
    return ("$ npm config list\n; \"user\" config from /home/dev/.npmrc\n\n//registry.npmjs.org/:_authToken = (protected)\n"
            "fund = false\n\n; node bin location = /usr/bin/node\n; node version = v20.17.0\n; npm local prefix = /home/dev/src/app\n"
            "; npm version = 10.8.2\n; cwd = /home/dev/src/app\n; HOME = /home/dev\n; Run `npm config ls -l` to show all defaults.")


@look("masked-output")
def _l_vercel_env() -> str:
    return ("$ vercel env ls\n> Environment Variables found for team/app [312ms]\n\n"
            " name                      value               environments                       created\n"
            " DATABASE_URL              Encrypted           Production, Preview                2d ago\n"
            " NEXTAUTH_SECRET           Encrypted           Production                         2d ago\n"
            " NEXT_PUBLIC_POSTHOG_HOST  https://eu.i.posthog.com  Production, Preview, Development 5d ago")


@look("masked-output", times=4)
def _l_masked_note() -> str:
    return pick([
        f"db: {host()} user app password: ******** (ask {person()})",
        f"OPENAI_API_KEY=<redacted>\nANTHROPIC_API_KEY=<redacted>\nMODEL={pick(['gpt-4o', 'claude-sonnet-4-5'])}",
        "token: [hidden]  scopes: repo, workflow  expires: 2026-01-31",
        f"STRIPE_SECRET_KEY=sk_live_••••••••••••••••{alnum(4)}",
        "api key: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (in 1Password, vault 'Ops')",
        f"password={'*' * R.randint(8, 16)}",
    ])


@look("masked-output", "zh", times=3)
def _l_masked_zh() -> str:
    return pick([
        f"生产库账号 app_rw，密码：******（找{pick(ZH_NAMES)}要，别写在文档里）",
        "AccessKey Secret：****************（只在创建时显示一次，已存到 KMS）",
        f"服务器 {ip()} root 密码已放到密码柜「运维/服务器」条目下",
        "APIv3 密钥：已设置（商户平台不再显示明文）",
    ])


@look("masked-output")
def _l_kubeconfig_view() -> str:
    return (f"$ kubectl config view\napiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: DATA+OMITTED\n"
            f"    server: https://{ip()}:6443\n  name: {org()}-prod\nusers:\n- name: admin\n  user:\n"
            "    client-certificate-data: DATA+OMITTED\n    client-key-data: DATA+OMITTED\n- name: ci\n  user:\n    token: REDACTED")


@look("masked-output")
def _l_nmcli_hidden() -> str:
    return (f"$ nmcli connection show '{pick(WORDS).capitalize()}-Home' | grep -i security\n802-11-wireless-security.key-mgmt:        wpa-psk\n"
            "802-11-wireless-security.psk:             <hidden>\n802-11-wireless-security.psk-flags:       0 (none)")


@look("config-no-secret", times=2)
def _l_git_config() -> str:
    o, a = org(), pick(APPS)
    return (f"$ git config --list\ncredential.helper={pick(['store', 'osxkeychain', 'manager', 'cache --timeout=3600', 'libsecret'])}\n"
            f"user.name={person().capitalize()} {pick(['Okafor', 'Lindqvist', 'Moreau', 'Tanaka'])}\nuser.email={person()}@{domain()}\n"
            f"core.editor=nvim\npull.rebase=true\ninit.defaultbranch=main\nremote.origin.url=git@github.com:{o}/{a}.git\n"
            "remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\nbranch.main.remote=origin\nbranch.main.merge=refs/heads/main")


@look("config-no-secret")
def _l_pip_config() -> str:
    return (f"$ pip config list\nglobal.index-url='https://pypi.org/simple'\nglobal.extra-index-url='https://{org()}.jfrog.io/artifactory/api/pypi/pypi-local/simple'\n"
            "global.require-virtualenv='true'\ninstall.keyring-provider='subprocess'")


@look("config-no-secret")
def _l_m2() -> str:
    return ("<server>\n  <id>nexus-releases</id>\n  <username>${env.NEXUS_USER}</username>\n"
            "  <password>${env.NEXUS_PASSWORD}</password>\n</server>")


@look("config-no-secret")
def _l_docker_config() -> str:
    body = {"auths": {"https://index.docker.io/v1/": {}, "ghcr.io": {}, f"{digits(12)}.dkr.ecr.eu-west-1.amazonaws.com": {}},
            "credsStore": "desktop", "credHelpers": {f"{digits(12)}.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"}}
    return "$ cat ~/.docker/config.json\n" + json.dumps(body, indent="\t")


@look("config-no-secret")
def _l_docker_login() -> str:
    return (f"$ echo \"$CR_PAT\" | docker login ghcr.io -u {person()} --password-stdin\n"
            f"WARNING! Your password will be stored unencrypted in /home/{person()}/.docker/config.json.\n"
            "Configure a credential helper to remove this warning. See\nhttps://docs.docker.com/engine/reference/commandline/login/#credential-stores\n\nLogin Succeeded")


@look("config-no-secret", times=3)
def _l_dotenv_blank() -> str:
    return pick([
        "# copy to .env and fill in\nDATABASE_URL=\nSTRIPE_SECRET_KEY=\nOPENAI_API_KEY=\nSENTRY_DSN=\nLOG_LEVEL=debug",
        "APP_ENV=local\nAPP_KEY=\nAPP_DEBUG=true\nDB_CONNECTION=mysql\nDB_HOST=127.0.0.1\nDB_PASSWORD=\nMAIL_MAILER=log\nMAIL_PASSWORD=null\nPUSHER_APP_SECRET=",
        "DB_PASSWORD=${DB_PASSWORD:?set DB_PASSWORD}\nREDIS_PASSWORD=${REDIS_PASSWORD:-}\nJWT_SECRET=${JWT_SECRET}",
        "OPENAI_API_KEY=op://Engineering/OpenAI/credential\nGITHUB_TOKEN=op://Private/GitHub PAT/token",
    ])


@look("config-no-secret")
def _l_docker_compose_secrets() -> str:
    return ("services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD_FILE: /run/secrets/db_password\n"
            "    secrets:\n      - db_password\nsecrets:\n  db_password:\n    file: ./secrets/db_password.txt")


@look("config-no-secret")
def _l_redis_default() -> str:
    return ("# IMPORTANT NOTE: starting with Redis 6 \"requirepass\" is just a compatibility\n"
            "# layer on top of the new ACL system.\n#\n# requirepass foobared\n\n# maxclients 10000")


@look("config-no-secret")
def _l_kafka_provider() -> str:
    return ("config.providers=file\nconfig.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            "username=\"${file:/opt/kafka/secrets.properties:user}\" password=\"${file:/opt/kafka/secrets.properties:password}\";")


@look("config-no-secret")
def _l_wp_getenv() -> str:
    return ("define( 'DB_NAME', getenv('WORDPRESS_DB_NAME') ?: 'wordpress' );\n"
            "define( 'DB_PASSWORD', getenv_docker('WORDPRESS_DB_PASSWORD', '') );\n"
            "define( 'AUTH_KEY', getenv_docker('WORDPRESS_AUTH_KEY', 'put your unique phrase here') );")


@look("config-no-secret", times=3)
def _l_java_props_ref() -> str:
    return pick([
        f"spring.datasource.url=jdbc:postgresql://{host()}:5432/app\nspring.datasource.username=${{DB_USER}}\nspring.datasource.password=${{DB_PASSWORD}}",
        "spring.datasource.password=ENC(" + b64(64) + ")\njasypt.encryptor.password=${JASYPT_PASSWORD}",
        "spring.mail.password=${MAIL_PASSWORD:}\nspring.mail.properties.mail.smtp.auth=true\nspring.mail.properties.mail.smtp.starttls.enable=true",
    ])


@look("config-no-secret")
def _l_helm_existing() -> str:
    return ("postgresql:\n  auth:\n    existingSecret: pg-credentials\n    secretKeys:\n      adminPasswordKey: postgres-password\n"
            "      userPasswordKey: password\n    password: \"\"\nredis:\n  auth:\n    enabled: false")


@look("config-no-secret")
def _l_ansible_ref() -> str:
    return ("mysql_root_password: \"{{ vault_mysql_root_password }}\"\nansible_become_password: \"{{ lookup('env', 'BECOME_PASS') }}\"\n"
            "api_token: \"{{ lookup('community.hashi_vault.hashi_vault', 'secret=kv/data/ci:token') }}\"")


@look("config-no-secret")
def _l_systemd_creds() -> str:
    return (f"[Service]\nUser={pick(APPS)}\nEnvironmentFile=/etc/{pick(APPS)}/env\nLoadCredential=db_password:/etc/credstore/db_password\n"
            "Environment=LANG=C.UTF-8 PYTHONUNBUFFERED=1 DB_PASSWORD_FILE=%d/db_password\nExecStart=/opt/app/bin/serve")


@look("config-no-secret")
def _l_ldap_nosecret() -> str:
    return (f"$ ldapsearch -x -H ldaps://ldap.{domain()} -D \"cn=readonly,dc=corp,dc=lan\" -y /etc/ldap/readonly.secret "
            "-b \"ou=people,dc=corp,dc=lan\" \"(uid=*)\" uid | grep -c ^uid:\n" + str(R.randint(40, 900)))


@look("config-no-secret")
def _l_wg_public() -> str:
    return (f"[Interface]\nAddress = 10.8.0.1/24\nListenPort = 51820\nPostUp = wg set %i private-key /etc/wireguard/private.key\n\n"
            f"[Peer]\n# {person()}'s laptop\nPublicKey = {random_b64_bytes(32)}\nAllowedIPs = 10.8.0.{R.randint(2, 90)}/32")


@look("config-no-secret")
def _l_wpa_open() -> str:
    return f"network={{\n\tssid=\"{pick(WORDS).capitalize()}Cafe-Free\"\n\tkey_mgmt=NONE\n\tpriority=5\n}}"


@look("config-no-secret")
def _l_postman_vars() -> str:
    body = {"auth": {"type": "bearer", "bearer": [{"key": "token", "value": "{{access_token}}", "type": "string"}]},
            "variable": [{"key": "baseUrl", "value": f"https://api.{domain()}"}, {"key": "access_token", "value": "", "type": "secret"}]}
    return json.dumps(body, indent="\t")


@look("config-no-secret", times=3)
def _l_sql_nopw() -> str:
    return pick([
        "CREATE USER 'backup'@'localhost' IDENTIFIED WITH auth_socket;\nGRANT SELECT, LOCK TABLES ON *.* TO 'backup'@'localhost';",
        "postgres=# \\password app_rw\nEnter new password for user \"app_rw\":\nEnter it again:\npostgres=#",
        "ALTER ROLE reporting PASSWORD NULL;\nALTER ROLE reporting NOLOGIN;",
        "cur.execute(\"CREATE USER %s IDENTIFIED BY %s\", (username, generated))",
    ])


@look("config-no-secret", times=2)
def _l_ps_nosecret() -> str:
    return pick([
        "$cred = Get-Credential -UserName 'CORP\\svc_backup' -Message 'Backup account'\n$pass = Read-Host -AsSecureString 'Password'",
        "$env:PATH += \";C:\\tools\\bin\"\n$env:DOTNET_CLI_TELEMETRY_OPTOUT = \"1\"\n$env:ASPNETCORE_ENVIRONMENT = \"Development\"",
        "$secret = Get-AzKeyVaultSecret -VaultName kv-prod -Name SqlPassword -AsPlainText\nInvoke-Sqlcmd -ServerInstance sql01 -Username app -Password $secret",
    ])


@look("ciphertext", times=2)
def _l_ansible_vault() -> str:
    rows = "\n".join("          " + hexs(80) for _ in range(R.randint(4, 6)))
    return f"db_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n{rows}"


@look("ciphertext")
def _l_sops() -> str:
    return (f"db:\n    password: ENC[AES256_GCM,data:{b64(24)},iv:{b64(42)}=,tag:{b64(22)}==,type:str]\n"
            f"sops:\n    age:\n        - recipient: age1{chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n    lastmodified: \"{day()}T{clock()}:02Z\"\n    version: 3.9.0")


@look("ciphertext")
def _l_rails_enc() -> str:
    return f"$ cat config/credentials.yml.enc\n{b64(R.randint(300, 400))}--{b64(16)}--{b64(22)}=="


@look("ciphertext")
def _l_sealed() -> str:
    return (f"apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: {pick(APPS)}-db\nspec:\n  encryptedData:\n"
            f"    password: AgB{b64(R.randint(300, 360))}==")


@look("lockfile", times=3)
def _l_package_lock() -> str:
    name = pick(["lodash", "chalk", "semver", "debug", "ms", "picocolors", "nanoid", "yaml"])
    ver = f"{R.randint(1, 9)}.{R.randint(0, 20)}.{R.randint(0, 12)}"
    return (f"    \"node_modules/{name}\": {{\n      \"version\": \"{ver}\",\n"
            f"      \"resolved\": \"https://registry.npmjs.org/{name}/-/{name}-{ver}.tgz\",\n"
            f"      \"integrity\": \"sha512-{b64(86)}==\",\n      \"license\": \"MIT\"\n    }},")


@look("lockfile")
def _l_yarn_lock() -> str:
    return (f"\"@babel/code-frame@^7.24.7\":\n  version \"7.24.7\"\n  resolved \"https://registry.yarnpkg.com/@babel/code-frame/-/code-frame-7.24.7.tgz#{hexs(40)}\"\n"
            f"  integrity sha512-{b64(86)}==\n  dependencies:\n    \"@babel/highlight\" \"^7.24.7\"")


@look("lockfile", times=3)
def _l_pip_hashes() -> str:
    pkg = pick(["requests==2.32.3", "urllib3==2.2.3", "certifi==2024.8.30", "idna==3.10", "charset-normalizer==3.3.2"])
    return f"{pkg} \\\n    --hash=sha256:{hexs(64)} \\\n    --hash=sha256:{hexs(64)}"


@look("lockfile")
def _l_go_sum() -> str:
    mods = ["github.com/spf13/cobra v1.8.1", "golang.org/x/sys v0.25.0", "github.com/google/uuid v1.6.0"]
    return "\n".join(f"{m} h1:{b64(43)}=\n{m}/go.mod h1:{b64(43)}=" for m in mods)


@look("lockfile")
def _l_cargo_lock() -> str:
    return (f"[[package]]\nname = \"serde\"\nversion = \"1.0.210\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n"
            f"checksum = \"{hexs(64)}\"\ndependencies = [\n \"serde_derive\",\n]")


@look("lockfile")
def _l_composer_lock() -> str:
    return (f"\"name\": \"monolog/monolog\",\n\"version\": \"3.7.0\",\n\"source\": {{\n    \"type\": \"git\",\n"
            f"    \"url\": \"https://github.com/Seldaek/monolog.git\",\n    \"reference\": \"{hexs(40)}\"\n}},\n"
            f"\"dist\": {{\n    \"type\": \"zip\",\n    \"shasum\": \"\"\n}}")


@look("lockfile")
def _l_poetry_lock() -> str:
    return (f"[[package]]\nname = \"pydantic-core\"\nversion = \"2.23.4\"\nfiles = [\n"
            f"    {{file = \"pydantic_core-2.23.4-cp312-cp312-manylinux_2_17_x86_64.whl\", hash = \"sha256:{hexs(64)}\"}},\n]")


@look("lockfile")
def _l_nix() -> str:
    return (f"  src = fetchFromGitHub {{\n    owner = \"{org()}\";\n    repo = \"{pick(APPS)}\";\n    rev = \"v{R.randint(0, 3)}.{R.randint(0, 30)}.0\";\n"
            f"    hash = \"sha256-{b64(43)}=\";\n  }};\n  vendorHash = \"sha256-{b64(43)}=\";")


@look("hash", times=4)
def _l_sha_sums() -> str:
    name = pick(["node-v20.17.0-linux-x64.tar.xz", "kubectl", "terraform_1.9.5_linux_amd64.zip", "go1.23.1.linux-amd64.tar.gz"])
    date = day()
    return pick([f"$ sha256sum {name}\n{hexs(64)}  {name}",
                 f"$ md5sum backup-{date}.sql.gz\n{hexs(32)}  backup-{date}.sql.gz",
                 f"SHA512 ({name}) = {hexs(128)}",
                 f"checksum mismatch\n  expected: sha256:{hexs(64)}\n  got:      sha256:{hexs(64)}"])


@look("hash")
def _l_sri() -> str:
    return (f"<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\"\n"
            f"        integrity=\"sha384-{b64(64)}\" crossorigin=\"anonymous\"></script>")


@look("digest", times=3)
def _l_docker_pull() -> str:
    img = pick(["nginx:1.27-alpine", "redis:7.4", "python:3.12-slim", "node:20-bookworm"])
    layers = "\n".join(f"{hexs(12)}: Pull complete" for _ in range(R.randint(3, 6)))
    return f"$ docker pull {img}\n{img.split(':')[1]}: Pulling from library/{img.split(':')[0]}\n{layers}\nDigest: sha256:{hexs(64)}\nStatus: Downloaded newer image for {img}"


@look("digest")
def _l_docker_images() -> str:
    rows = "\n".join(f"{org()}/{pick(APPS):<12} v{R.randint(1, 3)}.{R.randint(0, 9)}.{R.randint(0, 9)}   sha256:{hexs(64)}   {hexs(12)}   {R.randint(2, 9)} days ago   {R.randint(40, 900)}MB" for _ in range(3))
    return "$ docker images --digests\nREPOSITORY          TAG      DIGEST                                                                    IMAGE ID       CREATED       SIZE\n" + rows


@look("digest")
def _l_k8s_image() -> str:
    return (f"    containers:\n    - name: {pick(APPS)}\n      image: ghcr.io/{org()}/{pick(APPS)}@sha256:{hexs(64)}\n"
            "      imagePullPolicy: IfNotPresent")


@look("digest")
def _l_docker_ps() -> str:
    rows = "\n".join(f"{hexs(12)}   {pick(['postgres:16', 'redis:7', 'nginx:1.27', 'grafana/grafana:11.2.0'])}   \"docker-entrypoint.s…\"   {R.randint(2, 9)} hours ago   Up {R.randint(2, 9)} hours   {pick(APPS)}-{R.randint(1, 3)}" for _ in range(3))
    return "$ docker ps\nCONTAINER ID   IMAGE          COMMAND                  CREATED       STATUS       NAMES\n" + rows


@look("git", times=3)
def _l_git_log() -> str:
    msgs = ["fix: retry on 429 from the billing API", "chore(deps): bump axios from 1.7.4 to 1.7.7",
            "feat: rotate the session key every 24h", "docs: explain how to set the token in CI",
            "refactor: move password hashing to argon2id", "test: cover the expired-token path",
            "revert \"feat: cache secrets in memory\""]
    return "$ git log --oneline -5\n" + "\n".join(f"{hexs(7)} {m}" for m in R.sample(msgs, 5))


@look("git", times=2)
def _l_git_show() -> str:
    return (f"commit {hexs(40)} (HEAD -> main, origin/main)\nMerge: {hexs(7)} {hexs(7)}\n"
            f"Author: {person().capitalize()} <{person()}@{domain()}>\nDate:   Tue Mar 11 14:02:{R.randint(10, 59)} 2025 +0100\n\n"
            f"    Merge pull request #{R.randint(100, 4000)} from {org()}/rotate-keys\n\n    Rotate signing keys without downtime")


@look("git")
def _l_git_misc() -> str:
    return (f"$ git rev-parse HEAD\n{hexs(40)}\n$ git describe --tags\nv{R.randint(1, 4)}.{R.randint(0, 20)}.{R.randint(0, 9)}-{R.randint(1, 40)}-g{hexs(7)}\n"
            f"$ git ls-remote origin refs/heads/main\n{hexs(40)}\trefs/heads/main")


@look("git")
def _l_github_urls() -> str:
    o, a = org(), pick(APPS)
    return (f"see https://github.com/{o}/{a}/commit/{hexs(40)} and the diff "
            f"https://github.com/{o}/{a}/compare/{hexs(12)}...{hexs(12)}")


@look("version", times=3)
def _l_versions() -> str:
    return pick([
        "$ pip freeze | head -5\nanyio==4.6.0\ncertifi==2024.8.30\nh11==0.14.0\nhttpcore==1.0.5\nhttpx==0.27.2",
        f"## [{R.randint(1, 5)}.{R.randint(0, 20)}.{R.randint(0, 9)}] - {day()}\n### Fixed\n- Token refresh no longer races with logout (#{R.randint(100, 999)})\n### Changed\n- Minimum Node.js version is now 20.11.0",
        f"$ npm ls --depth=0\n{pick(APPS)}@{R.randint(0, 3)}.{R.randint(0, 9)}.0 /srv/app\n├── express@4.21.0\n├── jsonwebtoken@9.0.2\n└── pg@8.13.0",
        f"kubectl version\nClient Version: v1.31.{R.randint(0, 3)}\nKustomize Version: v5.4.2\nServer Version: v1.30.{R.randint(2, 6)}-eks-{hexs(7)}",
    ])


@look("build-id", times=5)
def _l_build_ids() -> str:
    return pick([
        f"Build #{R.randint(1000, 9999)} ({day().replace('-', '')}.{R.randint(1, 9)}) succeeded in {R.randint(2, 19)}m {R.randint(1, 59)}s",
        f"Publishing build scan...\nhttps://gradle.com/s/{lower(13)}",
        f"https://github.com/{org()}/{pick(APPS)}/actions/runs/{digits(11)}/job/{digits(11)}",
        f"INFO: Invocation ID: {uid()}\nINFO: Streaming build results to: https://app.buildbuddy.io/invocation/{uid()}",
        f"Cache restored from key: node-modules-Linux-{hexs(64)}",
        f"Next.js build id: {b64url(21)}\nRoute (app)    Size     First Load JS\n┌ ○ /          5.2 kB   {R.randint(90, 130)} kB",
        f"dist/assets/index-{b64url(8)}.js   {R.randint(100, 900)}.{R.randint(10, 99)} kB │ gzip: {R.randint(30, 200)}.{R.randint(10, 99)} kB",
    ])


@look("event-id", times=3)
def _l_sentry() -> str:
    return pick([
        f"Sentry captured event {hexs(32)} (level=error, release={pick(APPS)}@{R.randint(1, 3)}.{R.randint(0, 9)}.0)",
        f"https://{org()}.sentry.io/issues/{digits(10)}/events/{hexs(32)}/?project={digits(7)}",
        f"Event ID: {hexs(32)}\nIf you contact support, include this ID.",
    ])


@look("trace-id", times=6)
def _l_traces() -> str:
    return pick([
        f"traceparent: 00-{hexs(32)}-{hexs(16)}-01\ntracestate: dd=s:1;o:rum",
        f"X-Amzn-Trace-Id: Root=1-{hexs(8)}-{hexs(24)};Parent={hexs(16)};Sampled=1",
        f"x-request-id: {uid()}\nx-envoy-upstream-service-time: {R.randint(3, 400)}",
        f"{{\"level\":\"error\",\"msg\":\"upstream timeout\",\"trace_id\":\"{hexs(32)}\",\"span_id\":\"{hexs(16)}\",\"service\":\"{pick(APPS)}\"}}",
        f"X-Cloud-Trace-Context: {hexs(32)}/{digits(19)};o=1",
        f"x-amz-cf-id: {b64url(54)}==\nx-cache: Miss from cloudfront\nvia: 1.1 {hexs(32)}.cloudfront.net (CloudFront)",
        f"RequestId: {uid()}  Duration: {R.randint(2, 900)}.{R.randint(10, 99)} ms  Billed Duration: {R.randint(3, 901)} ms",
    ])


@look("identifier", times=6)
def _l_ids() -> str:
    return pick([
        f"arn:aws:iam::{digits(12)}:role/{pick(APPS)}-task-role",
        f"arn:aws:secretsmanager:eu-west-1:{digits(12)}:secret:prod/{pick(APPS)}/db-{alnum(6)}",
        f"order {uid()} moved to state SHIPPED",
        f"metadata:\n  uid: {uid()}\n  resourceVersion: \"{digits(8)}\"\n  generation: {R.randint(1, 30)}",
        f"$ kubectl get pods\nNAME                               READY   STATUS    RESTARTS   AGE\n{pick(APPS)}-{hexs(10)}-{lower(5)}   1/1     Running   0          {R.randint(2, 59)}m",
        f"ETag: \"{hexs(32)}\"\nLast-Modified: Mon, 10 Mar 2025 09:12:44 GMT",
        f"customer cus_{alnum(14)} subscription sub_{alnum(24)} invoice in_{alnum(24)}",
        f"Instance i-0{hexs(16)} in subnet subnet-0{hexs(16)} (sg-0{hexs(16)})",
    ])


@look("identifier", "zh", times=4)
def _l_ids_zh() -> str:
    return pick([
        f"微信支付订单号：42000{digits(23)}\n商户订单号：{day().replace('-', '')}{digits(10)}\n支付金额：¥{R.randint(10, 999)}.00",
        f"商户号 {digits(10)}，AppID wx{hexs(16)}，证书序列号 {chars('0123456789ABCDEF', 40)}（这些都不是密钥，可以写在文档里）",
        f"顺丰运单号 SF{digits(13)}，预计明天送达",
        f"工单 #{digits(6)} 已分配给{pick(ZH_NAMES)}，trace_id={hexs(32)}",
        f"支付宝应用 ID：2021{digits(12)}（公开信息，前端也会用到）",
    ])


@look("url", times=7)
def _l_urls() -> str:
    return pick([
        f"https://www.{domain()}/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=spring_{digits(4)}&utm_content=cta_{lower(4)}",
        f"https://www.{domain()}/landing?gclid={b64url(R.randint(60, 90))}&gad_source=1",
        f"https://{domain()}/blog/post?fbclid=IwAR{b64url(R.randint(50, 70))}",
        f"GET https://www.googleapis.com/youtube/v3/playlistItems?part=snippet&maxResults=50&playlistId=PL{b64url(32)}&pageToken=CDIQAA",
        f"\"nextPageToken\": \"{b64url(R.randint(40, 120))}\"",
        f"https://slack.com/api/conversations.list?limit=200&cursor=dXNlcjpV{b64(10)}",
        f"https://api.github.com/repos/{org()}/{pick(APPS)}/issues?per_page=100&page={R.randint(2, 9)}",
        f"https://{org()}-assets.s3.eu-west-1.amazonaws.com/public/logo-{hexs(8)}.svg",
        f"https://www.google.com/maps/place/@52.{digits(6)},13.{digits(6)},17z/data=!3m1!4b1!4m6!3m5!1s0x{hexs(16)}:0x{hexs(16)}",
    ])


@look("base64-data", times=5)
def _l_base64() -> str:
    msg = pick([b"hello from the build bot", b"deploy finished at 14:02", b'{"page":3,"size":50}', b"user-agent probe"])
    return pick([
        f"$ echo -n '{msg.decode()}' | base64\n{b64_of(msg)}",
        f"<img alt=\"dot\" src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42m{b64(20)}AAAAABJRU5ErkJggg==\">",
        f"Content-MD5: {random_b64_bytes(16)}",
        f"binaryData:\n  favicon.ico: AAABAAEAEBAAAAEAIABoBAAAFgAAACgAAAAQAAAAIAAAAAEAIAAAAAAAAAQAAA{b64(60)}",
        f"apiVersion: v1\nkind: ConfigMap\ndata:\n  ca.crt: |\n    -----BEGIN CERTIFICATE-----\n    MIIC{b64(60)}\n    {b64(64)}\n    -----END CERTIFICATE-----",
        f"  namespace: {b64_of(b'default')}\n  ca.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSU{b64(60)}",
    ])


@look("public-doc")
def _l_oidc() -> str:
    iss = f"https://auth.{domain()}"
    body = {"issuer": iss, "authorization_endpoint": f"{iss}/oauth2/authorize", "token_endpoint": f"{iss}/oauth2/token",
            "userinfo_endpoint": f"{iss}/userinfo", "jwks_uri": f"{iss}/.well-known/jwks.json",
            "response_types_supported": ["code", "id_token", "code id_token"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "private_key_jwt"]}
    return f"$ curl -s {iss}/.well-known/openid-configuration | jq .\n" + json.dumps(body, indent=2)


@look("public-key", times=2)
def _l_jwks() -> str:
    keys = [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": hexs(40), "n": b64url(342), "e": "AQAB"}]
    return json.dumps({"keys": keys}, indent=2)


@look("public-key", times=4)
def _l_ssh_pub() -> str:
    return pick([
        f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(43)} {person()}@{pick(['laptop', 'devbox', 'mbp'])}",
        f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{b64(R.randint(500, 540))}= deploy@ci",
        f"{pick(['github.com', 'gitlab.com'])} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(120)}=",
        f"$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:{b64(43)} {person()}@devbox (ED25519)",
    ])


@look("public-key", times=4)
def _l_pem_pub() -> str:
    return pick([
        f"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{b64(20)}\n{b64(64)}\n{b64(64)}\n{b64(40)}IDAQAB\n-----END PUBLIC KEY-----",
        f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBG{b64(58)}\n{b64(64)}\n{b64(64)}\n={b64(4)}\n-----END PGP PUBLIC KEY BLOCK-----",
        f"$ gpg --list-keys {person()}@{domain()}\npub   ed25519 2024-05-02 [SC] [expires: 2027-05-02]\n      {chars('0123456789ABCDEF', 40)}\nuid           [ultimate] {person().capitalize()} <{person()}@{domain()}>",
        f"# public key: age1{chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\nsops --encrypt --age age1{chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)} secrets.yaml > secrets.enc.yaml",
        f"untrusted comment: minisign public key {upper_alnum(16)}\nRWQ{b64(53)}",
    ])


@look("certificate", times=3)
def _l_cert() -> str:
    return pick([
        f"-----BEGIN CERTIFICATE-----\nMIIF{b64(60)}\n{b64(64)}\n{b64(64)}\n{b64(64)}\n{b64(30)}==\n-----END CERTIFICATE-----",
        f"$ openssl x509 -in tls.crt -noout -subject -issuer -fingerprint -sha256\nsubject=CN = *.{domain()}\n"
        f"issuer=C = US, O = Let's Encrypt, CN = R11\nsha256 Fingerprint={':'.join(chars('0123456789ABCDEF', 2) for _ in range(32))}",
        f"Public-Key-Pins: pin-sha256=\"{random_b64_bytes(32)}\"; pin-sha256=\"{random_b64_bytes(32)}\"; max-age=5184000",
        f"<ds:X509Certificate>MIIC{b64(120)}</ds:X509Certificate>",
    ])


@look("publishable-key", times=3)
def _l_publishable() -> str:
    return pick([
        f"const stripe = Stripe('pk_live_{alnum(99)}');",
        f"mapboxgl.accessToken = 'pk.{b64url_nopad(json.dumps({'u': person(), 'a': lower(25)}, separators=(',', ':')).encode())}.{b64url(22)}';",
        f"Sentry.init({{ dsn: \"https://{hexs(32)}@o{digits(6)}.ingest.de.sentry.io/{digits(16)}\", tracesSampleRate: 0.2 }});",
        f"NEXT_PUBLIC_POSTHOG_KEY=phc_{alnum(43)}",
    ])


@look("code-reads-secret", times=10)
def _l_code_reads() -> str:
    return pick([
        "db_password = os.getenv(\"DB_PASSWORD\")\nif not db_password:\n    raise SystemExit(\"DB_PASSWORD is not set\")",
        "const token = process.env.GITHUB_TOKEN ?? core.getInput('token', { required: true });",
        "      - name: Deploy\n        env:\n          DB_PASSWORD: ${{ secrets.DB_PASSWORD }}\n          API_TOKEN: ${{ secrets.API_TOKEN }}\n        run: ./deploy.sh",
        "            - name: DB_PASSWORD\n              valueFrom:\n                secretKeyRef:\n                  name: {{ .Release.Name }}-db\n                  key: password",
        "  password: {{ .Values.postgresql.auth.password | b64enc | quote }}",
        "String apiKey = System.getenv(\"PAYMENT_API_KEY\");\nObjects.requireNonNull(apiKey, \"PAYMENT_API_KEY missing\");",
        "STRIPE_KEY = ENV.fetch(\"STRIPE_SECRET_KEY\") { raise \"set STRIPE_SECRET_KEY\" }",
        "'secret' => env('STRIPE_SECRET'),\n'webhook' => ['secret' => env('STRIPE_WEBHOOK_SECRET'), 'tolerance' => 300],",
        "$ vault kv get -field=password secret/prod/db > /dev/null && echo ok\nok",
        "aws secretsmanager get-secret-value --secret-id prod/billing/db --query SecretString --output text | jq -r .password",
        "let key = std::env::var(\"OPENAI_API_KEY\").context(\"OPENAI_API_KEY not set\")?;",
        "token := os.Getenv(\"SLACK_BOT_TOKEN\")\nif token == \"\" {\n\tlog.Fatal(\"SLACK_BOT_TOKEN is required\")\n}",
        "totp = pyotp.TOTP(os.environ[\"TOTP_SECRET\"])\nprint(totp.now())",
        "sig = hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()\nif not hmac.compare_digest(sig, received):\n    abort(401)",
        "password = getpass.getpass(\"Password for %s: \" % user)",
        "export GITHUB_TOKEN=$(gh auth token)\nexport OPENAI_API_KEY=$(op read op://dev/openai/key)",
    ])


@look("code-reads-secret", "zh", times=4)
def _l_code_reads_zh() -> str:
    return pick([
        "# 从环境变量读取阿里云密钥，不要写死在代码里\nak = os.environ['ALIBABA_CLOUD_ACCESS_KEY_ID']\nsk = os.environ['ALIBABA_CLOUD_ACCESS_KEY_SECRET']",
        "// 钉钉加签：secret 从配置中心取\nString secret = nacosConfig.get(\"dingtalk.robot.secret\");\nString sign = sign(timestamp, secret);",
        "webhook: https://oapi.dingtalk.com/robot/send?access_token=${DINGTALK_TOKEN}   # token 在 CI 变量里",
        "wx.pay.mchKey=${WX_MCH_KEY}   # 微信支付 API 密钥，部署时注入",
    ])


@look("settings-table", times=3)
def _l_md_table() -> str:
    return pick([
        "| setting | value | notes |\n|---|---|---|\n| DB_HOST | db.internal | |\n| DB_PASSWORD | | see vault `kv/prod/db` |\n| API_TOKEN | *(in 1Password)* | rotate quarterly |",
        "| Variable | Required | Default | Description |\n|---|---|---|---|\n| `OPENAI_API_KEY` | yes | — | Your OpenAI key |\n| `SECRET_KEY` | yes | — | 50 random characters |\n| `TOKEN_TTL` | no | `3600` | seconds |",
        "| 服务 | 地址 | 账号 | 密码 |\n|---|---|---|---|\n| Grafana | grafana.internal | admin | 见密码柜 |\n| Jenkins | ci.internal | 个人账号 | LDAP |",
        "| key | value |\n|---|---|\n| password | `<set in Helm values>` |\n| token | `${{ secrets.DEPLOY_TOKEN }}` |",
    ])


@look("password-policy", times=3)
def _l_policy() -> str:
    return pick([
        "Passwords must be at least 12 characters and include three of: upper case, lower case, digits, symbols. They expire every 180 days and the last 5 cannot be reused.",
        "Password requirements: min length 14, no dictionary words, not your username, and not a password found in a breach corpus (checked against HIBP).",
        "minlen = 12\ndcredit = -1\nucredit = -1\nlcredit = -1\nocredit = -1\nenforce_for_root",
        "Set-ADDefaultDomainPasswordPolicy -Identity corp.local -MinPasswordLength 14 -ComplexityEnabled $true -LockoutThreshold 5",
    ])


@look("password-policy", "zh", times=3)
def _l_policy_zh() -> str:
    return pick([
        "口令策略：长度不少于 12 位，须包含大小写字母、数字和特殊字符中的三种；90 天强制更换，不得与最近 5 次相同。",
        "密码错误次数过多，账号已锁定 30 分钟。如需解锁请联系管理员。",
        "新密码不能与旧密码相同，且不能包含用户名。",
    ])


@look("prose", times=10)
def _l_prose() -> str:
    return pick([
        "The key insight is that retries should back off per tenant, not globally.",
        "Could you pass the salt? And the pepper, while you're at it.",
        "Their secret sauce is just a very well-tuned cache in front of Postgres.",
        "She gave him a small plant as a token of appreciation for covering her shifts.",
        "Keep the key points short: one slide each, no more than three bullets.",
        "We hit the token limit again, so I split the document into four chunks of ~3k tokens.",
        "I forgot my password again and had to use the reset link.",
        "The pass rate went from 71% to 88% after the flaky tests were quarantined.",
        "Bearer tokens expire after an hour; the refresh token lasts 30 days.",
        "Public-key cryptography lets anyone encrypt, but only the holder of the private key can decrypt.",
        "It's an open secret that the legacy importer still runs on a cron job on Dave's old box.",
        "Key takeaways from the incident review: alert earlier, page fewer people, write the runbook first.",
        "Don't paste API keys into tickets; link the vault entry instead.",
        "A mountain pass closed by snow added two hours to the drive.",
        "The keynote ran long, so the token-economics panel was cut.",
        "Rotate the signing key before the certificate expires on Friday.",
        "Password managers are fine; reusing one password everywhere is not.",
        "Hold the shift key while clicking to select a range.",
    ])


@look("prose", "zh", times=10)
def _l_prose_zh() -> str:
    return pick([
        "密码学课程第三周讲公钥加密和数字签名，作业是实现一个简单的 RSA。",
        "验证码已发送至 138****5678，5 分钟内有效。",
        "令牌桶算法适合做限流，漏桶更适合做整形。",
        "密钥管理要用 KMS，轮换周期 90 天，应用只拿数据密钥。",
        "这次大模型调用一共用了 12 万个 token，成本大概 3 块钱。",
        "我又忘了密码，只好点“忘记密码”重新设置。",
        "公钥可以随便发，私钥一定要自己保管好。",
        "关键是先把接口鉴权做好，再谈性能优化。",
        "请不要在群里发任何密码或者密钥，统一走密码柜。",
        "扫码登录以后，手机上会弹出确认框，点“确认登录”即可。",
        "这个秘诀其实就是多写测试、多做代码评审。",
        "二次验证（2FA）建议用 App，不要用短信。",
        "助记词一旦泄露，钱包里的资产就等于送人了，千万别拍照存相册。",
    ])


@look("2fa-talk", times=4)
def _l_2fa() -> str:
    return pick([
        "Scan the QR code with your authenticator app, then enter the 6-digit code to finish setup.",
        "Save your recovery codes somewhere safe — you'll need one if you lose your phone.",
        "Your recovery phrase is the only way to restore your wallet. Never share it, never type it into a website.",
        "BIP39's English word list starts with abandon, ability, able, about, above — 2048 words in all.",
        "We switched the team from SMS codes to TOTP; hardware keys for admins.",
    ])


@look("har-plain", times=2)
def _l_har() -> str:
    headers = [{"name": "accept", "value": "text/html,application/xhtml+xml"},
               {"name": "if-none-match", "value": f"W/\"{hexs(2)}-{b64url(27)}\""},
               {"name": "cookie", "value": f"_ga=GA1.1.{digits(9)}.{digits(10)}; _gid=GA1.2.{digits(9)}.{digits(10)}; theme=dark; lang=en"},
               {"name": "sec-ch-ua", "value": "\"Chromium\";v=\"126\", \"Not.A/Brand\";v=\"24\""}]
    return json.dumps({"request": {"method": "GET", "url": f"https://{domain()}/docs", "headers": headers}}, indent=2)


@look("log-line", times=6)
def _l_logs() -> str:
    return pick([
        f"{day()}T{clock()}:12Z INFO auth: refreshing access token for user_id={digits(6)} (expires_in=3600)",
        f"{{\"usage\": {{\"prompt_tokens\": {R.randint(200, 4000)}, \"completion_tokens\": {R.randint(20, 900)}, \"total_tokens\": {R.randint(300, 5000)}}}}}",
        f"WARN password reset requested for {person()}@{domain()} from {ip(False)}",
        f"{day()} {clock()}:44 sshd[{R.randint(1000, 90000)}]: Failed password for invalid user admin from {ip(False)} port {R.randint(30000, 65000)} ssh2",
        f"{day()} {clock()}:01 sshd[{R.randint(1000, 90000)}]: Accepted publickey for deploy from {ip()} port {R.randint(30000, 65000)} ssh2: ED25519 SHA256:{b64(43)}",
        "ERROR: token expired (exp=1741689600 < now=1741693211); ask the user to sign in again",
        f"rate limited: bucket=api:{pick(APPS)} tokens=0/100 refill=10/s",
    ])


@look("wechat-notify", "zh")
def _l_wx_notify() -> str:
    return (f"<xml><appid><![CDATA[wx{hexs(16)}]]></appid><mch_id>{digits(10)}</mch_id>"
            f"<nonce_str><![CDATA[{alnum(32)}]]></nonce_str><result_code>SUCCESS</result_code>"
            f"<sign><![CDATA[{chars('0123456789ABCDEF', 32)}]]></sign><transaction_id>42000{digits(23)}</transaction_id></xml>")


@look("config-no-secret", "zh", times=4)
def _l_zh_config_talk() -> str:
    return pick([
        "AccessKey 请在 RAM 控制台为子账号创建，只给最小权限；主账号 AccessKey 一律禁用。",
        "钉钉机器人安全设置选“加签”，secret 存在配置中心，代码里只读 key 名。",
        "数据库密码改完以后记得同步 Nacos 里的 spring.datasource.password，否则服务重启会连不上。",
        "企业微信机器人的 webhook 地址不要贴到公开仓库，泄露了可以在群设置里重置。",
        "宝塔面板的默认入口和密码装完会打印一次，记得马上改掉并开启两步验证。",
    ])


@look("router-note", times=2)
def _l_router() -> str:
    return pick([
        "router admin page is http://192.168.1.1 — the password is on the sticker under the box",
        "reset the Fritz!Box to factory settings; new admin password is in the family password manager",
        f"wifi: {pick(WORDS).capitalize()}Net (5 GHz) and {pick(WORDS).capitalize()}Net-IoT for the bulbs; WPA3 only on the first",
    ])


@look("openssl-command", times=2)
def _l_openssl() -> str:
    return pick([
        "openssl rand -base64 32 > secrets/jwt.key && chmod 600 secrets/jwt.key",
        "python -c 'import secrets; print(secrets.token_urlsafe(32))' | vault kv put secret/app session_key=-",
        "ssh-keygen -t ed25519 -C \"deploy@ci\" -f ~/.ssh/deploy_ed25519 -N ''",
    ])


@look("cli-status", times=3)
def _l_cli_status() -> str:
    return pick([
        f"$ gcloud config list\n[core]\naccount = {person()}@{domain()}\ndisable_usage_reporting = True\nproject = {org()}-prod-{digits(6)}\n\n"
        "Your active configuration is: [default]",
        "$ az account show\n" + json.dumps({"environmentName": "AzureCloud", "id": uid(), "isDefault": True,
                                             "name": f"{org()}-prod", "state": "Enabled", "tenantId": uid(),
                                             "user": {"name": f"{person()}@{domain()}", "type": "user"}}, indent=2),
        f"$ vault status\nKey             Value\n---             -----\nSeal Type       shamir\nInitialized     true\nSealed          false\n"
        f"Total Shares    5\nThreshold       3\nVersion         1.17.5\nCluster Name    vault-cluster-{hexs(8)}\nCluster ID      {uid()}\nHA Enabled      false",
        f"$ kubectl get secrets -n {pick(APPS)}\nNAME                  TYPE                             DATA   AGE\n{pick(APPS)}-db   Opaque   3   {R.randint(2, 90)}d\n"
        f"{pick(APPS)}-tls   kubernetes.io/tls   2   {R.randint(2, 90)}d\nregcred   kubernetes.io/dockerconfigjson   1   {R.randint(2, 90)}d",
        "$ doppler secrets --only-names\n┌──────────────────────┐\n│ NAME                 │\n├──────────────────────┤\n│ DATABASE_URL         │\n│ STRIPE_SECRET_KEY    │\n│ OPENAI_API_KEY       │\n└──────────────────────┘",
    ])


@look("masked-output", times=2)
def _l_op_item() -> str:
    return pick([
        f"$ op item get 'Prod DB' --fields label=username,label=password\n{pick(APPS)}_admin,[use 'op item get {alnum(26).lower()} --reveal' to reveal]",
        f"$ security find-generic-password -s 'Docker Credentials'\nkeychain: \"/Users/{person()}/Library/Keychains/login.keychain-db\"\nversion: 512\nclass: \"genp\"\nattributes:\n"
        f"    \"acct\"<blob>=\"{person()}\"\n    \"svce\"<blob>=\"Docker Credentials\"\n    \"mdat\"<timedate>=0x32303235303331313039313234345A00  \"20250311091244Z\\000\"",
    ])


@look("scanner-output", times=2)
def _l_scanner() -> str:
    return pick([
        "{\n  \"results\": {\n    \"config/settings.py\": [\n      {\n        \"type\": \"Secret Keyword\",\n        \"filename\": \"config/settings.py\",\n"
        f"        \"hashed_secret\": \"{hexs(40)}\",\n        \"is_verified\": false,\n        \"line_number\": {R.randint(10, 200)}\n      }}\n    ]\n  }}\n}}",
        f"Finding:     REDACTED\nSecret:      REDACTED\nRuleID:      generic-api-key\nEntropy:     4.{digits(6)}\nFile:        deploy/values.yaml\nLine:        {R.randint(5, 90)}\n"
        f"Commit:      {hexs(40)}\nFingerprint: {hexs(40)}:deploy/values.yaml:generic-api-key:{R.randint(5, 90)}",
    ])


@look("config-no-secret", times=2)
def _l_misc_config() -> str:
    return pick([
        "# secrets\n.env\n.env.*\n!.env.sample\n*.pem\n*.key\nsecrets/\n.terraform/\nterraform.tfstate*",
        "variable \"db_password\" {\n  description = \"Master password for the RDS instance\"\n  type        = string\n  sensitive   = true\n}",
        "permissions:\n  id-token: write   # OIDC to AWS, no long-lived keys\n  contents: read",
        "- repo: https://github.com/gitleaks/gitleaks\n  rev: v8.21.2\n  hooks:\n    - id: gitleaks",
    ])


@look("prose", "zh", times=2)
def _l_chat_zh() -> str:
    a, b = R.sample(ZH_NAMES, 2)
    return pick([
        f"[{clock()}] {a}：登录 token 过期了，重新扫码登录一下就好\n[{clock()}] {b}：好了，谢谢",
        f"[{clock()}] {a}：生产库密码谁有？\n[{clock()}] {b}：别在群里问，去密码柜申请权限",
        f"[{clock()}] {a}：AK/SK 泄露了吗？\n[{clock()}] {b}：没有，只是日志里打印了 AccessKey ID，SK 没打出来，已经轮换了",
    ])


@look("prose", "zh", times=14)
def _l_more_zh() -> str:
    return pick([
        f"{hexs(7)} 修复：token 过期后没有自动刷新\n{hexs(7)} 功能：登录页增加“记住密码”开关\n{hexs(7)} 重构：密钥读取统一走配置中心",
        "在阿里云控制台 → AccessKey 管理 → 创建 AccessKey，记下 AccessKey ID 和 AccessKey Secret（Secret 只显示一次）。",
        "JWT 由 header、payload、signature 三部分组成，用点分隔；payload 只是 base64url 编码，不是加密，别往里放敏感信息。",
        "APIv3 密钥是 32 位字符串，在商户平台「账户中心 → API 安全」里设置，设置后不能查看，只能重置。",
        f"{day()} 10:22:01 [INFO] 用户 138****{digits(4)} 登录成功，来源 IP {ip(False)}",
        "本季度 OKR：KR1 关键接口 P99 < 200ms；KR2 密钥全部迁到 KMS；KR3 登录失败率降到 0.5% 以下。",
        "| 配置项 | 说明 | 默认值 |\n|---|---|---|\n| db.password | 数据库密码，部署时注入 | 无 |\n| token.ttl | 令牌有效期（秒） | 7200 |",
        "【安全提醒】近期有人冒充 IT 索要密码和验证码，任何人问你要口令都请直接拒绝并上报。",
        "今天分享的主题是零信任：每个请求都要鉴权，短期令牌加设备证书，不再依赖内网白名单。",
        "Redis 的 requirepass 改成从 K8s Secret 挂载，values.yaml 里只保留 existingSecret 的名字。",
        f"构建号 #{R.randint(1000, 9999)}，镜像 sha256:{hexs(64)}，已推送到生产仓库。",
        "密码输入框加了“显示/隐藏”按钮，另外把最小长度从 6 位提高到 10 位。",
        "私钥文件权限必须是 600，不然 ssh 会直接拒绝使用。",
        "大家注意：发版群里只发版本号和变更说明，不要贴任何 key、token、连接串。",
        f"微信支付回调验签失败，原因是平台证书过期了，已经下载新的平台证书（序列号 {chars('0123456789ABCDEF', 40)}）。",
        "令牌桶容量设成 100，每秒补充 20 个，突发流量能扛住。",
    ])


# =============================================================================================
# writing the files
# =============================================================================================


def build_credentials() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for provider, fmt, lang, times, make in CRED_TEMPLATES:
        for _ in range(times):
            text, secret, *rest = make()
            secrets = secret if isinstance(secret, list) else [secret]
            for value in secrets:
                assert value and value in text, (make.__name__, value)
            item: dict[str, Any] = {"id": f"h2c-{len(items) + 1:03d}", "provider": provider, "format": fmt,
                                    "lang": lang, "text": text, "secret": secret}
            if rest and rest[0]:
                item["fixed_prefix"] = rest[0]
            items.append(item)
    return items


def build_lookalikes() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for category, lang, times, make in LOOK_TEMPLATES:
        for _ in range(times):
            for _attempt in range(50):
                text = make()
                if text not in seen:
                    break
            else:
                continue
            seen.add(text)
            items.append({"id": f"h2l-{len(items) + 1:03d}", "category": category, "lang": lang, "text": text})
    return items


def write(path: Path, items: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Write both files into the folder named on the command line (this script's folder by default)."""
    out = Path(argv[0]) if argv else HERE
    credentials = build_credentials()
    lookalikes = build_lookalikes()
    write(out / "credentials.jsonl", credentials)
    write(out / "lookalikes.jsonl", lookalikes)
    print(f"{len(credentials)} credentials, {len(lookalikes)} look-alikes")


if __name__ == "__main__":
    main(sys.argv[1:])
