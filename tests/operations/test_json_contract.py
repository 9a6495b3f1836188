"""The JSON contract: the keys of every `--json` answer, pinned (after pipx's result contract test).

Each command runs in-process on one stocked vault; the shape of its document (the keys of every
object, the shape of a list's first item) must equal the pinned one. A renamed or dropped key is
a broken script somewhere: change a shape here only on purpose.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from helpers import run_aibuddy

from aibuddy_cli.jsonvalues import to_json
from aibuddy_cli.operations.registry import REGISTRY, Operation, load, operations
from aibuddy_cli.operations.schemas import output_schema

GUIDE = "# Deploy guide\n\n## Rollback\n\nRun `deployctl rollback --to previous`.\n"
TRANSCRIPT = [
    {"role": "user", "content": "From now on, always answer in French."},
    {"role": "assistant", "content": "D'accord."},
]


ADA = '{"name": "Ada", "age": 36, "city": "London"}'
ALAN = '{"name": "Alan", "age": 41, "city": "London"}'


def shape(value: Any) -> Any:
    """Keys of objects at every depth; lists by their first item; scalars as '*'."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return "*"


def stock(cli, vault, tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(GUIDE)
    assert (
        cli(
            "memory", "save", "tea", "--type", "user", "--description", "Drinks green tea", "--body", "b"
        ).exit_code
        == 0
    )
    assert cli("kb", "import", str(guide), "--scope", "system").exit_code == 0
    assert cli("kb", "publish", "guide").exit_code == 0
    assert cli("task", "new", "Roll back the deploy").exit_code == 0
    assert cli("task", "attach", "t1", "guide").exit_code == 0
    assert cli("task", "add-message", "t1", "How do I roll back?", "--role", "user").exit_code == 0


# (name, argv, expected exit code); run in this order on one vault.
CASES: list[tuple[str, list[str], int]] = [
    ("memory save", ["memory", "save", "style", "--type", "feedback", "--description", "Short answers"], 0),
    ("memory update", ["memory", "update", "style", "--body", "Two lines at most."], 0),
    ("memory show", ["memory", "show", "tea"], 0),
    ("memory list", ["memory", "list"], 0),
    ("memory manifest", ["memory", "manifest"], 0),
    ("memory recall", ["memory", "recall", "green tea"], 0),
    ("memory extract", ["memory", "extract", "--transcript", "TRANSCRIPT", "--dry-run"], 0),
    ("memory export", ["memory", "export", "--output", "EXPORT"], 0),
    ("memory export to stdout", ["memory", "export"], 0),
    ("import jsonl", ["import", "jsonl", "EXPORT"], 0),
    ("import claude-code-memory", ["import", "claude-code-memory", "AUTO_MEMORY", "--dry-run"], 0),
    ("import mem0", ["import", "mem0", "MEM0", "--dry-run"], 0),
    ("memory delete", ["memory", "delete", "style"], 0),
    ("kb import", ["kb", "import", "NOTES", "--scope", "personal"], 0),
    ("kb list", ["kb", "list", "--status", "all"], 0),
    ("kb show", ["kb", "show", "guide"], 0),
    ("kb outline", ["kb", "outline", "guide"], 0),
    ("kb reingest", ["kb", "reingest", "notes", "NOTES2"], 0),
    ("kb edit", ["kb", "edit", "notes"], 0),
    ("kb publish", ["kb", "publish", "notes"], 0),
    ("kb summarize", ["kb", "summarize", "guide"], 0),
    ("kb map", ["kb", "map", "--task", "t1"], 0),
    ("kb search", ["kb", "search", "roll back", "--task", "t1"], 0),
    ("kb read", ["kb", "read", "guide#rollback", "--task", "t1"], 0),
    ("kb ask", ["kb", "ask", "How do I roll back?", "--task", "t1"], 0),
    ("task new", ["task", "new", "Second task"], 0),
    ("task list", ["task", "list"], 0),
    ("task show", ["task", "show", "t1"], 0),
    ("task plan", ["task", "plan", "t1", "Find the runbook, then roll back"], 0),
    ("task status", ["task", "status", "t1", "blocked"], 0),
    ("task attach", ["task", "attach", "t2", "guide"], 0),
    ("task detach", ["task", "detach", "t2", "guide"], 0),
    ("task add-message", ["task", "add-message", "t1", "Thanks", "--role", "assistant"], 0),
    ("task import", ["task", "import", "t2", "--transcript", "TRANSCRIPT"], 0),
    ("task context", ["task", "context", "t1"], 0),
    ("task consolidate", ["task", "consolidate", "t1", "--dry-run"], 0),
    ("task end", ["task", "end", "t1"], 0),
    ("kb reject", ["kb", "reject", "draft"], 0),
    (
        "memory save kept",
        ["memory", "save", "wifi", "--type", "user", "--description", "Wifi", "--body", "password: hunter22"],
        0,
    ),
    ("token create", ["token", "create", "--name", "laptop"], 0),
    ("token list", ["token", "list"], 0),
    ("token revoke", ["token", "revoke", "laptop"], 0),
    ("token revoke again", ["token", "revoke", "laptop"], 3),
    ("scan", ["scan"], 4),
    ("doctor", ["doctor"], 0),
    (
        "memory save expiring",
        ["memory", "save", "trip", "-t", "project", "-d", "Trip to Rome", "--expires", "2020-01-01"],
        0,
    ),
    ("memory list expired", ["memory", "list", "--expired"], 0),
    ("memory review", ["memory", "review"], 0),
    ("memory clear", ["memory", "clear", "--yes"], 0),
    ("table create", ["table", "create", "people", "-d", "People", "-c", "name:str", "-c", "age:int"], 0),
    ("table add", ["table", "add", "people", "--row", ADA, "--row", ALAN], 0),
    ("table list", ["table", "list"], 0),
    ("table show", ["table", "show", "people"], 0),
    ("table filter", ["table", "filter", "people", "--where", "age > 30"], 0),
    ("table create cities", ["table", "create", "cities", "-c", "city:str"], 0),
    ("table filter every table", ["table", "filter", "--where", "age > 30"], 0),  # cities is skipped
    ("table reduce", ["table", "reduce", "people", "-m", "mean", "-c", "age", "-g", "city"], 0),
    ("table search", ["table", "search", "Ada"], 0),
    ("table join", ["table", "join", "people", "people", "--on", "left.city == right.city"], 0),
    (
        "table update-rows",
        ["table", "update-rows", "people", "--where", "age > 40", "--set", '{"city": "Oxford"}'],
        0,
    ),
    ("table column add", ["table", "column", "add", "people", "email", "str"], 0),
    ("table column derive", ["table", "column", "derive", "people", "decade", "age // 10"], 0),
    ("table column rename", ["table", "column", "rename", "people", "decade", "age_decade"], 0),
    ("table column transform", ["table", "column", "transform", "people", "age_decade", "--type", "str"], 0),
    ("table column delete", ["table", "column", "delete", "people", "email", "--yes"], 0),
    ("table ask", ["table", "ask", "Ada"], 0),
    ("table update", ["table", "update", "Ada moved to Paris"], 7),
    ("table update dry run", ["table", "update", "Ada moved to Paris", "--dry-run"], 0),  # with a model
    ("table rename", ["table", "rename", "people", "contacts"], 0),
    ("table delete-rows", ["table", "delete-rows", "contacts", "--where", "age > 40", "--yes"], 0),
    ("table delete", ["table", "delete", "contacts", "--yes"], 0),
    ("table undo", ["table", "undo", "--yes"], 3),
    ("error", ["memory", "show", "missing"], 3),
]


@pytest.mark.process
def test_every_json_answer_keeps_its_keys(
    cli, vault, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.url)
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c pass")  # an edit that changes nothing
    stock(cli, vault, tmp_path)
    files = {
        "TRANSCRIPT": tmp_path / "transcript.jsonl",
        "NOTES": tmp_path / "notes.md",
        "NOTES2": tmp_path / "notes-v2.md",
        "DRAFT": tmp_path / "draft.md",
        "AUTO_MEMORY": Path(__file__).parents[1] / "fixtures" / "claude-code-memory",
        "MEM0": Path(__file__).parents[1] / "fixtures" / "mem0-export.json",
        "EXPORT": tmp_path / "export.jsonl",
    }
    files["TRANSCRIPT"].write_text("".join(json.dumps(m) + "\n" for m in TRANSCRIPT))
    files["NOTES"].write_text("# Notes\n\n## On call\n\nPage the lead.\n")
    files["NOTES2"].write_text("# Notes\n\n## On call\n\nPage the lead, then the manager.\n")
    files["DRAFT"].write_text("# Draft\n\nNot ready.\n")
    assert cli("kb", "import", str(files["DRAFT"]), "--scope", "system").exit_code == 0
    summary = "How to roll back a deploy."
    shapes = {}
    for name, argv, code in CASES:
        if name == "kb summarize":
            monkeypatch.setenv("AIBUDDY_MODEL_SUMMARY", "openai/summary-test")
            monkeypatch.setenv("AIBUDDY_TIMEOUT", "30")
            fake_openai.enqueue(content=summary)
        if name == "table update dry run":
            monkeypatch.setenv("AIBUDDY_MODEL_TABLES", "openai/tables-test")
            monkeypatch.setenv("AIBUDDY_TIMEOUT", "30")
            script_table_update(fake_openai)
        args = [str(files[a]) if a in files else a for a in argv]
        result = cli(*args, "--json")
        monkeypatch.delenv("AIBUDDY_MODEL_SUMMARY", raising=False)
        monkeypatch.delenv("AIBUDDY_MODEL_TABLES", raising=False)
        assert result.exit_code == code, (name, result.stdout, result.stderr)
        document = json.loads(result.stdout)
        shapes[name] = shape(document)
        op = operation_of(argv)
        if op is not None and code == 0:  # an error is the error document, not the result
            problems = schema_problems(document, output_schema(op))
            assert not problems, (name, problems)
    for name, _, _ in CASES:  # (as text: the keys' order is pinned too, as a script's diff sees it)
        assert json.dumps(shapes[name]) == json.dumps(PINNED[name]), name


def script_table_update(fake: FakeOpenAI) -> None:
    """The model's side of a `table update` of Ada's city: it asks (its ask filters), then updates."""
    fake.call_tools(("ask", {"question": "Where is Ada?"}))
    fake.call_tools(("filter", {"tables": ["people"], "filter": 'name == "Ada"'}))
    fake.enqueue(content="Ada lives in London.")
    ada = {"table": "people", "filter": 'name == "Ada"', "values": {"city": "Paris"}}
    fake.call_tools(("update_rows", ada))
    fake.enqueue(content="Ada moved to Paris.")


# The progress events of a natural-language table run (`--json`: JSON lines on stderr), by event.
PINNED_EVENTS: dict[str, Any] = {
    "run": {"event": "*", "loop": "*", "run": "*", "continues": "*", "max_steps": "*", "document": "*"},
    "step": {"event": "*", "loop": "*", "depth": "*", "step": "*", "calls": ["*"]},
    "tool": {
        "event": "*",
        "loop": "*",
        "depth": "*",
        "step": "*",
        "tool": "*",
        "arguments": {"tables": ["*"], "filter": "*"},  # the first: the ask tool's filter
        "ok": "*",
        "error": "*",
        "applied": "*",
    },
    "interrupted": {"event": "*", "loop": "*", "run": "*", "applied": "*"},
}


@pytest.mark.process
def test_a_table_run_reports_its_steps_in_their_pinned_shapes(
    cli, vault, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aibuddy_cli.tables.runs import RunEvent

    for name, value in (
        ("OPENAI_API_KEY", "sk-test"),
        ("OPENAI_API_BASE", fake_openai.url),
        ("AIBUDDY_MODEL_TABLES", "openai/tables-test"),
        ("AIBUDDY_TIMEOUT", "30"),
    ):
        monkeypatch.setenv(name, value)
    assert cli("table", "create", "people", "-c", "name:str", "-c", "city:str").exit_code == 0
    assert cli("table", "add", "people", "--row", ADA).exit_code == 0
    script_table_update(fake_openai)
    result = cli("table", "update", "Ada moved to Paris", "--json")
    assert result.exit_code == 0, result.stderr
    seen: dict[str, Any] = {}
    for line in result.stderr.splitlines():
        event = json.loads(line)
        seen.setdefault(event["event"], shape(event))  # the first of each kind
    interrupted: RunEvent = {"event": "interrupted", "loop": "update", "run": "r", "applied": 0}
    seen["interrupted"] = shape(interrupted)  # (tests/operations/test_table_runs.py stops runs with Ctrl-C)
    assert seen == PINNED_EVENTS


@pytest.mark.process
def test_a_usage_error_is_the_same_error_document(vault, aibuddy_exe: list[str]) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(vault.root.parent), "AIBUDDY_VAULT": str(vault.root)}
    result = run_aibuddy(aibuddy_exe, "memory", "show", "--json", env=env)
    assert result.returncode == 2
    assert shape(json.loads(result.stdout)) == PINNED["error"]



# --- the output schemas (operations/schemas.py, by pydantic) are true of the documents printed ---


def operation_of(argv: list[str]) -> Operation | None:
    """The registry operation a case's command runs: the longest run of its first words that
    names one (`table column add …` -> "table column add"); None for other commands."""
    load()
    for end in range(len(argv), 0, -1):
        if " ".join(argv[:end]) in REGISTRY:
            return REGISTRY[" ".join(argv[:end])]
    return None


def schema_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """What in value the schema does not allow (empty: valid), by jsonschema; an object may hold
    only the keys its schema declares (a key printed but not declared: a schema that says too little)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_closed(schema))
    return [
        "$" + "".join(f"[{step!r}]" for step in error.absolute_path) + f": {error.message}"
        for error in validator.iter_errors(value)
    ]


def _closed(schema: Any) -> Any:
    """schema with `additionalProperties: false` in each object schema that lists its properties."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: _closed(item) for key, item in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        closed["additionalProperties"] = False
    return closed


def test_the_validator_refuses_what_a_schema_does_not_allow() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["n"],
    }
    assert schema_problems({"n": 1, "tags": ["a"]}, schema) == []
    assert schema_problems({"tags": []}, schema) == ["$: 'n' is a required property"]
    assert schema_problems({"n": True}, schema) == ["$['n']: True is not of type 'integer'"]
    extra = "$: Additional properties are not allowed ('x' was unexpected)"
    assert schema_problems({"n": 1, "x": 2}, schema) == [extra]
    assert schema_problems({"n": 1, "tags": [3]}, schema) == ["$['tags'][0]: 3 is not of type 'string'"]
    assert schema_problems(None, {"anyOf": [schema, {"type": "null"}]}) == []
    assert schema_problems({"n": 1, "any": {"k": 1}}, {"type": "object"}) == []


