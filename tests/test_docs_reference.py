"""The documentation's reference pages are the code's: a command, a tool or a setting changed
without running docs/gen_reference.py fails here (and `make docs`, which CI runs, fails too)."""

from __future__ import annotations

import importlib.util

from helpers import REPO


def test_the_generated_reference_is_the_codes() -> None:
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = [
        name
        for name, text in generator.pages().items()
        if (REPO / "docs" / "reference" / name).read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"stale: {stale}; run .venv/bin/python docs/gen_reference.py"


def test_every_page_is_in_the_navigation() -> None:
    listed = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(str(path.relative_to(REPO / "docs")) for path in (REPO / "docs").rglob("*.md"))
    assert [page for page in pages if page not in listed] == []
