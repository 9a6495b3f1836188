"""Plain-text renderings of token results (standard library only, like `output`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from .rendering import Render

if TYPE_CHECKING:
    from ..tokens import Created, Revoked, TokenList, TokenService


def _shown_once(created: Created, service: TokenService, stream: TextIO | None) -> None:
    """On stderr, so that `TOKEN=$(aibuddy token create)` holds the token alone."""
    token = created.token
    print(
        f"token {token.name} acts as user {token.user}; it is shown this once (the vault keeps only "
        "its hash): give it to the client as Authorization: Bearer <token>",
        file=stream or sys.stderr,
    )


RENDERS: dict[str, Render[Any]] = {
    "token create": Render["Created"](lambda r: r.secret, notes=_shown_once),
    "token list": Render["TokenList"](
        lambda r: "\n".join(f"{t.name}\t{t.user}\t{t.created}" for t in r.tokens)
    ),
    "token revoke": Render["Revoked"](lambda r: f"revoked token {r.token.name} of user {r.token.user}"),
}