def _described(schema: dict[str, Any]) -> bool:
    """An object schema with its properties, or an anyOf of such (null allowed beside them)."""
    if "anyOf" in schema:
        options = [option for option in schema["anyOf"] if option != {"type": "null"}]
        return bool(options) and all(_described(option) for option in options)
    return schema.get("type") == "object" and bool(schema.get("properties"))


# Operations whose result cannot be described, with why: none.
UNDESCRIBED: dict[str, str] = {}


def test_every_operation_has_a_described_output_schema() -> None:
    found = {op.name for op in operations() if not _described(output_schema(op))}
    assert found == set(UNDESCRIBED), sorted(found)


# The operations no case runs (they need a model loop, git, or a second table), with results of
# their own types built here instead: their documents are checked against their schemas too.
NOT_RUN = {
    "memory pending",  # proposals come from automatic memory with `[extraction] review = true`
    "memory accept",
    "memory reject",
    "table runs",  # a run needs a model (the table loops' tests make them)
    "memory history",
    "memory revert",
    "table column copy",
    "table column move",
    "table column vectorize",
    "table refactor",
    "table search-join",
    "table undo",
}


def test_the_cases_run_every_operation_but_those_not_run() -> None:
    covered = {op.name for _, argv, code in CASES if code == 0 and (op := operation_of(argv)) is not None}
    assert {op.name for op in operations()} - covered == NOT_RUN


