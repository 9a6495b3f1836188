"""The page's app (Starlette, which the MCP SDK brings) and `serve_ui`, which serves it on
127.0.0.1 until interrupted."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..settings import Settings
from .guard import LOGIN_PATH, Guard
from .pages import Pages, Place
from .views import style as style_sheet

if TYPE_CHECKING:
    from ..tokens import Token


def build_app(
    place: Place,
    port: int,
    *,
    user: str | None = None,
    login_key: str | None = None,
    tokens: Callable[[], list[Token]] | None = None,
    hosts: Sequence[str] = (),
) -> Guard:
    """The pages behind the guard (guard.py): the one-time link's (user, login_key), or a sign-in
    by token (tokens) for a remote bind; hosts: the names besides loopback clients may use."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, RedirectResponse, Response
    from starlette.routing import Route

    pages = Pages(place)

    def home(request: Request) -> Response:
        return RedirectResponse("/memory", status_code=303)

    def style(request: Request) -> Response:
        return PlainTextResponse(style_sheet(), media_type="text/css")

    routes = [
        Route("/", home),
        Route("/style.css", style),
        Route("/memory", pages.memory),
        Route("/memory/{name}", pages.record),
        Route("/memory/{name}/edit", pages.edit_form, methods=["GET"]),
        Route("/memory/{name}/edit", pages.edit, methods=["POST"]),
        Route("/memory/{name}/delete", pages.delete_form, methods=["GET"]),
        Route("/memory/{name}/delete", pages.delete, methods=["POST"]),
        Route("/memory/{name}/revert", pages.revert, methods=["POST"]),
        Route("/kb", pages.knowledge),
        Route("/kb/doc", pages.document),
        Route("/kb/read", pages.section_page),
        Route("/kb/publish", pages.publish, methods=["POST"]),
        Route("/kb/reject", pages.reject_document, methods=["POST"]),
        Route("/tables", pages.tables),
        Route("/tables/view", pages.table),
        Route("/tables/undo", pages.undo, methods=["POST"]),
        Route("/tasks", pages.tasks),
        Route("/tasks/view", pages.task),
        Route("/pending", pages.pending),
        Route("/pending/{id}/accept", pages.accept, methods=["POST"]),
        Route("/pending/{id}/reject", pages.reject, methods=["POST"]),
        Route("/review/apply", pages.apply_review, methods=["POST"]),
    ]
    pages_app = Starlette(routes=routes)
    return Guard(pages_app, port=port, user=user, login_key=login_key, tokens=tokens, hosts=hosts)


def serve_ui(
    vault: str | None,
    user: str | None,
    settings: Settings,
    cwd: Path,
    port: int,
    open_browser: bool,
    host: str = "127.0.0.1",
    allow_hosts: Sequence[str] = (),
) -> None:
    """Serve the page for the vault a command names until interrupted. On loopback: for the user a
    command would use, behind a one-time link it prints (and opens, unless told not to). Bound
    elsewhere: for whoever signs in with a token of the vault's (`aibuddy token create`)."""
    import asyncio

    import uvicorn

    from ..app.session import Session, database_store
    from ..errors import UsageError
    from ..mcp.http import Address, VaultTokens, listen
    from ..store.files import FileStore

    remote = host not in ("127.0.0.1", "localhost", "::1")
    if remote and user is not None:
        raise UsageError("on a remote bind each token fixes its user: drop --user")
    if remote:
        from ..vault import locate_vault

        opened = locate_vault(vault, settings, cwd)
    else:
        found = Session.locate(vault, user, settings=settings, cwd=cwd)
        found.close()
        opened, user = found.vault, found.user
    place = Place(opened, lambda who: Session(opened, who, settings=settings))
    address = Address(host, port)
    sock = listen(address)
    bound = sock.getsockname()[1]
    if remote:
        store = database_store(opened, settings) or FileStore(opened.root, opened.locks_dir())
        names = [] if host in ("0.0.0.0", "::") else [address.name]
        app = build_app(place, bound, tokens=VaultTokens(store).tokens, hosts=[*names, *allow_hosts])
        where = f"http://{address.name}:{bound}/login"
        said = f"sign in at {where} with a token from `aibuddy token create` (it fixes the user)"
    else:
        key = secrets.token_urlsafe(24)
        link = f"http://127.0.0.1:{bound}{LOGIN_PATH}?key={key}"
        app = build_app(place, bound, user=user, login_key=key, hosts=allow_hosts)
        said = f"for {user}, at {link}\n  (the link works once, in one browser)"
    print(f"aibuddy: the vault {opened.root}, {said}; Ctrl-C stops the page", file=sys.stderr, flush=True)
    if open_browser and not remote:
        import webbrowser

        webbrowser.open(link)
    config: Any = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=3)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
