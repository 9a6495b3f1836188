"""Automatic extraction: cue gate, candidates from the real litellm client, reconciliation, log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from aibuddy_cli.app.session import Session
from aibuddy_cli.memory.extraction import Extractor, Message, find_cues, latest_window, parse_transcript
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


@pytest.fixture
def memory(vault: Vault, model_env: dict[str, str]) -> MemoryService:
    return Session(vault, "demo", environ=model_env).memory


def talk(*turns: str, tool_calls: list[str] | None = None) -> list[Message]:
    messages = [Message("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(turns)]
    if tool_calls:
        messages[-1] = messages[-1]._replace(tool_names=tuple(tool_calls))
    return messages


def candidate(**fields: object) -> dict[str, object]:
    base = {
        "type": "feedback",
        "name": "weekly-report-format",
        "description": "Use three sections in every weekly report",
        "body": "Done, next, risks.",
        "salience": 0.9,
        "durable": True,
        "recoverable": False,
    }
    base.update(fields)
    return base


def log_entries(vault: Vault) -> list[dict]:
    path = vault.cache_dir / "logs" / "extraction.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.process
def test_without_a_cue_no_model_is_called(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    result = Extractor(memory).run(talk("What time is it in Tokyo?", "It is 9 pm."))
    assert result.cues == [] and result.written == []
    assert fake_openai.requests == []
    assert [d.outcome for d in result.decisions] == ["no-cue"]
    assert log_entries(vault)[-1]["decisions"][0]["outcome"] == "no-cue"


@pytest.mark.process
def test_a_cue_leads_to_a_new_auto_record(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply_json({"candidates": [candidate(provenance="manual")]})
    result = Extractor(memory).run(
        talk(
            "Write the weekly report.",
            "Here it is: ...",
            "From now on always use three sections: done, next, risks.",
            "Noted.",
        )
    )
    assert "preference" in result.cues and result.written == ["weekly-report-format"]
    record = memory.show("weekly-report-format")
    assert record.provenance == "auto"  # whatever the model said
    assert record.body == "Done, next, risks."
    sent = json.dumps(fake_openai.requests[-1]["body"]["messages"], ensure_ascii=False)
    assert "From now on always use three sections" in sent


@pytest.mark.process
def test_only_the_latest_three_pairs_are_read(memory: MemoryService) -> None:
    turns = talk(
        "I prefer tabs over spaces.", "ok", *[f"question {i}" if i % 2 == 0 else "answer" for i in range(6)]
    )
    window = latest_window(turns)
    assert len(window) == 6 and window[0].content == "question 0"
    assert find_cues(window) == []


@pytest.mark.process
def test_a_near_duplicate_of_an_auto_record_updates_it_and_keeps_its_identity(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    memory.create_auto(
        "report-style", type="feedback", description="Use three sections in every weekly report", body="old"
    )
    memory.recall("weekly report")
    before = memory.show("report-style")
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(
                    name="another-name", description="Use three sections in each weekly report", body="new"
                )
            ]
        }
    )
    result = Extractor(memory).run(
        talk("No, that's wrong: use three sections in each weekly report.", "Understood.")
    )
    assert result.written == ["report-style"]
    after = memory.show("report-style")
    assert (after.body, after.description) == ("new", "Use three sections in each weekly report")
    assert (after.provenance, after.created, after.recall_count) == (
        "auto",
        before.created,
        before.recall_count,
    )
    assert [item.record.name for item in memory.list_records().records] == ["report-style"]


@pytest.mark.process
def test_a_near_duplicate_of_a_manual_record_is_never_written(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    memory.save(
        "report-style", type="feedback", description="Use three sections in every weekly report", body="mine"
    )
    path = vault.root / "memory" / "demo" / "report-style.md"
    before = path.read_bytes()
    fake_openai.reply_json(
        {"candidates": [candidate(description="Use three sections in each weekly report", body="model")]}
    )
    result = Extractor(memory).run(talk("Please always use three sections in each weekly report.", "Sure."))
    assert result.written == [] and result.decisions[-1].outcome == "protected"
    assert path.read_bytes() == before
    assert [item.record.name for item in memory.list_records().records] == ["report-style"]


@pytest.mark.process
def test_equivalent_content_is_a_no_op(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    memory.create_auto(
        "report-style",
        type="feedback",
        description="Weekly reports in three sections",
        body="Done, next, risks.",
    )
    path = memory.vault.root / "memory" / "demo" / "report-style.md"
    before = path.read_bytes()
    fake_openai.reply_json({"candidates": [candidate(body="Done,  next,\nrisks.")]})
    result = Extractor(memory).run(talk("I prefer three sections in every weekly report.", "ok"))
    assert result.decisions[-1].outcome == "no-op" and result.written == []
    assert path.read_bytes() == before


@pytest.mark.process
def test_a_changed_fact_with_the_same_description_updates_the_auto_record(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    memory.create_auto(
        "release-deadline", type="project", description="Release deadline of the mobile app", body="March 3"
    )
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(
                    type="project",
                    name="deadline",
                    description="Release deadline of the mobile app",
                    body="March 17",
                )
            ]
        }
    )
    result = Extractor(memory).run(talk("Our release deadline moved to March 17.", "Noted."))
    assert result.written == ["release-deadline"] and result.decisions[-1].outcome == "updated"
    assert memory.show("release-deadline").body == "March 17"


@pytest.mark.process
def test_a_changed_fact_never_overwrites_what_a_person_wrote(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    memory.save(
        "release-deadline", type="project", description="Release deadline of the mobile app", body="March 3"
    )
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(type="project", description="Release deadline of the mobile app", body="March 17")
            ]
        }
    )
    result = Extractor(memory).run(talk("Our release deadline moved to March 17.", "Noted."))
    assert result.written == [] and result.decisions[-1].outcome == "protected"
    assert memory.show("release-deadline").body == "March 3"


@pytest.mark.process
def test_bad_candidates_are_skipped_and_the_others_go_through(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(name="../../escape"),
                candidate(name="odd-type", type="opinion"),
                candidate(name="minor", salience=0.1),
                candidate(name="in-the-repo", recoverable=True),
                candidate(name="passing", durable=False),
                "not an object",
                candidate(
                    name="timezone", type="user", description="Works in the Berlin time zone", body="CET"
                ),
            ]
        }
    )
    result = Extractor(memory).run(talk("I work at the Berlin office, my role is backend lead.", "Noted."))
    assert result.written == ["timezone"]
    outcomes = [d.outcome for d in result.decisions if d.step in ("candidate", "write")]
    assert outcomes == ["dropped"] * 6 + ["created"]
    assert [item.record.name for item in memory.list_records().records] == ["timezone"]


@pytest.mark.process
@pytest.mark.parametrize(
    "reply", [{"content": "I think you like reports."}, {"status": 500}, {"content": '{"candidates": "x"}'}]
)
def test_model_failures_are_logged_and_nothing_is_written(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault, reply: dict
) -> None:
    fake_openai.enqueue(**reply)
    result = Extractor(memory).run(talk("I prefer short answers.", "ok"))
    assert result.written == [] and result.decisions[-1].outcome == "failed"
    assert memory.list_records().records == []
    assert log_entries(vault)[-1]["decisions"][-1]["outcome"] == "failed"


@pytest.mark.process
def test_an_explicit_memory_write_skips_the_window(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    result = Extractor(memory).run(talk("I prefer short answers.", "Saved.", tool_calls=["memory_save"]))
    assert result.decisions[0].outcome == "skipped" and fake_openai.requests == []


@pytest.mark.process
@pytest.mark.parametrize("tool", ["memory_save", "memory_update", "memory_delete"])
def test_the_usual_tool_call_shape_of_an_explicit_write_skips_the_window(
    memory: MemoryService, fake_openai: FakeOpenAI, tool: str
) -> None:
    """Assistant turn with the tool call, the tool result, then the assistant's closing reply."""
    messages = [
        Message("user", "What's on my calendar?"),
        Message("assistant", "Two meetings."),
        Message("user", "From now on, I prefer short answers."),
        Message("assistant", "", (tool,)),
        Message("tool", '{"ok": true}'),
        Message("assistant", "Saved: you prefer short answers."),
    ]
    result = Extractor(memory).run(messages)
    assert result.decisions[0].outcome == "skipped" and fake_openai.requests == []
    # A later exchange without a memory write is looked at again.
    later = [*messages, Message("user", "Also, I'm vegetarian."), Message("assistant", "Good to know.")]
    fake_openai.reply_json({"candidates": []})
    assert Extractor(memory).run(later).decisions[0].step == "cue"
    assert len(fake_openai.requests) == 1