def test_the_results_no_case_runs_match_their_schemas() -> None:
    from aibuddy_cli.memory import pending
    from aibuddy_cli.memory.records import MemoryRecord
    from aibuddy_cli.memory.review import Applied, Proposal, Review
    from aibuddy_cli.memory.service import Reverted
    from aibuddy_cli.memory.versions import CommitJson, RecordVersions
    from aibuddy_cli.operations.loops.tables import TableRun
    from aibuddy_cli.tables.changes import Change, Changes
    from aibuddy_cli.tables.undo import Run, RunList, Undone

    commit: CommitJson = {
        "commit": "c",
        "date": "2026-01-01",
        "subject": "s",
        "type": None,
        "description": None,
        "body": None,
    }
    copied = Change("copy_column", "people", {"column": "city", "to_table": "cities", "matched": 2})
    deleted = Change("delete_column", "people", {"column": "city", "type": "str"})
    documents = {
        "memory history": RecordVersions("memory/u/tea.md", True, [commit], [{"body": "b"}]),
        "memory revert": Reverted("memory/u/tea.md", True, 1, MemoryRecord("tea", "Tea", "user", "b")),
        "memory review": Review(
            "u",
            180,
            [Applied("dup-1", "merge", "applied", "merged b into a")],
            [Proposal("exp-2", "expired", "delete", ("trip",), None, "expired 2020-01-01")],
            [],
        ),
        "table column copy": Changes([copied]),
        "table column move": Changes([copied, deleted]),
        "table column vectorize": Change("vectorize_column", "people", {"column": "bio", "values": 3}),
        "table update": TableRun(
            "update",
            "Ada moved",
            "r1",
            False,
            "done",
            [
                {"tool": "update_rows", "arguments": {"table": "people"}, "applied": True, "result": {}},
                {"tool": "add_rows", "arguments": {}, "applied": False},
                {"tool": "add_rows", "arguments": {"table": "x"}, "applied": False, "error": "no table 'x'"},
            ],
        ),
        "table undo": Undone("r1", ["tables/u/people.csv"]),
        "memory pending": pending.PendingList(
            "u",
            [
                pending.Proposal("a1", "create", "tea", "user", "Tea", "b", "2026-01-01T00:00:00Z"),
                pending.Proposal("a2", "update", "vim", "feedback", "Vim", "c", "2026-01-01T00:00:00Z",
                                 "similar to vim (0.80)", "2025-12-01T00:00:00Z", "Vim", "b"),  # fmt: skip
            ],
        ),
        "memory accept": pending.Accepted("a1", "create", False, MemoryRecord("tea", "Tea", "user", "b")),
        "memory reject": pending.Rejected("a2", "vim"),
        "table runs": RunList("u", [Run("r1", "update", "2026-01-01T00:00:00Z", ["people"], 2, False, True)]),
    }
    for name, result in documents.items():
        problems = schema_problems(to_json(result), output_schema(REGISTRY[name]))
        assert not problems, (name, problems)


