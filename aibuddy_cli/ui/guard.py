"""Who may use the page, and proof that a change comes from it.

- **Host**: a request must name the server as the browser reached it (`127.0.0.1:PORT`,
  `localhost:PORT`, `[::1]:PORT`): a page elsewhere cannot reach it through a name it controls
  (DNS rebinding). Anything else is 421.
- **The one-time link**: `aibuddy ui` prints `http://127.0.0.1:PORT/login?key=KEY`. Opening it
  once gives the browser a session cookie (HttpOnly, SameSite=Strict, the path `/`) for the user
  who started it and sends it on; the key is then spent, so a link copied from a terminal's
  scroll-back opens nothing. Every other request without a session's cookie is 401 and reads
  nothing.
- **A bearer token, for a remote bind** (`--host`): no link is printed; `/login` asks for a
  token from `aibuddy token create`, which fixes the session's user (as `mcp --http`). The token
  is looked at again on every request, so a revoked one ends its sessions at once.
- **Changes**: every request that is not GET or HEAD must come from the page itself: its Origin
  (or, without one, its Referer) is the server's, and its form carries the session's CSRF token
  (`form_of`). A cross-site form post fails both; one without the token fails the second.
- Every answer says no script runs, no other site frames it, and no referrer leaves it
  (`SECURITY_HEADERS`).
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from ..tokens import Token

COOKIE = "aibuddy_ui"
LOGIN_PATH = "/login"
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


class Refusal(Exception):
    """A request the guard refuses: its status and what the page says."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Signed(NamedTuple):
    """Whom a session is for: its user, and the token it signed in with (None: the link)."""

    user: str
    token: str | None = None  # the token's sha256, looked for again at each request


class Guard:
    """The ASGI middleware in front of every page (see the module's docstring). user and
    login_key: the one-time link's; tokens: the vault's tokens, for a sign-in by token."""

    def __init__(
        self,
        app: Any,
        *,
        port: int,
        user: str | None = None,
        login_key: str | None = None,
        tokens: Callable[[], list[Token]] | None = None,
        hosts: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.port = port
        self.user = user
        names = ("127.0.0.1", "localhost", "[::1]", *hosts)  # each at the port, unless it names one
        self.hosts = frozenset(name if re.search(r":\d+$", name) else f"{name}:{port}" for name in names)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self._login_key = login_key
        self._tokens = tokens
        self._secret = secrets.token_bytes(32)  # signs each session's CSRF token
        self._sessions: dict[str, Signed] = {}

    def csrf_token(self, session: str) -> str:
        return hmac.new(self._secret, session.encode(), "sha256").hexdigest()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            self._check_host(headers)
            if scope["method"] not in ("GET", "HEAD"):
                self._check_origin(headers)
            if scope["path"] == LOGIN_PATH:
                await self._login(scope, receive, send)
                return
            session, signed = self._session_of(headers)
        except Refusal as refused:
            await _answer(send, refused.status, refusal_page(refused.message))
            return
        ui = {"session": session, "csrf": self.csrf_token(session), "user": signed.user}
        scope.setdefault("state", {})["ui"] = ui

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_encoded(SECURITY_HEADERS)]
            await send(message)

        await self.app(scope, receive, with_headers)

    def _check_host(self, headers: Mapping[str, str]) -> None:
        if headers.get("host", "").lower() not in self.hosts:
            raise Refusal(421, "This page answers only to the address aibuddy ui printed.")

    def _check_origin(self, headers: Mapping[str, str]) -> None:
        origin = headers.get("origin")
        if origin is None and "referer" in headers:
            parts = urlsplit(headers["referer"])
            origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.origins:
            raise Refusal(403, "A change must come from this page itself (another site sent this one).")

    def _session_of(self, headers: Mapping[str, str]) -> tuple[str, Signed]:
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is no session
            cookie = SimpleCookie()
        value = cookie[COOKIE].value if COOKIE in cookie else ""
        found = next((known for known in self._sessions if hmac.compare_digest(value, known)), None)
        if found is None:
            how = "sign in with a token at /login" if self._tokens else "open the link `aibuddy ui` printed"
            raise Refusal(401, f"This page needs a session: {how}.")
        signed = self._sessions[found]
        if signed.token is not None and not any(t.sha256 == signed.token for t in self._known_tokens()):
            del self._sessions[found]  # its token was revoked: the session ends with it
            raise Refusal(401, "The token this session signed in with was revoked.")
        return found, signed

    def _known_tokens(self) -> list[Token]:
        try:
            return self._tokens() if self._tokens else []
        except Exception:  # noqa: BLE001 - a tokens file that cannot be read signs no one in
            return []

    async def _login(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["method"] == "POST" and self._tokens is not None:
            signed = await self._token_login(receive)
        elif self._tokens is not None:
            await _answer(send, 200, token_form())
            return
        else:
            signed = self._link_login(scope)
        session = secrets.token_urlsafe(32)
        self._sessions[session] = signed
        cookie = f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
        await _answer(send, 303, b"", [("location", "/memory"), ("set-cookie", cookie)])

    def _link_login(self, scope: dict[str, Any]) -> Signed:
        given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key") or [""])[0]
        key = self._login_key
        if key is None or self.user is None or not hmac.compare_digest(given.encode(), key.encode()):
            spent = "This link was used already" if key is None else "This link is not the one printed"
            raise Refusal(401, f"{spent}: start `aibuddy ui` again for a new one.")
        self._login_key = None
        return Signed(self.user)

    async def _token_login(self, receive: Any) -> Signed:
        from ..tokens import find_token

        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > 4096:
                raise Refusal(413, "That is no token.")
            if not message.get("more_body"):
                break
        secret = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()
        found = find_token(self._known_tokens(), secret) if secret else None
        if found is None:
            raise Refusal(401, "That token is not one of this vault's (`aibuddy token create` makes one).")
        return Signed(found.user, found.sha256)


def form_of(fields: Mapping[str, str], ui: Mapping[str, str]) -> Mapping[str, str]:
    """A change's form fields, once its CSRF token is the session's (Refusal 403 otherwise)."""
    if not hmac.compare_digest(str(fields.get("csrf", "")), ui["csrf"]):
        raise Refusal(403, "This form is not one this page gave (its token is missing or stale): reload it.")
    return fields


def token_form() -> bytes:
    return (
        b"<!doctype html><meta charset=utf-8><title>aibuddy</title><h1>aibuddy</h1>"
        b'<form method="post" action="/login"><label for="token">A token from '
        b"<code>aibuddy token create</code></label> "
        b'<input type="password" id="token" name="token" autocomplete="off"> '
        b'<button type="submit">Sign in</button></form>'
    )


def refusal_page(message: str) -> bytes:
    from html import escape

    return (
        "<!doctype html><meta charset=utf-8><title>aibuddy</title>"
        f"<h1>aibuddy</h1><p class=refused>{escape(message)}</p>"
    ).encode()


def _encoded(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(key.encode(), value.encode()) for key, value in headers.items()]


async def _answer(send: Any, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> None:
    sent = [("content-type", "text/html; charset=utf-8"), *headers, *SECURITY_HEADERS.items()]
    await send({"type": "http.response.start", "status": status, "headers": _encoded(dict(sent))})
    await send({"type": "http.response.body", "body": body})
