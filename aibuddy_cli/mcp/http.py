"""`aibuddy mcp --http [HOST:]PORT`: the MCP server on streamable HTTP (the official SDK), so one
warm server serves several clients, users and machines.

- The protocol: the SDK's streamable HTTP in its stateless form with JSON answers. A client of the
  2026-07-28 revision sends self-contained requests (no initialize, no session); a client of an
  earlier revision (2024-11-05 to 2025-11-25) still initializes and is answered without a session
  id. Nothing is kept between requests but the vault, so any number of clients may come and go.
- Every request carries `Authorization: Bearer <token>` (`aibuddy token create`): without one, or
  with an unknown or revoked one, the answer is 401 and nothing is read or written. The token
  fixes the user of every call (mcp.server.Server.caller); no argument can name another. The
  tokens file is looked at (stat) at each request and read again when it changed, so a
  revocation holds from the next one.
- Host and Origin are checked against an allow-list (DNS rebinding: a web page must not reach
  the server through a name it controls): the loopback names and the address bound, at the port
  bound, and what --allow-host and --allow-origin add. A request without Origin (not from a
  browser) passes that check; a wrong Host is 421, a wrong Origin 403.
- Every request is answered as JSON-RPC says (AnsweredPosts): a body that is no JSON-RPC message
  the SDK takes is an invalid request (-32600; id null when the id is no string or integer: the
  SDK took `"id": {}` for a notification and answered 202, nothing), a tool argument holding a
  lone surrogate a tool error naming it, as on stdio (mcp.stdio.answer_to), not pydantic's text.
- It binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InvalidInput, NotFound, UsageError
from ..settings import Settings
from ..store.files import Entry, Store
from ..tokens import TOKENS_KEY, Token, find_token, parse_tokens
from .stdio import answer_to, surrogate_at, valid_id

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
PATH = "/mcp"


class Address(NamedTuple):
    host: str  # as a socket takes it: "127.0.0.1", "::1", "0.0.0.0"
    port: int

    @property
    def name(self) -> str:
        """The host as a URL or a Host header spells it (an IPv6 address in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_address(text: str) -> Address:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`; the host defaults to 127.0.0.1."""
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if host.startswith("[") else host
    if not port.isdigit() or int(port) > 65535 or (host and ":" in host and not text.startswith("[")):
        raise UsageError(f"--http takes [HOST:]PORT, such as 8765 or 127.0.0.1:8765, not {text!r}")
    return Address(host or "127.0.0.1", int(port))


def _with_port(name: str, port: int) -> str:
    """name as a Host header spells it: "example.org" -> "example.org:8765"; one with a port kept."""
    has_port = "]:" in name if name.startswith("[") else ":" in name
    return name if has_port else f"{name}:{port}"


def allow_list(bound: Address, port: int, hosts: Sequence[str], origins: Sequence[str]) -> Any:
    """The SDK's Host/Origin settings: the names a client of this server may use (see the
    module's docstring); a name given without a port gets the port bound."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = [*LOOPBACK, *([] if bound.host in ("0.0.0.0", "::") else [bound.name])]
    allowed_hosts = [_with_port(name, port) for name in [*names, *hosts]]
    allowed_origins = [f"http://{_with_port(name, port)}" for name in names] + list(origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(allowed_hosts)),
        allowed_origins=list(dict.fromkeys(allowed_origins)),
    )


class VaultTokens:
    """The SDK's TokenVerifier over the vault's tokens file (tokens.py): read again whenever its
    stat changes (a revocation or a new token replaces the file), else kept: a request costs one
    stat, not a read and a parse."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._reported: str | None = None
        self._kept: tuple[Entry, list[Token]] | None = None

    def tokens(self) -> list[Token]:
        try:
            entry = self.store.stat(TOKENS_KEY)
        except NotFound:
            return []
        kept = self._kept
        if kept is not None and kept[0] == entry:
            return kept[1]
        data, read = self.store.read(TOKENS_KEY)
        tokens = parse_tokens(data)
        self._kept = (read, tokens)
        return tokens

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        try:
            found = find_token(self.tokens(), token)
        except (InvalidInput, OSError) as error:  # every request is refused until it is fixed
            message = getattr(error, "message", None) or str(error)
            if message != self._reported:
                print(f"error: {message}", file=sys.stderr, flush=True)
                self._reported = message
            return None
        if found is None:
            return None
        return AccessToken(token=token, client_id=found.name, scopes=[], subject=found.user)


class Refused(NamedTuple):
    """What a POST body the SDK would answer wrongly gets: answer (an mcp_types message), or None
    for a notification or a response, which JSON-RPC never answers (202, dropped)."""

    answer: Any


def refusal(body: bytes) -> Refused | None:
    """How a POST body that is JSON but no message the SDK takes as it is gets answered (see the
    module's docstring); None to let the SDK answer (a readable message, or no JSON at all: its
    parse error)."""
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        sent = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(sent, dict) and "id" in sent and valid_id(sent) is None:
        return Refused(answer_to(sent))  # the SDK takes it for a notification: 202, no answer
    if surrogate_at(sent) is not None:
        return Refused(answer_to(sent))  # the SDK's parser refuses it: "Parse error"
    try:
        jsonrpc_message_adapter.validate_python(sent, by_name=False)
    except ValidationError:
        return Refused(answer_to(sent))  # the SDK says -32602 with pydantic's text
    return None


class AnsweredPosts:
    """ASGI: the MCP endpoint behind the bearer check, with the POST bodies the SDK would answer
    wrongly answered here (refusal), once Host, Origin and Content-Type pass the SDK's own checks
    (else the SDK answers 421, 403 or 400). Bodies come bounded (RequestBodyLimitMiddleware)."""

    def __init__(self, app: Any, security: Any) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.app, self.security = app, TransportSecurityMiddleware(security)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from mcp_types import JSONRPCError
        from starlette.requests import Request
        from starlette.responses import Response

        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        if await self.security.validate_request(request, is_post=True) is not None:
            await self.app(scope, receive, send)
            return
        body = await request.body()
        refused = refusal(body)
        if refused is not None and refused.answer is None:
            await Response(status_code=202)(scope, receive, send)
        elif refused is not None:
            status = 400 if isinstance(refused.answer, JSONRPCError) else 200  # a tool error: 200
            text = refused.answer.model_dump_json(by_alias=True, exclude_unset=True)
            await Response(text, status_code=status, media_type="application/json")(scope, receive, send)
        else:
            await self.app(scope, _replaying(body, receive), send)


def _replaying(body: bytes, receive: Any) -> Any:
    """An ASGI receive that gives body first (already read), then what receive gives."""
    given = False

    async def replay() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def answering(starlette: Any, security: Any) -> None:
    """starlette (the SDK's app) with its MCP endpoint behind AnsweredPosts, inside the bearer
    check: a request without a valid token is still 401, before its body is read."""
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware

    (route,) = [route for route in starlette.routes if getattr(route, "path", None) == PATH]
    guard = route.app  # the SDK's RequireAuthMiddleware around its endpoint
    guard.app = RequestBodyLimitMiddleware(AnsweredPosts(guard.app, security), DEFAULT_MAX_REQUEST_BODY_SIZE)


def listen(address: Address) -> socket.socket:
    """The listening socket. Its connections send without Nagle's delay (Linux passes TCP_NODELAY
    on to them): an answer's last small segment would otherwise wait for the client's delayed
    acknowledgement, 40 ms of every call on a kept-alive connection."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    try:
        listening = socket.create_server((address.host, address.port), family=family)
    except OSError as error:
        raise UsageError(
            f"cannot listen on {address.name}:{address.port}: {error.strerror or error}"
        ) from None
    listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listening


def serve_http(
    vault: str | None,
    settings: Settings,
    cwd: Path,
    address: Address,
    hosts: Sequence[str] = (),
    origins: Sequence[str] = (),
) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM: requests under way finish first)."""
    import asyncio

    import uvicorn

    from ..app.session import database_store
    from ..store.files import FileStore
    from ..store.folder_watch import FolderWatch
    from ..vault import Vault
    from .server import WRITE_BEHIND_SECONDS, Server, mcp_app, warm_up

    server = Server(vault, None, None, settings, cwd, http=True, watch=FolderWatch())
    opened = Vault.open(server.root, settings.environ)
    sock = listen(address)
    port = sock.getsockname()[1]
    url = f"http://{address.name}:{port}{PATH}"
    tokens = database_store(opened, settings) or FileStore(opened.root, opened.locks_dir())
    app = mcp_app(server, VaultTokens(tokens), url)
    security = allow_list(address, port, hosts, origins)
    starlette = app.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=address.host,
    )
    answering(starlette, security)
    warm_up(settings, opened.config)
    print(
        f"aibuddy: serving MCP at {url} (streamable HTTP, stateless) for the vault {opened.root}; "
        "each request needs Authorization: Bearer <a token from `aibuddy token create`>",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(starlette, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    try:
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        server.write_behind.drain(WRITE_BEHIND_SECONDS)