# A task as task list, show, plan and status answer it (show adds its consolidation).
TASK: dict[str, Any] = {
    "id": "*",
    "goal": "*",
    "created": "*",
    "status": "*",
    "attached": ["*"],
    "plan": "*",
    "recalled": {},
    "messages": "*",
    "in_use": ["*"],
}
PINNED: dict[str, Any] = {
    "memory save": {
        "path": "*",
        "changed": "*",
        "record": {
            "name": "*",
            "description": "*",
            "type": "*",
            "provenance": "*",
            "created": "*",
            "updated": "*",
            "recallCount": "*",
            "lastRecalledAt": "*",
            "body": "*",
        },
    },
    "memory update": {
        "path": "*",
        "changed": "*",
        "record": {
            "name": "*",
            "description": "*",
            "type": "*",
            "provenance": "*",
            "created": "*",
            "updated": "*",
            "recallCount": "*",
            "lastRecalledAt": "*",
            "body": "*",
        },
    },
    "memory show": {
        "name": "*",
        "description": "*",
        "type": "*",
        "provenance": "*",
        "created": "*",
        "updated": "*",
        "recallCount": "*",
        "lastRecalledAt": "*",
        "body": "*",
        "history": [],
    },
    "memory list": {
        "user": "*",
        "records": [
            {
                "name": "*",
                "description": "*",
                "type": "*",
                "provenance": "*",
                "created": "*",
                "updated": "*",
                "recallCount": "*",
                "lastRecalledAt": "*",
            }
        ],
        "problems": [],
    },
    "memory manifest": {
        "user": "*",
        "query": "*",
        "window": "*",
        "lines": [{"type": "*", "filename": "*", "modified": "*", "description": "*", "matched": "*"}],
        "problems": [],
    },
    "memory recall": {
        "user": "*",
        "query": "*",
        "method": "*",
        "records": [
            {
                "name": "*",
                "description": "*",
                "type": "*",
                "provenance": "*",
                "created": "*",
                "updated": "*",
                "recallCount": "*",
                "lastRecalledAt": "*",
                "body": "*",
            }
        ],
        "dropped": [],
        "warnings": [],
        "problems": [],
    },
    "memory extract": {
        "cues": ["*"],
        "dry_run": "*",
        "written": [],
        "decisions": [{"step": "*", "outcome": "*", "detail": "*"}],
    },
    "memory delete": {"path": "*", "deleted": "*"},
    "kb import": {
        "files": [{"source": "*", "status": "*", "doc": "*", "message": "*"}],
        "imported": "*",
        "duplicate": "*",
        "skipped": "*",
        "failed": "*",
    },
    "kb list": {
        "user": "*",
        "documents": [
            {
                "doc": "*",
                "title": "*",
                "scope": "*",
                "owner": "*",
                "status": "*",
                "sections": "*",
                "summary": "*",
            }
        ],
    },
    "kb show": {
        "doc": "*",
        "status": "*",
        "title": "*",
        "owner": "*",
        "scope": "*",
        "sha256": "*",
        "imported_at": "*",
        "source": "*",
        "outline": [{"level": "*", "title": "*", "anchor": "*", "start": "*", "end": "*", "size": "*"}],
        "summary": "*",
        "summary_sha256": "*",
        "reviewed_by": "*",
        "reviewed_at": "*",
    },
    "kb outline": {
        "doc": "*",
        "title": "*",
        "outline": [{"level": "*", "title": "*", "anchor": "*", "start": "*", "end": "*", "size": "*"}],
    },
    "kb reingest": {"doc": "*", "status": "*", "changed": "*"},
    "kb edit": {"doc": "*", "status": "*", "changed": "*"},
    "kb publish": {"published": ["*"]},
    "kb summarize": {"results": [{"doc": "*", "summarized": "*", "summary": "*"}]},
    "kb map": {
        "task": "*",
        "documents": [{"doc": "*", "title": "*", "scope": "*", "summary": "*", "sections": "*"}],
        "unavailable": [],
    },
    "kb search": {"query": "*", "task": "*", "hits": []},
    "kb read": {
        "doc": "*",
        "title": "*",
        "anchor": "*",
        "section": "*",
        "path": ["*"],
        "lines": ["*"],
        "offset": "*",
        "text": "*",
        "next_cursor": "*",
        "children": [],
    },
    "kb ask": {
        "method": "*", "answer": "*", "citations": [], "gaps": ["*"], "dropped_citations": [],
        "unsupported": [],
    },  # fmt: skip
    "task new": {
        "id": "*",
        "goal": "*",
        "created": "*",
        "status": "*",
        "attached": [],
        "plan": "*",
        "recalled": {},
        "messages": "*",
        "in_use": "*",
    },
    "task list": {"tasks": [TASK]},
    "task show": {
        **TASK,
        "consolidation": {"through": "*", "pending": "*", "running": "*", "summary": "*", "ahead": {}},
    },
    "task plan": TASK,
    "task status": TASK,
    "task attach": {
        "id": "*",
        "goal": "*",
        "created": "*",
        "status": "*",
        "attached": ["*"],
        "plan": "*",
        "recalled": {},
        "messages": "*",
        "in_use": "*",
    },
    "task detach": {
        "id": "*",
        "goal": "*",
        "created": "*",
        "status": "*",
        "attached": [],
        "plan": "*",
        "recalled": {},
        "messages": "*",
        "in_use": "*",
    },
    "task add-message": {"n": "*", "role": "*", "content": "*", "at": "*", "attached": ["*"]},
    "task context": {
        "task": "*",
        "goal": "*",
        "plan": "*",
        "status": "*",
        "summary": "*",
        "messages": [{"n": "*", "role": "*", "content": "*", "at": "*", "attached": ["*"]}],
        "memories": {"method": "*", "records": [], "already_in_context": {"count": "*", "records": []}},
        "documents": [{"doc": "*", "title": "*", "scope": "*", "summary": "*", "sections": "*"}],
        "unavailable_documents": [],
        "estimated_tokens": "*",
        "consolidation": {"through": "*", "summary": "*"},
    },
    "task end": {
        "task": {
            "id": "*",
            "goal": "*",
            "created": "*",
            "status": "*",
            "attached": ["*"],
            "plan": "*",
            "recalled": {},
            "messages": "*",
            "in_use": ["*"],
        },
        "extraction": {
            "cues": [],
            "dry_run": "*",
            "written": [],
            "decisions": [{"step": "*", "outcome": "*", "detail": "*"}],
        },
        "extraction_mode": "*",
    },
    "task consolidate": {
        "task": "*",
        "dry_run": "*",
        "reason": "*",
        "passes": [],
        "status": {"through": "*", "pending": "*", "running": "*", "summary": "*", "ahead": {}},
    },
    "kb reject": {"rejected": ["*"]},
    "memory export": {"user": "*", "format": "*", "output": "*", "records": "*"},
    "memory export to stdout": {
        "user": "*",
        "format": "*",
        "output": "*",
        "records": "*",
        "exported": [
            {
                "name": "*",
                "type": "*",
                "description": "*",
                "body": "*",
                "provenance": "*",
                "created": "*",
                "updated": "*",
                "recallCount": "*",
                "lastRecalledAt": "*",
                "text": "*",
            }
        ],
    },
    "import jsonl": {
        "source": "*",
        "format": "*",
        "dry_run": "*",
        "decisions": [{"step": "*", "outcome": "*", "detail": "*", "name": "*"}],
        "written": [],
    },
    "import claude-code-memory": {
        "source": "*",
        "format": "*",
        "dry_run": "*",
        "decisions": [{"step": "*", "outcome": "*", "detail": "*", "name": "*"}],
        "written": [],
    },
    "import mem0": {
        "source": "*",
        "format": "*",
        "dry_run": "*",
        "decisions": [{"step": "*", "outcome": "*", "detail": "*", "name": "*"}],
        "written": [],
    },
    "task import": {
        "task": "*",
        "added": "*",
        "already": "*",
        "turns": "*",
        "shapes": {"openai": "*"},
        "ignored": "*",
        "skipped": "*",
        "problems": [],
    },
    "token create": {"name": "*", "user": "*", "created": "*", "token": "*"},
    "token list": {"tokens": [{"name": "*", "user": "*", "created": "*"}]},
    "token revoke": {"name": "*", "user": "*", "revoked": "*"},
    "token revoke again": {"error": {"code": "*", "message": "*"}},
    "scan": {"findings": [{"path": "*", "line": "*", "kind": "*", "hint": "*"}], "scanned": "*"},
    "doctor": {
        "vault": "*",
        "user": "*",
        "team_vault": "*",
        "personal_vault": "*",
        "gitignore_missing": [],
        "personal_files": {},
        "tracked": [],
        "moved": [],
        "skipped": [],
        "dry_run": "*",
        "unused_personal_folders": [],
        "checks": [{"name": "*", "ok": "*", "detail": "*"}],
        "ok": "*",
    },
    "memory clear": {"user": "*", "removed": ["*"], "not_removed": []},
    "table create": {
        "table": "*",
        "description": "*",
        "key": "*",
        "columns": [{"name": "*", "type": "*", "description": "*"}],
        "rows": "*",
    },
    "table create cities": {
        "table": "*",
        "description": "*",
        "key": "*",
        "columns": [{"name": "*", "type": "*", "description": "*"}],
        "rows": "*",
    },
    "table add": {
        "op": "*",
        "table": "*",
        "added": "*",
        "keys": ["*"],
        "new_columns": [{"name": "*", "type": "*", "description": "*"}],
    },
    "table list": {
        "user": "*",
        "tables": [
            {
                "table": "*",
                "description": "*",
                "key": "*",
                "columns": [{"name": "*", "type": "*", "description": "*"}],
                "rows": "*",
            }
        ],
    },
    "table show": {
        "table": "*",
        "description": "*",
        "key": "*",
        "columns": [{"name": "*", "type": "*", "description": "*"}],
        "rows": "*",
    },
    "table filter": {
        "filter": "*",
        "offset": "*",
        "limit": "*",
        "tables": [
            {
                "table": "*",
                "columns": ["*"],
                "total": "*",
                "rows": [{"row_id": "*", "name": "*", "age": "*", "city": "*"}],
            }
        ],
        "skipped": [],
    },
    "table filter every table": {
        "filter": "*",
        "offset": "*",
        "limit": "*",
        "tables": [
            {
                "table": "*",
                "columns": ["*"],
                "total": "*",
                "rows": [{"row_id": "*", "name": "*", "age": "*", "city": "*"}],
            }
        ],
        "skipped": [{"table": "*", "reason": "*"}],
    },
    "table reduce": {
        "table": "*",
        "metric": "*",
        "columns": ["*"],
        "filter": "*",
        "group_by": ["*"],
        "groups": [{"group": {"city": "*"}, "values": {"age": "*"}}],
    },
    "table search": {
        "query": "*",
        "method": "*",
        "hits": [
            {
                "table": "*",
                "match": "*",
                "score": "*",
                "row": {"row_id": "*", "name": "*", "age": "*", "city": "*"},
            }
        ],
    },
    "table join": {
        "left": "*",
        "right": "*",
        "on": "*",
        "columns": ["*"],
        "total": "*",
        "rows": [
            {
                "left.row_id": "*",
                "left.name": "*",
                "left.age": "*",
                "left.city": "*",
                "right.row_id": "*",
                "right.name": "*",
                "right.age": "*",
                "right.city": "*",
            }
        ],
    },
    "table update-rows": {
        "op": "*",
        "table": "*",
        "matched": "*",
        "updated": "*",
        "before": [{"key": "*", "values": {"city": "*"}}],
    },
    "table column add": {"op": "*", "table": "*", "column": "*", "type": "*"},
    "table column derive": {
        "op": "*",
        "table": "*",
        "column": "*",
        "type": "*",
        "expression": "*",
        "not_converted": {"count": "*", "values": []},
    },
    "table column rename": {"op": "*", "table": "*", "column": "*", "new": "*"},
    "table column transform": {
        "op": "*",
        "table": "*",
        "column": "*",
        "type": "*",
        "was": "*",
        "not_converted": {"count": "*", "values": []},
    },
    "table column delete": {"op": "*", "table": "*", "column": "*", "type": "*"},
    "table ask": {
        "question": "*",
        "method": "*",
        "answer": "*",
        "hits": [
            {
                "table": "*",
                "match": "*",
                "score": "*",
                "row": {"row_id": "*", "name": "*", "age": "*", "city": "*", "age_decade": "*"},
            }
        ],
    },
    "table update": {"error": {"code": "*", "message": "*"}},
    "table update dry run": {
        "kind": "*",
        "request": "*",
        "run": "*",
        "dry_run": "*",
        "summary": "*",
        "operations": [
            {"tool": "*", "arguments": {"table": "*", "filter": "*", "values": {"city": "*"}}, "applied": "*"}
        ],
        "not_applied": [],
        "interrupted": "*",
        "continues": "*",
    },
    "table undo": {"error": {"code": "*", "message": "*"}},
    "table rename": {"op": "*", "table": "*", "new": "*"},
    "table delete-rows": {
        "op": "*",
        "table": "*",
        "deleted": "*",
        "rows": [{"row_id": "*", "name": "*", "age": "*", "city": "*", "age_decade": "*"}],
    },
    "table delete": {
        "changes": [
            {
                "op": "*",
                "table": "*",
                "schema": {
                    "description": "*",
                    "key": "*",
                    "columns": [{"name": "*", "type": "*", "description": "*"}],
                    "next_key": "*",
                },
                "csv": "*",
            }
        ]
    },
    "error": {"error": {"code": "*", "message": "*"}},
}

PINNED["memory save kept"] = PINNED["memory save"]
PINNED["memory save expiring"] = {
    **PINNED["memory save"],
    "record": {  # (the body stays last)
        **{key: value for key, value in PINNED["memory save"]["record"].items() if key != "body"},
        "expires": "*",
        "expired": "*",
        "body": "*",
    },
}
PINNED["memory list expired"] = {
    **PINNED["memory list"],
    "records": [{**PINNED["memory list"]["records"][0], "expires": "*", "expired": "*"}],
}
PINNED["memory review"] = {
    "user": "*",
    "unused_days": "*",
    "applied": [],
    "proposals": [
        {"id": "*", "kind": "*", "action": "*", "records": ["*"], "keep": "*", "reason": "*"}
    ],
    "problems": [],
}
