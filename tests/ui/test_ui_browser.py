"""`aibuddy ui` in a real browser: Debian's Chromium, headless, driven by Playwright (pointed at
that binary: a browser that downloads its own build cannot be had here). `.ci/run` installs
Chromium; where it cannot be had, these tests are skipped and say so.

AIBUDDY_UI_SCREENSHOTS=DIR keeps a screenshot of each page the tests visit (the documentation's)."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def ui(vault: Vault, aibuddy_exe: list[str], user: str = "demo") -> Iterator[str]:
    """`aibuddy ui --no-browser` on the vault as user: the one-time link it prints."""
    env = {**child_env(vault.root), "AIBUDDY_USER": user}
    command = [*aibuddy_exe, "ui", "--no-browser"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        assert wait_for(lambda: any("/login?key=" in line for line in lines)), lines
        yield re.search(r"http://\S+/login\?key=\S+", "".join(lines)).group(0)  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def served(vault: Vault, aibuddy_exe: list[str]) -> Iterator[str]:
    """The page of the test vault for demo (an admin), with two records and a waiting update."""
    memory = Session(vault, "demo", environ={}).memory
    memory.create_auto("tea", type="user", description="Drinks green tea", body="Sencha in the morning.")
    memory.save("editor", type="feedback", description="Prefers vim", body="Use vim keys.")
    Pending(memory).propose("update", "tea", type="user", description="Drinks oolong", body="Oolong at four.")
    with ui(vault, aibuddy_exe) as link:
        yield link


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


def test_an_admin_publishes_a_documents_new_version_after_its_diff_and_another_user_cannot(
    served: str, chromium: Any, vault: Vault, aibuddy_exe: list[str], tmp_path: Path
) -> None:
    knowledge = Session(vault, "demo", environ={}).knowledge
    guide = tmp_path / "guide.md"
    guide.write_text("# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback`.\n")
    knowledge.import_paths([str(guide)], scope="system")
    knowledge.publish("guide")
    guide.write_text("# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback --to previous`.\n")
    knowledge.reingest("system/guide", str(guide))
    ready = vault.root / "knowledge" / "system" / "ready" / "guide.md"

    Session(vault, "bob", environ={}).memory.save("bike", type="user", description="Cycles", body="Daily.")
    with ui(vault, aibuddy_exe, user="bob") as bobs_link:
        bobs = chromium.new_context()
        bob = bobs.new_page()
        bob.goto(bobs_link)
        origin = bobs_link.split("/login")[0]
        bob.goto(f"{origin}/kb/doc?d=system/guide&status=pending")
        assert bob.locator("form[action='/kb/publish']").count() == 0  # not his to publish
        bob.goto(f"{origin}/memory/bike/delete")  # a page of his, for his session's token
        token = bob.locator("input[name=csrf]").get_attribute("value")
        sent = bobs.request.post(  # the publish he may not do, sent anyway from his own browser
            f"{origin}/kb/publish", form={"csrf": token, "doc": "system/guide"}, headers={"Origin": origin}
        )
        assert sent.status in (403, 404) and "Traceback" not in sent.text()
    assert "--to previous" not in ready.read_text()

    admin = chromium.new_page()
    admin.goto(served)
    admin.click("text=Knowledge")
    shot(admin, "knowledge")
    admin.locator("#system").get_by_role("link", name="system/guide").first.click()
    admin.goto(admin.url.replace("status=ready", "status=pending"))
    assert admin.locator("#diff .add").inner_text() == "+Run `deployctl rollback --to previous`."
    shot(admin, "document")
    admin.click("form[action='/kb/publish'] button")
    assert admin.get_by_role("status").inner_text() == "published system/guide"
    assert "--to previous" in ready.read_text()


def test_a_person_filters_a_table_and_reads_a_task(
    served: str, chromium: Any, vault: Vault, aibuddy_exe: list[str]
) -> None:
    rows = ['{"name": "Ada", "age": 36}', '{"name": "Alan", "age": 41}', '{"name": "Grace", "age": 29}']
    for command in (
        ["table", "create", "people", "-d", "People we know", "-c", "name:str", "-c", "age:int"],
        ["table", "add", "people", *[part for row in rows for part in ("--row", row)]],
        ["task", "new", "Plan the offsite", "--plan", "Book a room, then invite **everyone**."],
        ["task", "add-message", "t1", "Where should we meet?", "--role", "user"],
        ["task", "add-message", "t1", "Lisbon has rooms free in May.", "--role", "assistant"],
    ):
        subprocess.run([*aibuddy_exe, *command], env=child_env(vault.root), check=True, capture_output=True)
    page = chromium.new_page()
    page.goto(served)
    page.click("text=Tables")
    shot(page, "tables")
    page.click("#tables >> text=people")
    page.fill("#where", "age > 30")
    page.click("form[role=search] button")
    assert page.locator("#count").inner_text().startswith("rows 1–2 of 2")
    assert page.locator("#rows td", has_text="Grace").count() == 0
    shot(page, "table")
    page.fill("#where", "height > 2")
    page.click("form[role=search] button")
    assert "height" in page.locator("#refused").inner_text()
    page.click("text=Tasks")
    page.click("#tasks >> text=t1")
    assert page.locator(".message.assistant .body").inner_text() == "Lisbon has rooms free in May."
    shot(page, "task")
