"""Bearer tokens for `aibuddy mcp --http`: each fixes the one user its holder acts as.

A token is shown once, when it is made; the vault keeps only its SHA-256 (and its name, its user
and when it was made) in `.aibuddy/tokens.json`, which the vault's .gitignore keeps out of git,
so no clone, push or backup of the vault carries anything a client could present. The secret is
32 random bytes, so its hash needs no salt or slow KDF: nobody can guess a preimage.

Who may do what: anyone makes, lists and revokes tokens of their own; a token for another user,
and the list or revocation of other users' tokens, needs an admin (`admins` in aibuddy.toml),
because the token reads and writes that user's memory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from .clock import utc_now
from .errors import Conflict, InvalidInput, NotAllowed, NotFound
from .names import is_record_name, validate_user_name
from .vault import CACHE_DIR

if TYPE_CHECKING:
    from .store.files import Store
    from .vault import Vault

TOKENS_KEY = f"{CACHE_DIR}/tokens.json"
PREFIX = "aibuddy_"  # says what a leaked string is, for a person and for secret scanners


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class TokenJson(TypedDict):
    name: str
    user: str
    created: str


class Token(NamedTuple):
    """What the vault keeps of a token (never the secret)."""

    name: str
    user: str
    created: str
    sha256: str

    def to_json(self) -> TokenJson:
        return {"name": self.name, "user": self.user, "created": self.created}


class CreatedJson(TokenJson):
    token: str


class Created(NamedTuple):
    """`token create`: the token and, this once, its secret."""

    token: Token
    secret: str

    def to_json(self) -> CreatedJson:
        return {**self.token.to_json(), "token": self.secret}


class TokenList(NamedTuple):
    tokens: list[Token]


class RevokedJson(TypedDict):
    name: str
    user: str
    revoked: bool


class Revoked(NamedTuple):
    token: Token

    def to_json(self) -> RevokedJson:
        return {"name": self.token.name, "user": self.token.user, "revoked": True}


def parse_tokens(data: bytes) -> list[Token]:
    """The tokens file's entries; a file that is not what this module writes is refused whole,
    never read in part (and never written over: a revoked token stays revoked)."""
    problem = f"{TOKENS_KEY} is not a tokens file; fix or remove it (its tokens stop working)"
    try:
        document = json.loads(data.decode("utf-8"))
        found = [
            Token(str(item["name"]), str(item["user"]), str(item["created"]), str(item["sha256"]))
            for item in document["tokens"]
        ]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise InvalidInput(problem) from None
    return found


def read_tokens(store: Store) -> list[Token]:
    try:
        data, _ = store.read(TOKENS_KEY)
    except NotFound:
        return []
    return parse_tokens(data)


def find_token(tokens: list[Token], secret: str) -> Token | None:
    """The token whose secret this is, compared in constant time."""
    wanted = digest(secret)
    found = None
    for token in tokens:
        if hmac.compare_digest(token.sha256, wanted):
            found = token
    return found


class TokenService:
    """The vault's tokens, as one user (who may be an admin) manages them."""

    def __init__(self, vault: Vault, user: str, store: Store) -> None:
        self.vault, self.user, self.store = vault, validate_user_name(user), store

    @property
    def admin(self) -> bool:
        return self.user in self.vault.config.admins

    def _may_manage(self, user: str, verb: str) -> None:
        if user != self.user and not self.admin:
            raise NotAllowed(
                f"only an admin (admins in aibuddy.toml) may {verb} a token of another user; "
                f"{self.user} may {verb} their own"
            )

    def _write(self, tokens: list[Token]) -> None:
        document = {"tokens": [{**token.to_json(), "sha256": token.sha256} for token in tokens]}
        self.store.write(TOKENS_KEY, (json.dumps(document, indent=2) + "\n").encode("utf-8"))

    def create(self, user: str | None = None, name: str | None = None) -> Created:
        user = self.user if user is None else validate_user_name(user)
        self._may_manage(user, "create")
        if name is not None and not is_record_name(name):
            raise InvalidInput(
                f"invalid token name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
                "starting with a letter or digit"
            )
        secret = PREFIX + secrets.token_urlsafe(32)
        with self.store.lock("tokens"):
            tokens = read_tokens(self.store)
            taken = {token.name for token in tokens}
            if name is None:
                name = next(f"{user}-{n}" for n in range(1, len(taken) + 2) if f"{user}-{n}" not in taken)
            elif name in taken:
                raise Conflict(f"a token named {name} exists already; revoke it first or pick another name")
            token = Token(name, user, utc_now(), digest(secret))
            self._write([*tokens, token])
        return Created(token, secret)

    def list(self) -> TokenList:
        """The tokens of this user, or every token for an admin."""
        tokens = read_tokens(self.store)
        return TokenList([token for token in tokens if self.admin or token.user == self.user])

    def revoke(self, name: str) -> Revoked:
        with self.store.lock("tokens"):
            tokens = read_tokens(self.store)
            found = next((token for token in tokens if token.name == name), None)
            if found is None or (found.user != self.user and not self.admin):
                # Another user's token name is not confirmed to exist to a non-admin.
                raise NotFound(f"no token named {name!r}" + ("" if self.admin else f" of user {self.user}"))
            self._write([token for token in tokens if token.name != name])
        return Revoked(found)
