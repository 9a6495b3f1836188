"""The page's app (Starlette, which the MCP SDK brings) and `serve_ui`, which serves it on
127.0.0.1 until interrupted."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

from ..settings import Settings
from .guard import LOGIN_PATH, Guard
from .pages import Pages, Place
from .views import style as style_sheet


def build_app(place: Place, port: int, login_key: str) -> Guard:
    """The pages behind the guard (guard.py): what a browser reaches at http://127.0.0.1:port."""
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
    return Guard(Starlette(routes=routes), port=port, login_key=login_key)


def serve_ui(
    vault: str | None, user: str | None, settings: Settings, cwd: Path, port: int, open_browser: bool
) -> None:
    """Serve the page for the vault and user a command names (as any command finds them) until
    interrupted; print the one-time link (and open it, unless told not to)."""
    import asyncio

    import uvicorn

    from ..app.session import Session
    from ..mcp.http import Address, listen

    found = Session.locate(vault, user, settings=settings, cwd=cwd)
    found.close()
    place = Place(found.vault, found.user, lambda: Session(found.vault, found.user, settings=settings))
    sock = listen(Address("127.0.0.1", port))
    bound = sock.getsockname()[1]
    key = secrets.token_urlsafe(24)
    link = f"http://127.0.0.1:{bound}{LOGIN_PATH}?key={key}"
    app = build_app(place, bound, key)
    print(
        f"aibuddy: the vault {found.vault.root} for {found.user}, at {link}\n"
        "  (the link works once, in one browser; Ctrl-C stops the page)",
        file=sys.stderr,
        flush=True,
    )
    if open_browser:
        import webbrowser

        webbrowser.open(link)
    config: Any = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=3)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
