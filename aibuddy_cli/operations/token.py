"""The token operations: bearer tokens for `aibuddy mcp --http` (see tokens.py). A person's
commands only: no model is ever offered them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from .registry import Arg, Effect, Opt, operation

if TYPE_CHECKING:
    from ..tokens import Created, Revoked, TokenList, TokenService


@operation("token", "create", uses="tokens", effect=Effect.WRITE, model=False)
def create(
    tokens: TokenService,
    user: Annotated[
        str | None, Opt("--user", help="The user the token acts as (another user's needs an admin).")
    ] = None,
    name: Annotated[str | None, Opt("--name", help="What to call it (default: USER-1, USER-2, …).")] = None,
) -> Created:
    """Make a bearer token for `aibuddy mcp --http`; it is printed this once, and the vault keeps
    only its hash (in .aibuddy/, which git ignores)."""
    return tokens.create(user, name)


@operation("token", "list", uses="tokens", effect=Effect.READ, idempotent=True, model=False)
def list_(tokens: TokenService) -> TokenList:
    """Your tokens (every user's, for an admin); never their secrets."""
    return tokens.list()


@operation("token", "revoke", uses="tokens", effect=Effect.DESTRUCTIVE, idempotent=False, model=False)
def revoke(tokens: TokenService, name: Annotated[str, Arg("The token's name.")]) -> Revoked:
    """Revoke a token: a server refuses it from its next request on."""
    return tokens.revoke(name)
