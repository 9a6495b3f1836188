"""`aibuddy ui` in a real browser: Debian's Chromium, headless, driven by Playwright (pointed at
that binary: a browser that downloads its own build cannot be had here). `.ci/run` installs
Chromium; where it cannot be had, these tests are skipped and say so.

AIBUDDY_UI_SCREENSHOTS=DIR keeps a screenshot of each page the tests visit (the documentation's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import child_env, wait_for

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.pending import Pending
from aibuddy_cli.vault import Vault

CHROMIUM = os.environ.get("AIBUDDY_CHROMIUM") or shutil.which("chromium") or ""
SCREENSHOTS = os.environ.get("AIBUDDY_UI_SCREENSHOTS")  # (read before the tests clear AIBUDDY_*)
FLAGS = [  # as root, on a machine whose network is closed: no sandbox, no background connections
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(not CHROMIUM, reason="no Chromium (Debian's chromium package; .ci/run installs it)"),
]


@pytest.fixture
def served(vault: Vault, aibuddy_exe: list[str]) -> Iterator[str]:
    """`aibuddy ui --no-browser` on the test vault: the one-time link it prints."""
    memory = Session(vault, "demo", environ={}).memory
    memory.create_auto("tea", type="user", description="Drinks green tea", body="Sencha in the morning.")
    memory.save("editor", type="feedback", description="Prefers vim", body="Use vim keys.")
    Pending(memory).propose("update", "tea", type="user", description="Drinks oolong", body="Oolong at four.")
    process = subprocess.Popen(
        [*aibuddy_exe, "ui", "--no-browser"], env=child_env(vault.root), stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        assert wait_for(lambda: any("/login?key=" in line for line in lines)), lines
        yield re.search(r"http://\S+/login\?key=\S+", "".join(lines)).group(0)  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the module (a launch costs about half a second); each test opens contexts
    of its own (new_page makes one), which share no cookie or storage."""
    playwright = pytest.importorskip("playwright.sync_api", reason="no playwright (the test extra)")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def shot(page: Any, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def test_a_person_opens_the_link_searches_and_deletes_with_a_confirmation(
    served: str, chromium: Any, vault: Vault
) -> None:
    page = chromium.new_page()
    page.goto(served)
    assert page.url.endswith("/memory")
    assert page.locator("#records").get_by_role("link", name="tea").is_visible()
    shot(page, "memory")
    page.fill("#q", "what do I drink")
    page.click("button[type=submit]")
    assert page.locator("#recalled").get_by_role("link", name="tea").is_visible()
    shot(page, "recall")
    page.locator("#recalled").get_by_role("link", name="tea").click()
    assert page.locator("#body").inner_text().strip() == "Sencha in the morning."
    shot(page, "record")
    page.goto(served.split("/login")[0] + "/memory/editor")
    page.click("text=Delete…")
    page.click("button.danger")
    assert page.get_by_role("status").inner_text() == "deleted editor"
    assert not (vault.root / "memory" / "demo" / "editor.md").exists()
    assert (vault.root / "memory" / "demo" / "tea.md").exists()


def test_another_browser_another_site_and_a_spent_link_get_nothing(
    served: str, chromium: Any, vault: Vault
) -> None:
    origin = served.split("/login")[0]
    person = chromium.new_context()
    assert person.new_page().goto(served).url.endswith("/memory")  # the person's browser spends the link
    stranger = chromium.new_context().new_page()
    assert stranger.goto(f"{origin}/memory").status == 401
    assert stranger.goto(served).status == 401  # the link works once
    assert "tea" not in stranger.content()

    # A page on another site posts a form to the aibuddy page, in the person's own browser.
    form = (
        f'<form method="post" action="{origin}/memory/tea/delete"><input name="csrf" value="guess">'
        '<button id="go">win a prize</button></form>'
    ).encode()

    class Evil(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(form)

        def log_message(self, *args: Any) -> None:
            pass

    evil = ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        page = person.new_page()
        page.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
        with page.expect_navigation() as posted:
            page.click("#go")
        # refused: no session cookie cross-site (SameSite), no page token, another Origin
        assert posted.value.status in (401, 403)
    finally:
        evil.shutdown()
    assert (vault.root / "memory" / "demo" / "tea.md").exists()


def test_a_person_accepts_a_pending_automatic_update_and_the_record_changes_on_disk(
    served: str, chromium: Any, vault: Vault
) -> None:
    page = chromium.new_page()
    page.goto(served)
    page.click("text=Waiting for you")
    proposal = page.locator("section.proposal")
    assert proposal.locator(".add").inner_text() == "+Oolong at four."
    shot(page, "pending")
    proposal.get_by_role("button", name="Accept", exact=True).click()
    assert page.get_by_role("status").inner_text() == "updated tea"
    assert "Oolong at four." in (vault.root / "memory" / "demo" / "tea.md").read_text()
    assert page.locator("#none").is_visible()
