"""Who may use the page, and proof that a change comes from it.

- **Host**: a request must name the server as the browser reached it (`127.0.0.1:PORT`,
  `localhost:PORT`, `[::1]:PORT`): a page elsewhere cannot reach it through a name it controls
  (DNS rebinding). Anything else is 421.
- **The one-time link**: `aibuddy ui` prints `http://127.0.0.1:PORT/login?key=KEY`. Opening it
  once gives the browser a session cookie (HttpOnly, SameSite=Strict, the path `/`) and sends it
  on; the key is then spent, so a link copied from a terminal's scroll-back opens nothing. Every
  other request without a session's cookie is 401 and reads nothing.
- **Changes**: every request that is not GET or HEAD must come from the page itself: its Origin
  (or, without one, its Referer) is the server's, and its form carries the session's CSRF token
  (`form_of`). A cross-site form post fails both; one without the token fails the second.
- Every answer says no script runs, no other site frames it, and no referrer leaves it
  (`SECURITY_HEADERS`).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable, Mapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

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


class Guard:
    """The ASGI middleware in front of every page (see the module's docstring)."""

    def __init__(self, app: Any, *, port: int, login_key: str, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self.hosts = frozenset(f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]", *hosts))
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self._login_key: str | None = login_key
        self._secret = secrets.token_bytes(32)  # signs each session's CSRF token
        self._sessions: set[str] = set()

    def csrf_token(self, session: str) -> str:
        return hmac.new(self._secret, session.encode(), "sha256").hexdigest()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            self._check_host(headers)
            if scope["path"] == LOGIN_PATH:
                await self._login(scope, send)
                return
            session = self._session_of(headers)
            if scope["method"] not in ("GET", "HEAD"):
                self._check_origin(headers)
        except Refusal as refused:
            await _answer(send, refused.status, refusal_page(refused.message))
            return
        scope.setdefault("state", {})["ui"] = {"session": session, "csrf": self.csrf_token(session)}

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

    def _session_of(self, headers: Mapping[str, str]) -> str:
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is no session
            cookie = SimpleCookie()
        value = cookie[COOKIE].value if COOKIE in cookie else ""
        if not any(hmac.compare_digest(value, known) for known in self._sessions):
            raise Refusal(401, "Open the link `aibuddy ui` printed when it started (it works once).")
        return value

    async def _login(self, scope: dict[str, Any], send: Any) -> None:
        given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key") or [""])[0]
        key = self._login_key
        if key is None or not hmac.compare_digest(given.encode(), key.encode()):
            spent = "This link was used already" if key is None else "This link is not the one printed"
            raise Refusal(401, f"{spent}: start `aibuddy ui` again for a new one.")
        self._login_key = None
        session = secrets.token_urlsafe(32)
        self._sessions.add(session)
        cookie = f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
        await _answer(send, 303, b"", [("location", "/memory"), ("set-cookie", cookie)])


def form_of(fields: Mapping[str, str], ui: Mapping[str, str]) -> Mapping[str, str]:
    """A change's form fields, once its CSRF token is the session's (Refusal 403 otherwise)."""
    if not hmac.compare_digest(str(fields.get("csrf", "")), ui["csrf"]):
        raise Refusal(403, "This form is not one this page gave (its token is missing or stale): reload it.")
    return fields


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
