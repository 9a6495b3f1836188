"""`aibuddy kb` and `aibuddy task` through the CLI: JSON documents, exit codes, editing, watching."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import BODY, STRINGS, ok, published, write_file

from aibuddy_cli.app.session import Session
from aibuddy_cli.errors import InvalidInput
from aibuddy_cli.vault import Vault


def test_import_review_task_search_read_round_trip(cli, vault: Vault, tmp_path: Path) -> None:
    report = ok(cli("kb", "import", str(STRINGS), str(BODY), "--scope", "system", "--json"))
    assert [f["doc"] for f in report["files"]] == ["system/ch08-02-strings", "system/body"]
    assert report["imported"] == 2 and report["files"][0]["source"] == str(STRINGS)
    pending = ok(cli("kb", "list", "--status", "pending", "--json"))["documents"]
    assert {d["doc"] for d in pending} == {"system/ch08-02-strings", "system/body"}
    assert ok(cli("kb", "publish", "ch08-02-strings", "--json")) == {"published": ["system/ch08-02-strings"]}
    task = ok(cli("task", "new", "Learn Rust strings", "--json"))
    assert task["id"] == "t1" and task["attached"] == []
    attached = ok(cli("task", "attach", "t1", "ch08-02-strings", "body", "--json"))
    assert attached["attached"] == ["system/ch08-02-strings", "system/body"]
    kb_map = ok(cli("kb", "map", "--task", "t1", "--json"))
    assert [d["doc"] for d in kb_map["documents"]] == ["system/ch08-02-strings"]
    assert kb_map["documents"][0] == {
        "doc": "system/ch08-02-strings",
        "title": "使用字符串储存 UTF-8 编码的文本",
        "scope": "system",
        "summary": None,
        "sections": 12,
    }
    assert kb_map["unavailable"][0]["doc"] == "system/body"
    hits = ok(cli("kb", "search", "字符串 push_str", "--task", "t1", "--limit", "2", "--json"))["hits"]
    assert len(hits) == 2 and hits[0]["anchor"] == "使用-push_str-和-push-追加字符串"
    outline = ok(cli("kb", "outline", "ch08-02-strings", "--task", "t1", "--json"))
    assert outline["outline"][0]["anchor"] == "使用字符串储存-utf-8-编码的文本"
    page = ok(
        cli(
            "kb", "read", "ch08-02-strings", hits[0]["anchor"], "--task", "t1", "--max-chars", "200", "--json"
        )
    )
    assert page["text"].startswith("#### 使用 `push_str`") and page["next_cursor"]
    more = ok(
        cli("kb", "read", "ch08-02-strings", hits[0]["anchor"], "--cursor", page["next_cursor"], "--json")
    )
    assert more["offset"] == len(page["text"])
    detached = ok(cli("task", "detach", "t1", "system/body", "--json"))
    assert detached["attached"] == ["system/ch08-02-strings"]
    assert [t["id"] for t in ok(cli("task", "list", "--json"))["tasks"]] == ["t1"]


@pytest.mark.parametrize(
    "args, code, error",
    [
        (("kb", "read", "ch08-02-strings", "nope"), 3, "not_found"),
        (("kb", "read", "ch08-02-strings", "更新字符串", "--cursor", "abc.def.12"), 6, "invalid_input"),
        (("kb", "show", "../etc/passwd"), 6, "invalid_input"),
        (("kb", "show", "missing"), 3, "not_found"),
        (("--user", "bob", "kb", "publish", "ch08-02-strings"), 5, "not_allowed"),
        (("kb", "publish", "ch08-02-strings"), 4, "conflict"),
        (("kb", "read", "body", "request-body"), 5, "not_allowed"),
        (("task", "show", "t9"), 3, "not_found"),
        (("kb", "search", "字符串", "--task", "../t1"), 6, "invalid_input"),
    ],
)
def test_kb_errors(cli, vault: Vault, args: tuple[str, ...], code: int, error: str) -> None:
    ok(cli("kb", "import", str(STRINGS), str(BODY), "--scope", "system", "--json"))
    ok(cli("kb", "publish", "ch08-02-strings", "--json"))
    result = cli(*args, "--json")
    assert result.exit_code == code, result.stdout
    assert json.loads(result.stdout)["error"]["code"] == error


def test_a_failed_file_in_a_bulk_import_is_reported_at_the_end(cli, tmp_path: Path) -> None:
    bad = tmp_path / "scan.pdf"
    bad.write_bytes(b"%PDF-1.5 ...")
    result = cli("kb", "import", str(bad), str(BODY), "--json")
    assert result.exit_code == 6
    report = json.loads(result.stdout)
    assert report["imported"] == 1 and report["failed"] == 1
    assert "convert it to Markdown first" in report["files"][0]["message"]
    assert "scan.pdf" in result.stderr


@pytest.mark.process
def test_kb_edit_uses_the_editor_and_sends_the_document_back_to_review(
    cli, vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(cli("kb", "import", str(BODY), "--scope", "system", "--json"))
    ok(cli("kb", "publish", "body", "--json"))
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('# Request Body', '# Request Bodies'))\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    result = ok(cli("kb", "edit", "body", "--json"))
    assert result == {"doc": "system/body", "status": "pending", "changed": True}
    shown = ok(cli("kb", "show", "body", "--json"))
    assert shown["status"] == "pending" and shown["title"] == "Request Bodies" and shown["summary"] is None
    monkeypatch.setenv("EDITOR", "true")
    assert ok(cli("kb", "edit", "body", "--json"))["changed"] is False


@pytest.mark.process
def test_summaries_through_the_model_and_their_failures(
    cli, vault: Vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok(cli("kb", "import", str(BODY), "--scope", "system", "--json"))
    no_model = cli("kb", "summarize", "body", "--json")
    assert no_model.exit_code == 7
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    monkeypatch.setenv("AIBUDDY_MODEL_SUMMARY", "openai/summary-test")
    fake_openai.enqueue(status=500)
    failed = cli("kb", "summarize", "body", "--json")
    assert failed.exit_code == 0 and json.loads(failed.stdout)["results"][0]["summarized"] is False
    assert "summary left as it was" in failed.stderr
    body_before = (vault.root / "knowledge/system/pending/body.md").read_bytes()
    fake_openai.enqueue(content="How to declare a request body with Pydantic models.")
    done = ok(cli("kb", "summarize", "body", "--json"))
    assert done["results"][0]["summary"] == "How to declare a request body with Pydantic models."
    assert (vault.root / "knowledge/system/pending/body.md").read_bytes() == body_before
    assert ok(cli("kb", "show", "body", "--json"))["summary"].startswith("How to declare")
    # a summary made for an older body is discarded
    service = Session(Vault.open(vault.root), "demo", environ={}).knowledge
    ref, meta = service.show("body")
    result = service.summaries.store_summary(ref, "0" * 64, "stale")
    assert result.summarized is False and service.show("body")[1].summary.startswith("How to declare")


@pytest.mark.process
def test_kb_watch_follows_edits_new_files_and_stops_on_ctrl_c(aibuddy_exe: list[str], vault: Vault) -> None:
    service = Session(vault, "demo", environ={}).knowledge
    service.import_paths([str(BODY)], scope="system")
    service.publish("body")
    env = {**os.environ, "AIBUDDY_VAULT": str(vault.root), "AIBUDDY_USER": "demo"}
    watcher = subprocess.Popen(
        [*aibuddy_exe, "kb", "watch", "--debounce", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "watching" in watcher.stderr.readline()
        ready = vault.root / "knowledge/system/ready/body.md"
        # an editor's save: write a temp file, then rename it over the original
        temp = ready.with_name(".body.md.swp")
        temp.write_text(ready.read_text().replace("# Request Body", "# Request Bodies"))
        os.replace(temp, ready)
        dropped = vault.root / "knowledge/system/pending/new-guide.md"
        shutil.copy(STRINGS, dropped)
        deadline = time.monotonic() + 120  # generous: an event, not a timing
        pending = vault.root / "knowledge/system/pending"
        while time.monotonic() < deadline:
            if (
                (pending / "body.meta.json").exists()
                and (pending / "new-guide.meta.json").exists()
                and not ready.exists()
            ):
                break
            time.sleep(0.1)
        assert not ready.exists() and (pending / "body.md").exists()
        assert json.loads((pending / "body.meta.json").read_text())["title"] == "Request Bodies"
        assert (
            json.loads((pending / "new-guide.meta.json").read_text())["title"]
            == "使用字符串储存 UTF-8 编码的文本"
        )
        knowledge = Session(Vault.open(vault.root), "demo", environ={}).knowledge
        hits = knowledge.search("Bodies", status="pending")
        assert hits and hits[0].hit.ref.doc_id == "body"
    finally:
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=120)
    assert watcher.returncode == 0, err
    assert "returned to pending" in err


def test_odd_numbers_are_refused_cleanly(cli, vault: Vault, tmp_path: Path) -> None:
    service = Session(vault, "demo", environ={}).knowledge
    published(service, write_file(tmp_path, "box.md", "# Box\n\nbox text\n"))
    assert cli("kb", "read", "box", "box", "--cursor", "abcdef123456.00000000.²", "--json").exit_code == 6
    assert cli("kb", "read", "box", "box", "--cursor", "a.b." + "9" * 5000, "--json").exit_code == 6
    assert cli("kb", "search", "box", "--limit", "99999999999999999999", "--json").exit_code == 2
    with pytest.raises(InvalidInput):
        service.search("box", limit=10**9)
    assert cli("kb", "reingest", "box", str(tmp_path), "--json").exit_code == 6