@pytest.mark.process
def test_an_earlier_exchange_that_wrote_memory_does_not_skip_the_latest(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    messages = [
        Message("user", "Remember that I prefer tea."),
        Message("assistant", "", ("memory_save",)),
        Message("tool", "saved"),
        Message("assistant", "Saved."),
        Message("user", "From now on, always answer in French."),
        Message("assistant", "D'accord."),
    ]
    fake_openai.reply_json({"candidates": []})
    result = Extractor(memory).run(messages)
    assert [d.outcome for d in result.decisions[:2]] == ["found", "answered"]


@pytest.mark.process
def test_a_run_of_one_role_does_not_grow_the_window(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    """A cue 40 messages back must not open the gate."""
    messages = [Message("user", "From now on, always answer in French.")]
    messages += [Message("user", f"Line {i} of the log I am pasting: ok") for i in range(40)]
    messages += [Message("assistant", "The log looks fine.")]
    window = latest_window(messages)
    assert len(window) == 6 and "French" not in " ".join(m.content for m in window)
    result = Extractor(memory).run(messages)
    assert [d.outcome for d in result.decisions] == ["no-cue"] and fake_openai.requests == []
    replies = [Message("assistant", f"part {i}") for i in range(40)]
    window = latest_window([Message("user", "I prefer tea."), *replies])
    assert len(window) == 6 and all(m.role == "assistant" for m in window)


@pytest.mark.process
def test_the_window_holds_three_pairs_at_most(memory: MemoryService) -> None:
    messages = [
        Message("user", "a"), Message("user", "b"), Message("assistant", "c"),
        Message("user", "d"), Message("assistant", "e"), Message("assistant", "f"),
        Message("user", "g"), Message("assistant", "h"), Message("user", "i"), Message("assistant", "j"),
    ]  # fmt: skip
    assert [m.content for m in latest_window(messages)] == ["e", "f", "g", "h", "i", "j"]
    tool_in_between = [Message("user", "x"), Message("tool", "t"), Message("assistant", "y")]
    assert [m.content for m in latest_window(tool_in_between)] == ["x", "y"]


@pytest.mark.process
def test_an_unwritable_log_is_a_warning_and_the_records_stay(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    logs = vault.cache_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "extraction.jsonl").mkdir()  # a folder where the log file should be
    fake_openai.reply_json({"candidates": [candidate()]})
    extractor = Extractor(memory)
    result = extractor.run(talk("From now on always use three sections in the weekly report.", "ok"))
    assert result.written == ["weekly-report-format"]
    assert any("extraction log not written" in w for w in extractor.warnings)


def test_without_a_model_the_cue_is_reported_and_nothing_written(vault: Vault) -> None:
    memory = Session(vault, "demo", environ={}).memory
    result = Extractor(memory).run(talk("以后周报都用三段式格式。", "好的。"))
    assert result.cues == ["preference"]
    assert result.decisions[-1].step == "model" and "nothing written" in result.decisions[-1].detail
    assert memory.list_records().records == []


@pytest.mark.process
def test_cli_extract_dry_run_writes_nothing(
    cli,
    vault: Vault,
    fake_openai: FakeOpenAI,
    model_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for key, value in model_env.items():
        monkeypatch.setenv(key, value)
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {"role": "user", "content": "From now on, answer me in German."},
                {
                    "role": "assistant",
                    "content": "Verstanden.",
                    "tool_calls": [{"function": {"name": "lookup", "arguments": "{}"}}],
                },
            ]
        )
        + "\nnot json\n"
    )
    fake_openai.reply_json(
        {"candidates": [candidate(name="answer-language", type="user", description="Answer in German")]}
    )
    result = cli("memory", "extract", "--transcript", str(transcript), "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["dry_run"] is True and document["written"] == []
    assert document["decisions"][-1] == {
        "step": "write",
        "outcome": "would-create",
        "detail": "new user record",
        "name": "answer-language",
    }
    assert "line 3" in result.stderr
    assert not list((vault.root / "memory").rglob("*.md"))
    assert log_entries(vault) == []
    fake_openai.reply_json(
        {"candidates": [candidate(name="answer-language", type="user", description="Answer in German")]}
    )
    written = json.loads(cli("memory", "extract", "--transcript", str(transcript), "--json").stdout)
    assert written["written"] == ["answer-language"]
    assert cli("memory", "extract", "--transcript", str(tmp_path / "missing.jsonl")).exit_code == 3


def test_parse_transcript_reads_tool_calls() -> None:
    messages, problems = parse_transcript(
        [
            '{"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "memory_update"}}]}',
            "[1, 2]",
        ]
    )
    assert messages == [Message("assistant", "", ("memory_update",))] and len(problems) == 1


@pytest.mark.process
def test_one_unusable_candidate_never_stops_the_run_or_the_log(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    memory.create_auto(
        "report-style", type="feedback", description="Use three sections in every weekly report", body="b"
    )
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(name="new-one", type="user", description="Works from Berlin", body="CET"),
                candidate(description="Use three sections in every weekly report\rplease", body="x"),
                candidate(name="long", type="user", description="x" * 600),
            ]
        }
    )
    result = Extractor(memory).run(talk("I prefer short weekly reports; I work from Berlin.", "ok"))
    assert result.written == ["new-one"]
    assert [d.outcome for d in result.decisions[-3:]] == ["created", "dropped", "dropped"]
    assert log_entries(vault)[-1]["written"] == ["new-one"]


