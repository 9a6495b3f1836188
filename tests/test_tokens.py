"""`aibuddy token create|list|revoke`: a token is shown once and kept only as its hash; a token of
another user is an admin's to make, see and revoke."""

from __future__ import annotations

import json

from helpers import run_in_process

from aibuddy_cli.tokens import digest
from aibuddy_cli.vault import Vault


def token(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    done = run_in_process("token", *args, env=env)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def as_user(env: dict[str, str], user: str) -> dict[str, str]:
    return {**env, "AIBUDDY_USER": user}


def test_a_token_is_printed_once_alone_and_kept_as_its_hash(vault: Vault, env: dict[str, str]) -> None:
    code, out, err = token(env, "create")
    secret = out.strip()
    assert code == 0 and secret.startswith("aibuddy_") and "\n" not in secret
    assert "demo-1" in err and "shown this once" in err
    stored = json.loads((vault.root / ".aibuddy/tokens.json").read_text())
    assert stored["tokens"] == [
        {
            "name": "demo-1",
            "user": "demo",
            "created": stored["tokens"][0]["created"],
            "sha256": digest(secret),
        }
    ]
    code, out, _ = token(env, "list", "--json")
    assert code == 0 and json.loads(out)["tokens"][0]["name"] == "demo-1" and secret not in out
    code, out, _ = token(env, "create", "--name", "demo-1")
    assert code == 4  # a name is one token's


def test_another_users_tokens_are_an_admins(vault: Vault, env: dict[str, str]) -> None:
    assert vault.config.admins == ("demo",)
    assert token(env, "create", "--user", "alice", "--name", "alices")[0] == 0  # demo is the admin
    alice = as_user(env, "alice")
    code, _, err = token(alice, "create", "--user", "bob")
    assert code == 5 and "only an admin" in err
    assert token(alice, "create", "--name", "laptop")[0] == 0  # her own: fine
    token(env, "create", "--name", "admins-own")
    code, out, _ = token(alice, "list", "--json")
    assert sorted(t["name"] for t in json.loads(out)["tokens"]) == ["alices", "laptop"]
    code, _, err = token(alice, "revoke", "admins-own")
    assert code == 3 and "no token named 'admins-own' of user alice" in err
    assert token(env, "revoke", "laptop")[0] == 0  # the admin revokes anyone's
    code, out, _ = token(env, "list", "--json")
    assert sorted(t["name"] for t in json.loads(out)["tokens"]) == ["admins-own", "alices"]


def test_a_damaged_tokens_file_is_refused_and_kept(vault: Vault, env: dict[str, str]) -> None:
    path = vault.root / ".aibuddy/tokens.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"tokens": [{"name": "x"}')
    for args in (["create"], ["list"], ["revoke", "x"]):
        code, _, err = token(env, *args)
        assert code == 6 and "is not a tokens file" in err, (args, err)
    assert path.read_text() == '{"tokens": [{"name": "x"}'
    code, _, err = token(env, "create", "--name", "Not A Name")
    assert code == 6 and "invalid token name" in err
