"""`aibuddy ui` in-process (Starlette's test client): who gets in, what a change must carry, and
that the memory pages show and change what the command line shows and changes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from aibuddy_cli.app.session import Session
from aibuddy_cli.settings import Settings
from aibuddy_cli.ui.guard import Guard
from aibuddy_cli.ui.pages import Place
from aibuddy_cli.ui.server import build_app
from aibuddy_cli.vault import Vault

PORT = 48123  # nothing listens: the test client calls the app itself, with this port in its Host
KEY = "the-one-time-key"
ORIGIN = f"http://127.0.0.1:{PORT}"


def place(vault: Vault) -> Place:
    return Place(vault, lambda user: Session(Vault.open(vault.root), user, settings=Settings.read({})))


def app_for(vault: Vault, user: str = "demo") -> Guard:
    """The page as `aibuddy ui` run by user serves it: behind the one-time link."""
    return build_app(place(vault), PORT, user=user, login_key=KEY)


@pytest.fixture
def stocked(vault: Vault) -> Vault:
    memory = Session(vault, "demo", environ={}).memory
    memory.create_auto("tea", type="user", description="Drinks green tea", body="Sencha in the **morning**.")
    memory.save("editor", type="feedback", description="Prefers vim", body="Use vim keys.")
    hostile = '<script>alert(1)</script> [x](javascript:alert(2))'
    memory.save("trick", type="reference", description="A hostile body", body=hostile)
    return vault


@pytest.fixture
def browser(stocked: Vault) -> Iterator[TestClient]:
    """A client that opened the one-time link: it holds the session's cookie."""
    with TestClient(app_for(stocked), base_url=ORIGIN) as client:
        opened = client.get(f"/login?key={KEY}", follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/memory"
        yield client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def record_file(vault: Vault, name: str) -> Path:
    return vault.root / "memory" / "demo" / f"{name}.md"


# --- who gets in -------------------------------------------------------------------------------


def test_nothing_is_shown_without_the_links_cookie_and_the_link_works_once(stocked: Vault) -> None:
    with TestClient(app_for(stocked), base_url=ORIGIN) as client:
        refused = client.get("/memory")
        assert refused.status_code == 401 and "tea" not in refused.text
        assert client.get("/login?key=guess").status_code == 401
        assert client.get(f"/login?key={KEY}").status_code == 200  # followed to /memory
        assert "tea" in client.get("/memory").text
    with TestClient(app_for(stocked), base_url=ORIGIN) as other:
        other.get(f"/login?key={KEY}")  # (another app: its own key, not yet spent)
        assert other.get(f"/login?key={KEY}").status_code == 401  # spent: a second browser gets nothing
        assert "used already" in other.get(f"/login?key={KEY}").text


def test_a_request_naming_another_host_is_refused(browser: TestClient) -> None:
    answer = browser.get("/memory", headers={"host": f"attacker.example:{PORT}"})
    assert answer.status_code == 421 and "tea" not in answer.text


def test_every_answer_forbids_scripts_frames_and_sniffing(browser: TestClient) -> None:
    answer = browser.get("/memory")
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy and "script" not in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["x-frame-options"] == "DENY"
    assert browser.get("/login?key=x").headers["x-frame-options"] == "DENY"  # refusals too


# --- what a change must carry ------------------------------------------------------------------


def test_a_change_without_the_pages_token_or_from_another_origin_changes_nothing(
    browser: TestClient, stocked: Vault
) -> None:
    token = csrf_of(browser.get("/memory/tea/delete").text)
    without = browser.post("/memory/tea/delete", data={}, headers={"origin": ORIGIN})
    assert without.status_code == 403 and "token" in without.text
    cross_site = browser.post("/memory/tea/delete", data={"csrf": token}, headers={"origin": "https://evil.example"})
    assert cross_site.status_code == 403 and "another site" in cross_site.text
    no_origin = browser.post("/memory/tea/delete", data={"csrf": token})  # neither Origin nor Referer
    assert no_origin.status_code == 403
    assert record_file(stocked, "tea").exists()
    referer = {"referer": f"{ORIGIN}/memory"}
    by_referer = browser.post("/memory/tea/delete", data={"csrf": token}, headers=referer)
    assert by_referer.status_code == 200 and not record_file(stocked, "tea").exists()


def test_every_change_of_the_app_checks_the_token(browser: TestClient, stocked: Vault) -> None:
    routes = browser.app.app.routes  # type: ignore[attr-defined] - the Starlette app behind the guard
    posts = [route.path.replace("{name}", "tea") for route in routes if "POST" in (route.methods or ())]
    assert posts  # edit, delete, revert
    for path in posts:
        forged = {"csrf": "forged", "to": "1", "body": "x"}
        answer = browser.post(path, data=forged, headers={"origin": ORIGIN})
        assert answer.status_code == 403, path
    assert "Sencha" in record_file(stocked, "tea").read_text()


# --- memory ------------------------------------------------------------------------------------


def test_the_list_shows_each_records_type_provenance_and_use(browser: TestClient) -> None:
    page = browser.get("/memory").text
    assert re.search(r'<a href="/memory/tea">tea</a>.*?user</td><td>auto</td>', page, re.S)
    assert re.search(r'<a href="/memory/editor">editor</a>.*?feedback</td><td>manual</td>', page, re.S)
    assert "never recalled" in page and "<svg" in page and "Records (3)" in page


def test_recall_is_the_command_lines_and_counts_as_a_recall(browser: TestClient, stocked: Vault) -> None:
    page = browser.get("/memory", params={"q": "what do I like to drink"}).text
    assert 'href="/memory/tea"' in page.split('id="recalled"')[1]
    assert "recallCount: 1" in record_file(stocked, "tea").read_text()


@pytest.mark.process  # a record's page asks git for its versions
def test_a_body_is_rendered_markdown_and_never_markup_or_script(browser: TestClient) -> None:
    assert "<strong>morning</strong>" in browser.get("/memory/tea").text
    page = browser.get("/memory/trick").text
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'href="javascript:' not in page


@pytest.mark.process  # a record's page asks git for its versions
def test_an_edit_writes_the_record_through_memory_update(browser: TestClient, stocked: Vault) -> None:
    token = csrf_of(browser.get("/memory/editor/edit").text)
    body = "Use helix keys.\r\n"  # a textarea's line ends
    fields = {"csrf": token, "type": "feedback", "description": "Prefers helix", "body": body}
    answer = browser.post("/memory/editor/edit", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and "saved editor" in answer.text
    text = record_file(stocked, "editor").read_text()
    assert "description: Prefers helix" in text and text.endswith("Use helix keys.\n")


@pytest.mark.process  # a record's page asks git for its versions
def test_a_refused_change_says_why_in_one_line_and_keeps_the_record(
    browser: TestClient, stocked: Vault
) -> None:
    token = csrf_of(browser.get("/memory/editor/edit").text)
    fields = {"csrf": token, "type": "opinion", "description": "x", "body": "y"}
    answer = browser.post("/memory/editor/edit", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 400 and "Traceback" not in answer.text and "type" in answer.text
    assert "Prefers vim" in record_file(stocked, "editor").read_text()
    missing = browser.get("/memory/nobody")
    assert missing.status_code == 404 and "nobody" in missing.text


@pytest.mark.process  # a record's page asks git for its versions
def test_a_version_automatic_memory_replaced_is_shown_as_a_diff_and_reverted(
    browser: TestClient, stocked: Vault
) -> None:
    memory = Session(stocked, "demo", environ={}).memory
    memory.update_auto("tea", description="Drinks green tea", body="Oolong in the afternoon.")
    page = browser.get("/memory/tea").text
    assert '<span class="del">-Oolong in the afternoon.</span>' not in page  # the diff goes old -> new
    assert '<span class="del">-Sencha in the **morning**.</span>' in page
    assert '<span class="add">+Oolong in the afternoon.</span>' in page
    fields = {"csrf": csrf_of(page), "to": "1"}
    answer = browser.post("/memory/tea/revert", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and "reverted tea to version 1" in answer.text
    assert "Sencha in the **morning**." in record_file(stocked, "tea").read_text()


# --- changes that wait for a person --------------------------------------------------------------


def test_a_proposed_update_is_shown_as_a_diff_and_accepting_it_writes_the_record(
    browser: TestClient, stocked: Vault
) -> None:
    from aibuddy_cli.memory.pending import Pending

    memory = Session(stocked, "demo", environ={}).memory
    proposal = Pending(memory).propose("update", "tea", type="user", description="Drinks oolong",
                                       body="Oolong in the afternoon.")  # fmt: skip
    page = browser.get("/pending").text
    assert '<span class="del">-Sencha in the **morning**.</span>' in page
    assert '<span class="add">+Oolong in the afternoon.</span>' in page
    fields = {"csrf": csrf_of(page)}
    answer = browser.post(f"/pending/{proposal.id}/accept", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and "updated tea" in answer.text and "No change waits" in answer.text
    text = record_file(stocked, "tea").read_text()
    assert "Oolong in the afternoon." in text and "provenance: auto" in text


def test_a_proposal_edited_then_accepted_is_the_persons_and_a_rejected_one_changes_nothing(
    browser: TestClient, stocked: Vault
) -> None:
    from aibuddy_cli.memory.pending import Pending

    pending = Pending(Session(stocked, "demo", environ={}).memory)
    new = pending.propose("create", "bike", type="user", description="Cycles to work", body="Every day.")
    other = pending.propose("create", "cat", type="user", description="Has a cat", body="Named Tom.")
    token = csrf_of(browser.get("/pending").text)
    edited = {"csrf": token, "description": "Cycles to work", "body": "Most days.\r\n"}
    answer = browser.post(f"/pending/{new.id}/accept", data=edited, headers={"origin": ORIGIN})
    assert "created bike (yours now)" in answer.text
    assert "provenance: manual" in record_file(stocked, "bike").read_text()
    answer = browser.post(f"/pending/{other.id}/reject", data={"csrf": token}, headers={"origin": ORIGIN})
    assert "rejected the change to cat" in answer.text and not record_file(stocked, "cat").exists()
    assert pending.proposals() == []


# --- knowledge ---------------------------------------------------------------------------------

GUIDE_V1 = "# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback`.\n"
GUIDE_V2 = GUIDE_V1.replace("rollback`", "rollback --to previous`") + "\n## Canary\n\nOne pod first.\n"


@pytest.fixture
def documented(stocked: Vault, tmp_path: Path) -> Vault:
    """A published system guide with a newer version waiting for review."""
    knowledge = Session(stocked, "demo", environ={}).knowledge
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE_V1)
    knowledge.import_paths([str(guide)], scope="system")
    knowledge.publish("guide")
    guide.write_text(GUIDE_V2)
    knowledge.reingest("system/guide", str(guide))
    return stocked


def opened(vault: Vault, user: str) -> TestClient:
    """A browser that opened the link of `aibuddy ui` run by user."""
    client = TestClient(app_for(vault, user), base_url=ORIGIN)
    assert client.get(f"/login?key={KEY}", follow_redirects=False).status_code == 303
    return client


def test_an_admin_sees_the_pending_versions_diff_and_publishes_it(documented: Vault) -> None:
    with opened(documented, "demo") as admin:
        listing = admin.get("/kb").text
        assert "system/guide" in listing and "pending" in listing and "ready" in listing
        page = admin.get("/kb/doc", params={"d": "system/guide", "status": "pending"}).text
        assert '<span class="add">+Run `deployctl rollback --to previous`.</span>' in page
        assert '<span class="del">-Run `deployctl rollback`.</span>' in page
        fields = {"csrf": csrf_of(page), "doc": "system/guide"}
        answer = admin.post("/kb/publish", data=fields, headers={"origin": ORIGIN})
        assert answer.status_code == 200 and "published system/guide" in answer.text
    ready = documented.root / "knowledge" / "system" / "ready" / "guide.md"
    assert ready.read_text() == GUIDE_V2


def test_another_user_cannot_publish_a_system_document(documented: Vault) -> None:
    with opened(documented, "bob") as bob:
        page = bob.get("/kb/doc", params={"d": "system/guide", "status": "pending"})
        assert 'action="/kb/publish"' not in page.text
        fields = {"csrf": token_of(bob), "doc": "system/guide"}  # a form as the page would give it
        answer = bob.post("/kb/publish", data=fields, headers={"origin": ORIGIN})
        assert answer.status_code in (403, 404) and "Traceback" not in answer.text
    ready = documented.root / "knowledge" / "system" / "ready" / "guide.md"
    assert ready.read_text() == GUIDE_V1


def token_of(client: TestClient) -> str:
    """The CSRF token the page gives this client's session (for a form no page of its shows)."""
    from aibuddy_cli.ui.guard import COOKIE

    return client.app.csrf_token(client.cookies[COOKIE])  # type: ignore[attr-defined]


def test_a_section_reads_with_its_citation(documented: Vault) -> None:
    with opened(documented, "demo") as admin:
        found = admin.get("/kb", params={"q": "roll back a deploy"}).text
        assert "system/guide#rollback" in found
        where = {"d": "system/guide", "anchor": "rollback", "status": "ready"}
        page = admin.get("/kb/read", params=where).text
        assert '<code id="citation">system/guide#rollback</code>' in page
        assert "<code>deployctl rollback</code>" in page


# --- tables ------------------------------------------------------------------------------------


@pytest.fixture
def tabled(stocked: Vault, cli) -> Vault:  # noqa: ANN001 - the CliRunner fixture
    created = cli("table", "create", "people", "-d", "People we know", "-c", "name:str", "-c", "age:int")
    assert created.exit_code == 0
    rows = ['{"name": "Ada", "age": 36}', '{"name": "Alan", "age": 41}', '{"name": "Grace", "age": 29}']
    assert cli("table", "add", "people", *[a for row in rows for a in ("--row", row)]).exit_code == 0
    return stocked


def cells(page: str) -> list[str]:
    table = page.split('id="rows"')[1].split("</table>")[0]
    return re.findall(r"<td>([^<]*)</td>", table)


def test_a_table_shows_its_typed_columns_and_filters_with_the_filter_language(
    browser: TestClient, tabled: Vault
) -> None:
    listing = browser.get("/tables").text
    assert "people" in listing and "name: str, age: int" in listing
    page = browser.get("/tables/view", params={"t": "people"}).text
    assert "int" in page.split('id="rows"')[1] and cells(page)[:3] == ["1", "Ada", "36"]
    older = browser.get("/tables/view", params={"t": "people", "where": "age > 30"}).text
    assert [cell for cell in cells(older) if cell.isalpha()] == ["Ada", "Alan"] and "of 2" in older
    by_age = browser.get("/tables/view", params={"t": "people", "sort": "-age"}).text
    assert [cell for cell in cells(by_age) if cell.isalpha()] == ["Alan", "Ada", "Grace"]


def test_a_filter_that_does_not_hold_is_said_on_the_page_never_as_a_traceback(
    browser: TestClient, tabled: Vault
) -> None:
    answer = browser.get("/tables/view", params={"t": "people", "where": "height > 2"})
    assert answer.status_code == 200 and 'id="refused"' in answer.text and "height" in answer.text
    assert "Traceback" not in answer.text and 'id="rows"' not in answer.text
    missing = browser.get("/tables/view", params={"t": "nobody"})
    assert missing.status_code == 404 and "nobody" in missing.text


# --- tasks -------------------------------------------------------------------------------------


def test_a_task_shows_its_messages_documents_and_consolidation(
    browser: TestClient, documented: Vault
) -> None:
    tasks = Session(documented, "demo", environ={}).tasks
    task = tasks.new("Roll back the deploy", plan="1. Find the **runbook**")
    tasks.set_attached(task.id, {"system/guide": True})
    tasks.add_message(task.id, "user", "How do I roll back? <script>alert(1)</script>")
    tasks.add_message(task.id, "assistant", "Run deployctl rollback.")
    assert "Roll back the deploy" in browser.get("/tasks").text
    page = browser.get("/tasks/view", params={"t": task.id}).text
    assert "<strong>runbook</strong>" in page and 'href="/kb/doc?d=system/guide' in page
    assert "0 message(s) consolidated, 2 waiting" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
    assert page.index("How do I roll back?") < page.index("Run deployctl rollback.")  # oldest first
    assert browser.get("/tasks/view", params={"t": "t99"}).status_code == 404


def test_a_natural_language_run_is_listed_and_undone_from_the_page(
    browser: TestClient, tabled: Vault
) -> None:
    from scripted_model import ScriptedModel
    from table_loop_support import agent

    model = ScriptedModel()
    model.call(("ask", {"question": "How old is Ada?"}))  # (an update looks before it changes)
    model.answer("Ada is 36.")
    model.call(("update_rows", {"table": "people", "filter": 'name == "Ada"', "values": {"age": 37}}))
    model.answer("Ada is 37 now.")
    run = agent(tabled, model).change("update", "Ada had her birthday").run
    people = tabled.root / "tables" / "personal" / "demo" / "people.csv"
    assert "Ada,37" in people.read_text()
    page = browser.get("/tables").text
    assert f"<code>{run}</code>" in page and 'action="/tables/undo"' in page
    fields = {"csrf": csrf_of(page), "run": run}
    answer = browser.post("/tables/undo", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and f"undid run {run}" in answer.text
    assert "Ada,36" in people.read_text()
    assert 'action="/tables/undo"' not in answer.text and "undone" in answer.text


def test_memory_reviews_suggestions_wait_on_the_same_page_and_apply_from_it(
    browser: TestClient, stocked: Vault
) -> None:
    Session(stocked, "demo", environ={}).memory.save(
        "trip", type="project", description="Trip to Rome", body="In May.", expires="2020-01-01"
    )
    page = browser.get("/pending").text
    suggestions = page.split('id="suggestions"')[1]
    assert "trip" in suggestions and 'action="/review/apply"' in suggestions
    found = re.search(r'name="id" value="([^"]+)"', suggestions)
    assert found
    fields = {"csrf": csrf_of(page), "id": found.group(1)}
    answer = browser.post("/review/apply", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and "trip" in answer.text and 'id="no-suggestions"' in answer.text
    assert not record_file(stocked, "trip").exists()


# --- a remote bind: a sign-in by token ---------------------------------------------------------


def test_a_remote_page_signs_each_person_in_by_token_and_shows_only_their_memory(stocked: Vault) -> None:
    from aibuddy_cli.mcp.http import VaultTokens
    from aibuddy_cli.tokens import TokenService

    session = Session(stocked, "bob", environ={})
    session.memory.save("bike", type="user", description="Cycles to work", body="Every day.")
    tokens = TokenService(stocked, "bob", session.store)
    secret = tokens.create(name="laptop").secret
    app = build_app(place(stocked), PORT, tokens=VaultTokens(session.store).tokens, hosts=["aibuddy.lan"])
    remote = f"http://aibuddy.lan:{PORT}"
    with TestClient(app, base_url=remote) as browser:
        assert browser.get("/memory").status_code == 401
        assert 'name="token"' in browser.get("/login").text
        assert browser.get(f"/login?key={KEY}").status_code == 200  # (no link here: the form)
        wrong = browser.post("/login", data={"token": "aibuddy_guess"}, headers={"origin": remote})
        assert wrong.status_code == 401
        cross = browser.post("/login", data={"token": secret}, headers={"origin": "https://evil.example"})
        assert cross.status_code == 403
        signed = browser.post("/login", data={"token": secret}, headers={"origin": remote})
        assert signed.status_code == 200 and "bob" in signed.text
        assert "bike" in signed.text and ">tea<" not in signed.text  # bob's memory, never demo's
        tokens.revoke("laptop")
        assert browser.get("/memory").status_code == 401  # a revoked token ends its sessions


def test_a_proposed_contact_shows_its_columns_and_accepting_writes_its_row(
    browser: TestClient, stocked: Vault
) -> None:
    from aibuddy_cli.memory.pending import Pending

    pending = Pending(Session(stocked, "demo", environ={}).memory)
    proposal = pending.propose_contact("Ada", {"bio": "Engineer"}, None)
    page = browser.get("/pending").text
    assert "Contact Ada" in page and '<span class="add">+bio: Engineer</span>' in page
    assert "Edit, then accept" not in page.split(f'id="proposal-{proposal.id}"')[1].split("</section>")[0]
    fields = {"csrf": csrf_of(page)}
    answer = browser.post(f"/pending/{proposal.id}/accept", data=fields, headers={"origin": ORIGIN})
    assert answer.status_code == 200 and "contact Ada written" in answer.text
    assert "Ada,Engineer" in (stocked.root / "tables" / "personal" / "demo" / "contacts.csv").read_text()