# --- two facts are two records (issue 17) --------------------------------------------------------


def allergy(name: str, description: str, body: str = "") -> dict[str, object]:
    return candidate(type="user", name=name, description=description, body=body or description)


@pytest.mark.process
def test_two_allergies_of_one_reply_are_two_records(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    # The reply: it reported "written": ["peanut-allergy", "peanut-allergy"].
    fake_openai.reply_json(
        {
            "candidates": [
                allergy("peanut-allergy", "User is allergic to peanuts"),
                allergy("peanut-allergy", "User is allergic to shellfish"),
            ]
        }
    )
    result = Extractor(memory).run(talk("I'm allergic to peanuts and to shellfish.", "Noted."))
    assert result.written == ["peanut-allergy", "peanut-allergy-2"]
    assert memory.show("peanut-allergy").description == "User is allergic to peanuts"
    assert memory.show("peanut-allergy-2").description == "User is allergic to shellfish"
    assert "a different fact: peanut vs shellfish" in result.decisions[-1].detail


@pytest.mark.process
def test_a_different_fact_never_overwrites_an_auto_record(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    memory.create_auto("deploys", type="project", description="Deploys to staging on Mondays", body="staging")
    path = vault.root / "memory" / "demo" / "deploys.md"
    before = path.read_bytes()
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(type="project", name="deploys", description="Deploys to production on Fridays")
            ]
        }
    )
    result = Extractor(memory).run(talk("Remember: production deploys happen on Fridays.", "Noted."))
    assert result.written == ["deploys-2"] and result.decisions[-1].outcome == "created"
    assert path.read_bytes() == before


