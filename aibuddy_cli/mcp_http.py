"""`aibuddy mcp --http [HOST:]PORT`: the MCP server on streamable HTTP (the official SDK), so one
warm server serves several clients, users and machines.

- The protocol: the SDK's streamable HTTP in its stateless form with JSON answers. A client of the
  2026-07-28 revision sends self-contained requests (no initialize, no session); a client of an
  earlier revision (2024-11-05 to 2025-11-25) still initializes and is answered without a session
  id. Nothing is kept between requests but the vault, so any number of clients may come and go.
- Every request carries `Authorization: Bearer <token>` (`aibuddy token create`): without one, or
  with an unknown or revoked one, the answer is 401 and nothing is read or written. The token
  fixes the user of every call (mcp_server.Server.caller); no argument can name another. The
  tokens file is read at each request, so a revocation holds from the next one.
- Host and Origin are checked against an allow-list (DNS rebinding: a web page must not reach
  the server through a name it controls): the loopback names and the address bound, at the port
  bound, and what --allow-host and --allow-origin add. A request without Origin (not from a
  browser) passes that check; a wrong Host is 421, a wrong Origin 403.
- It binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .errors import InvalidInput, UsageError
from .storage import Store
from .tokens import find_token, read_tokens

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
    """The SDK's TokenVerifier over the vault's tokens file (tokens.py)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._reported: str | None = None

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        try:
            found = find_token(read_tokens(self.store), token)
        except (InvalidInput, OSError) as error:  # every request is refused until it is fixed
            message = getattr(error, "message", None) or str(error)
            if message != self._reported:
                print(f"error: {message}", file=sys.stderr, flush=True)
                self._reported = message
            return None
        if found is None:
            return None
        return AccessToken(token=token, client_id=found.name, scopes=[], subject=found.user)


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
    environ: Mapping[str, str],
    cwd: Path,
    address: Address,
    hosts: Sequence[str] = (),
    origins: Sequence[str] = (),
) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM: requests under way finish first)."""
    import asyncio

    import uvicorn

    from .folder_watch import FolderWatch
    from .mcp_server import Server, mcp_app, warm_models
    from .session import database_store
    from .storage import FileStore
    from .vault import Vault

    server = Server(vault, None, None, environ, cwd, http=True, watch=FolderWatch())
    opened = Vault.open(server.root, environ)
    sock = listen(address)
    port = sock.getsockname()[1]
    url = f"http://{address.name}:{port}{PATH}"
    tokens = database_store(opened, environ) or FileStore(opened.root, opened.locks_dir())
    app = mcp_app(server, VaultTokens(tokens), url)
    starlette = app.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        transport_security=allow_list(address, port, hosts, origins),
        host=address.host,
    )
    warm_models(environ, opened.config.models)
    print(
        f"aibuddy: serving MCP at {url} (streamable HTTP, stateless) for the vault {opened.root}; "
        "each request needs Authorization: Bearer <a token from `aibuddy token create`>",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(starlette, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
