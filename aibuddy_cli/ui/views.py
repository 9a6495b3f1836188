"""The page's HTML: Jinja2 templates (templates/, package data) with every value escaped
(autoescape), and the one style sheet. A record's body is Markdown rendered without its raw HTML
(markdown-it, `html` off), so what the assistant or a person wrote shows as text, never as markup
or script."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Any

TEMPLATES = "templates"  # (package data: the pages' Jinja2 templates, and style.css)


@functools.cache
def environment() -> Any:
    import jinja2

    loader = jinja2.PackageLoader("aibuddy_cli.ui", TEMPLATES)
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)


@functools.cache
def style() -> str:
    from importlib.resources import files

    return files("aibuddy_cli.ui").joinpath(TEMPLATES, "style.css").read_text(encoding="utf-8")


def render(template: str, values: Mapping[str, Any]) -> str:
    return str(environment().get_template(template).render(**values))


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown_html(text: str) -> str:
    """Markdown as HTML, its raw HTML shown as text and its unsafe links dropped (markdown-it)."""
    return str(_markdown().render(text))


class DiffLine(dict[str, str]):
    """One line of a diff: its kind ("add", "del", "") and its text."""


def diff_lines(before: str, after: str) -> list[DiffLine]:
    """A unified diff of two texts, line by line, for the page (no header lines)."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2)
    shown = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        shown.append(DiffLine(kind=kind, text=line))
    return shown