@pytest.mark.process
@pytest.mark.parametrize(
    ("existing", "stated"),
    [
        ("Staging cluster runs Kubernetes 1.27", "Production cluster now runs Kubernetes 1.29"),
        (
            "Rate limit for the billing service is 100 requests per minute",
            "Rate limit for the search service is now 500 requests per minute",
        ),
    ],
)
def test_now_never_makes_another_subject_an_update(
    memory: MemoryService, fake_openai: FakeOpenAI, existing: str, stated: str
) -> None:
    """The issue's runs: "now" made production's version overwrite staging's record."""
    memory.create_auto("fact", type="project", description=existing, body=existing)
    fake_openai.reply_json({"candidates": [candidate(type="project", name="fact", description=stated)]})
    result = Extractor(memory).run(talk(f"FYI: {stated}.", "Noted."))
    assert result.written == ["fact-2"] and result.decisions[-1].outcome == "created"
    assert "is a different fact" in result.decisions[-1].detail
    assert memory.show("fact").description == existing
    assert memory.show("fact-2").description == stated


@pytest.mark.process
def test_the_same_body_under_a_different_fact_is_not_a_no_op(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    memory.create_auto("peanuts", type="user", description="User is allergic to peanuts", body="Confirmed.")
    fake_openai.reply_json(
        {"candidates": [allergy("shellfish", "User is allergic to shellfish", "Confirmed.")]}
    )
    result = Extractor(memory).run(talk("I'm also allergic to shellfish, confirmed.", "Noted."))
    assert result.written == ["shellfish"]


@pytest.mark.process
def test_a_stated_replacement_updates_the_record_and_keeps_what_it_said(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    memory.create_auto("report-due", type="project", description="Weekly report due on Friday", body="Friday")
    before = memory.show("report-due")
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(
                    type="project",
                    name="due",
                    description="Weekly report is now due on Monday",
                    body="Monday",
                )
            ]
        }
    )
    result = Extractor(memory).run(talk("Our weekly report deadline moved to Monday.", "Noted."))
    assert result.written == ["report-due"] and result.decisions[-1].outcome == "updated"
    assert memory.show("report-due").description == "Weekly report is now due on Monday"
    (previous,) = memory.history("report-due")
    assert (previous["description"], previous["body"]) == ("Weekly report due on Friday", "Friday")
    assert (previous["created"], previous["updated"]) == (before.created, before.updated)


