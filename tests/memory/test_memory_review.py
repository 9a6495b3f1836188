"""Records that age well, part 3: `memory review` proposes (expired, contradiction, duplicate,
unused), each with a stable id and an action; only a person applies them, by id."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from helpers import record_path
from helpers import write_record_file as write
from memory_review_support import NOW, record

from aibuddy_cli.memory import expiry
from aibuddy_cli.memory.review import find_proposals, merged_body, review
from aibuddy_cli.memory.service import MemoryService
from aibuddy_cli.vault import Vault


@pytest.fixture
def aged(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """A vault a year of use left: one of each kind of proposal, and a record that needs none;
    judged on 2027-06-01."""
    moment = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    monkeypatch.setattr(expiry, "now", lambda: moment)
    records = [
        record("trip", "Trip to Rome", "project", "2027-05-01T10:00:00Z", "Rome.\n", expires="2027-05-15"),
        record("due-fri", "Weekly report due Friday", "project", "2027-05-01T10:00:00Z", "Friday.\n"),
        record(
            "due-mon",
            "Weekly report due Monday",
            "project",
            "2027-05-20T10:00:00Z",
            "Monday.\n",
            provenance="auto",
        ),
        record("tea", "Drinks green tea", "user", "2027-05-02T10:00:00Z", "Sencha.\n"),
        record(
            "tea-auto",
            "Drinks green tea every morning",
            "user",
            "2027-05-25T10:00:00Z",
            "Every morning, no sugar.\n",
            provenance="auto",
        ),
        record(
            "stamps",
            "Collects stamps",
            "user",
            "2026-01-01T10:00:00Z",
            "Since school.\n",
            recallCount=2,
            lastRecalledAt="2026-02-01T10:00:00Z",
        ),
        record("wiki", "Team wiki at wiki.example.org", "reference", "2027-05-30T10:00:00Z"),
    ]
    for text in records:
        write(vault, text.split("\n")[1].removeprefix("name: "), text)
    return vault


def summary(
    memory: MemoryService, unused_days: int = 180
) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    return [(p.kind, p.action, p.records, p.keep) for p in find_proposals(memory, unused_days)[0]]


def test_each_kind_is_proposed_with_its_action(aged: Vault, memory: MemoryService) -> None:
    assert summary(memory) == [
        ("expired", "delete", ("trip",), None),
        ("contradiction", "keep-one", ("due-mon", "due-fri"), "due-mon"),
        ("duplicate", "merge", ("tea", "tea-auto"), "tea"),
        ("unused", "archive", ("stamps",), None),
    ]
    proposals = find_proposals(memory)[0]
    assert [p.id[:4] for p in proposals] == ["exp-", "con-", "dup-", "old-"]
    reasons = [p.reason for p in proposals]
    assert "friday vs monday" in reasons[1] and "updated 2027-05-20T10:00:00Z" in reasons[1]
    assert "written by a person" in reasons[2]
    assert "last 2026-02-01, recalled 2 time(s)" in reasons[3]
    assert summary(memory, unused_days=600) == summary(memory)[:3]


def test_ids_are_stable_and_change_when_a_record_does(aged: Vault, memory: MemoryService) -> None:
    first = [p.id for p in find_proposals(memory)[0]]
    assert [p.id for p in find_proposals(memory)[0]] == first
    memory.recall("green tea")  # telemetry changes no id
    assert [p.id for p in find_proposals(memory)[0]] == first
    memory.update("due-fri", description="Weekly report due on Friday")
    again = [p.id for p in find_proposals(memory)[0]]
    assert again[0] == first[0] and again[1] != first[1] and again[2:] == first[2:]


def test_without_a_person_nothing_is_applied(aged: Vault, cli) -> None:
    before = {path.name: path.read_bytes() for path in record_path(aged, "tea").parent.glob("*.md")}
    listed = cli("memory", "review", "--yes")  # --yes alone applies nothing: there is no "apply all"
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert [line.split("\t")[1:3] for line in lines] == [
        ["expired", "delete"],
        ["contradiction", "keep-one"],
        ["duplicate", "merge"],
        ["unused", "archive"],
    ]
    assert "4 proposal(s), none applied; apply one with aibuddy memory review --apply ID" in listed.stderr
    first = lines[0].split("\t")[0]
    refused = cli("memory", "review", "--apply", first)  # no terminal, no --yes
    assert refused.exit_code == 2
    assert "refusing to apply review proposals without --yes when stdin is not a terminal" in refused.stderr
    unknown = cli("memory", "review", "--apply", first, "--apply", "dup-00000000", "--yes")
    assert unknown.exit_code == 3 and "no proposal dup-00000000 in this review" in unknown.stderr
    assert {path.name: path.read_bytes() for path in record_path(aged, "tea").parent.glob("*.md")} == before


def test_a_script_applies_proposals_by_id(aged: Vault, cli, memory: MemoryService) -> None:
    ids = [p.id for p in find_proposals(memory)[0]]
    result = cli("memory", "review", "--apply", f"{ids[0]},{ids[1]}", "--apply", ids[2], "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [(a["id"], a["outcome"], a["detail"]) for a in document["applied"]] == [
        (ids[0], "applied", "deleted trip"),
        (ids[1], "applied", "kept due-mon, deleted due-fri"),
        (ids[2], "applied", "merged tea-auto into tea (its body added)"),
    ]
    assert [p["id"] for p in document["proposals"]] == [ids[3]]  # what is left
    names = sorted(item.record.name for item in memory.list_records().records)
    assert names == ["due-mon", "stamps", "tea", "wiki"]
    tea = memory.show("tea")
    assert tea.body == "Sencha.\n\nEvery morning, no sugar.\n" and tea.provenance == "manual"
    assert tea.description == "Drinks green tea"


def test_on_a_terminal_the_person_is_asked(aged: Vault, cli, memory: MemoryService, monkeypatch) -> None:
    monkeypatch.setattr("aibuddy_cli.cli.context.stdin_is_terminal", lambda: True)
    expired = find_proposals(memory)[0][0]
    declined = cli("memory", "review", "--apply", expired.id, input="n\n")
    assert f"  {expired.id}: delete trip\nApply this proposal? [y/N]" in declined.stderr
    assert declined.exit_code != 0 and record_path(aged, "trip").exists()
    accepted = cli("memory", "review", "--apply", expired.id, input="y\n")
    assert accepted.exit_code == 0, accepted.stderr
    assert f"applied\t{expired.id}\tdeleted trip" in accepted.stdout.splitlines()
    assert not record_path(aged, "trip").exists()


def test_archiving_an_unused_record_takes_it_out_of_recall_and_review_then_proposes_it_expired(
    aged: Vault, memory: MemoryService
) -> None:
    unused = find_proposals(memory)[0][3]
    done = review(memory, 180, [unused.id])
    assert [(a.outcome, a.detail) for a in done.applied] == [("applied", "archived stamps")]
    assert memory.show("stamps").expires == "2027-06-01"
    assert memory.recall("collects stamps").records == []
    assert [item.record.name for item in memory.list_records(expired=True).records] == ["stamps", "trip"]
    assert ("expired", "delete", ("stamps",), None) in summary(memory)
    assert memory.update("stamps", expires="never").record.expires is None  # back in recall
    assert [r.name for r in memory.recall("collects stamps").records] == ["stamps"]


def test_a_proposal_whose_records_an_earlier_one_changed_is_skipped(
    aged: Vault, memory: MemoryService
) -> None:
    # tea-auto is also unused for a short threshold; merging it first leaves the archive nothing.
    proposals = find_proposals(memory, unused_days=5)[0]
    merge = next(p for p in proposals if p.kind == "duplicate")
    archive = next(p for p in proposals if p.kind == "unused" and p.records == ("tea-auto",))
    done = review(memory, 5, [merge.id, archive.id, merge.id])
    assert [(a.id, a.outcome) for a in done.applied] == [(merge.id, "applied"), (archive.id, "skipped")]
    assert "tea-auto is gone" in done.applied[1].detail


def test_other_options_make_other_proposals(aged: Vault, cli, memory: MemoryService) -> None:
    archive = next(p for p in find_proposals(memory, unused_days=5)[0] if p.records == ("tea-auto",))
    result = cli("memory", "review", "--apply", archive.id, "--yes")
    assert result.exit_code == 3 and "(give the same --unused-days)" in result.stderr
    assert cli("memory", "review", "--unused-days", "5", "--apply", archive.id, "--yes").exit_code == 0
    assert memory.show("tea-auto").expires == "2027-06-01"


def test_a_merge_adds_only_what_the_kept_record_does_not_say() -> None:
    assert merged_body("Sencha.\n", "Sencha.") == "Sencha.\n"
    assert merged_body("Sencha,  no sugar.\n", "no sugar.") == "Sencha,  no sugar.\n"
    assert merged_body("", "Matcha.\n") == "Matcha.\n"
    assert merged_body("Sencha.\n\n", "Matcha.\n") == "Sencha.\n\nMatcha.\n"


@pytest.mark.parametrize(
    "first, second, kind",
    [
        ("User lives in Berlin", "User lives in Paris", "contradiction"),
        ("Dentist appointment on 3 March", "Dentist appointment on 5 March", "contradiction"),
        ("User is vegetarian", "User is not vegetarian", "contradiction"),
        ("User is allergic to peanuts", "User is allergic to shellfish", None),
        ("Drinks green tea", "Likes green tea", None),
        ("Deploys to staging on Mondays", "Deploys to production on Mondays", None),
        ("Prefers short answers", "Prefers concise answers", "duplicate"),
        ("Prefers concise weekly reports", "Prefers concise reports every week", "duplicate"),
        # two places differ, so one of them is what the fact is about: two flats, two clusters
        ("Rent for the flat in Porto is 900 euros", "Rent for the flat in Lisbon is 1200 euros", None),
        ("Staging cluster runs Kubernetes 1.27", "Production cluster now runs Kubernetes 1.29", None),
        ("Staging cluster runs Kubernetes 1.27", "Staging cluster runs Kubernetes 1.29", "contradiction"),
    ],
)
def test_what_counts_as_a_contradiction_or_a_duplicate(
    memory: MemoryService, first: str, second: str, kind: str | None
) -> None:
    memory.save("a", type="user", description=first, body="")
    memory.save("b", type="user", description=second, body="")
    assert [p.kind for p in find_proposals(memory)[0]] == ([kind] if kind else [])


def test_records_of_different_types_are_never_paired(memory: MemoryService) -> None:
    memory.save("a", type="user", description="Weekly report due Friday", body="")
    memory.save("b", type="project", description="Weekly report due Monday", body="")
    assert find_proposals(memory)[0] == []


def test_a_record_is_in_one_pair_at_most_the_closest_first(memory: MemoryService, vault: Vault) -> None:
    write(vault, "a", record("a", "Weekly report due Friday", "project", "2027-05-20T10:00:00Z"))
    write(vault, "b", record("b", "Weekly report due Friday afternoon", "project", "2027-05-01T10:00:00Z"))
    write(vault, "c", record("c", "Weekly report due Monday", "project", "2027-05-10T10:00:00Z"))
    # a~b is a duplicate (0.80), a~c a contradiction (0.75): the closest pair alone.
    (first,) = find_proposals(memory, unused_days=100_000)[0]
    assert (first.kind, first.records) == ("duplicate", ("a", "b"))  # a used more recently
    review(memory, 100_000, [first.id])
    (then,) = find_proposals(memory, unused_days=100_000)[0]
    assert (then.kind, then.records) == ("contradiction", ("a", "c"))


def test_a_record_with_an_expiry_to_come_is_never_proposed_as_unused(
    memory: MemoryService, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    moment = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    monkeypatch.setattr(expiry, "now", lambda: moment)
    write(vault, "visa", record("visa", "Visa valid", "user", "2026-01-01T10:00:00Z", expires="2028-01-01"))
    write(vault, "old", record("old", "Old note", "user", "2026-01-01T10:00:00Z"))
    assert summary(memory) == [("unused", "archive", ("old",), None)]