@pytest.mark.process
def test_two_values_in_one_reply_are_two_facts(memory: MemoryService, fake_openai: FakeOpenAI) -> None:
    """Across replies "now due on Monday" replaces "due on Friday"; within one reply both stand."""
    fake_openai.reply_json(
        {
            "candidates": [
                candidate(type="project", name="due", description="Weekly report due on Friday"),
                candidate(type="project", name="due", description="Weekly report is now due on Monday"),
            ]
        }
    )
    result = Extractor(memory).run(
        talk("Remember: team A reports are due Friday, team B reports are now due Monday.", "ok")
    )
    assert result.written == ["due", "due-2"]


@pytest.mark.process
def test_the_same_fact_twice_in_one_reply_is_one_record(
    memory: MemoryService, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply_json(
        {
            "candidates": [
                allergy("peanuts", "User is allergic to peanuts", "Peanuts."),
                allergy("nut-allergy", "User has a peanut allergy", "Peanuts, severe."),
            ]
        }
    )
    result = Extractor(memory).run(talk("I have a severe peanut allergy.", "Noted."))
    assert result.written == ["peanuts", "peanuts"]
    assert [item.record.name for item in memory.list_records().records] == ["peanuts"]
    assert memory.show("peanuts").body == "Peanuts, severe."


@pytest.mark.process
def test_a_dry_run_weighs_the_reply_as_a_real_run_would(
    memory: MemoryService, fake_openai: FakeOpenAI, vault: Vault
) -> None:
    fake_openai.reply_json(
        {
            "candidates": [
                allergy("allergy", "User is allergic to peanuts"),
                allergy("allergy", "User is allergic to shellfish"),
                allergy("allergy", "User has a peanut allergy"),
            ]
        }
    )
    result = Extractor(memory).run(talk("I'm allergic to peanuts and shellfish.", "ok"), dry_run=True)
    writes = [(d.outcome, d.name) for d in result.decisions if d.step == "write"]
    assert writes == [("would-create", "allergy"), ("would-create", "allergy-2"), ("would-update", "allergy")]
    assert (
        memory.list_records().records == [] and not (vault.root / "memory" / "demo" / "allergy.md").exists()
    )


@pytest.mark.process
def test_the_similarity_threshold_is_configurable(
    vault: Vault, model_env: dict[str, str], fake_openai
) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text().replace("similarity = 0.6", "similarity = 0.9"))
    memory = Session(Vault.open(vault.root), "demo", environ=model_env).memory
    memory.create_auto("porto", type="user", description="Lives in Porto", body="Porto")
    fake_openai.reply_json({"candidates": [allergy("home", "User lives in Porto, Portugal")]})
    result = Extractor(memory).run(talk("I live in Porto, Portugal.", "ok"))
    assert result.written == ["home"]  # 0.67: an update at 0.6, a new record at 0.9
