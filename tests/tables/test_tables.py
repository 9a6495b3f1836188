"""Knowledge tables through the CLI: typed rows in git-friendly files, filters, reductions,
search, joins, row and column changes, the journal, and who may see which table."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import ok, run_aibuddy, run_in_process, strict_json

from aibuddy_cli.__main__ import main
from aibuddy_cli.vault import Vault

PEOPLE = [
    {
        "name": "Ada Lovelace",
        "city": "London",
        "age": 36,
        "tags": ["math", "engines"],
        "joined": "2021-03-01",
    },
    {"name": "Alan Turing", "city": "London", "age": 41, "tags": ["math", "crypto"], "joined": "2022-07-15"},
    {"name": "Grace Hopper", "city": "New York", "age": 85, "tags": ["compilers"], "joined": "2020-01-10"},
    {"name": "李雷", "city": "北京", "age": 28, "tags": ["ops"], "joined": "2023-11-30"},
]


def rows_file(vault: Vault, name: str, owner: str = "demo", scope: str = "personal") -> Path:
    return vault.root / "tables" / scope / owner / f"{name}.csv"


@pytest.fixture
def people(cli, vault: Vault) -> str:
    ok(cli("table", "create", "people", "-d", "People I work with", "-c", "joined:date", "--json"))
    args = [arg for row in PEOPLE for arg in ("--row", json.dumps(row, ensure_ascii=False))]
    ok(cli("table", "add", "people", *args, "--json"))
    return "people"


def test_rows_get_keys_types_and_new_columns(cli, vault: Vault, people: str) -> None:
    shown = ok(cli("table", "show", "people", "--json"))
    assert shown["rows"] == 4 and shown["key"] == "row_id"
    assert {c["name"]: c["type"] for c in shown["columns"]} == {
        "row_id": "int",
        "joined": "date",
        "name": "str",
        "city": "str",
        "age": "int",
        "tags": "list",
    }
    text = rows_file(vault, "people").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "row_id,joined,name,city,age,tags"
    assert text.splitlines()[4] == '4,2023-11-30,李雷,北京,28,"[""ops""]"'


def test_a_value_that_does_not_fit_is_refused_and_nothing_is_written(cli, vault: Vault, people: str) -> None:
    before = rows_file(vault, "people").read_bytes()
    result = cli(
        "table", "add", "people", "--row", '{"name": "Ok", "age": 3}', "--row", '{"age": "old"}', "--json"
    )
    assert result.exit_code == 6
    assert "row 2, column age" in result.stderr and "whole number" in result.stderr
    assert rows_file(vault, "people").read_bytes() == before
    assert cli("table", "add", "people", "--row", '{"row_id": 9}').exit_code == 6  # keys are assigned


@pytest.mark.process
def test_adding_a_row_is_a_one_line_git_diff(cli, vault: Vault, people: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(vault.root), *args], check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "people")
    ok(cli("table", "add", "people", "--row", '{"name": "Linus", "city": "Helsinki", "age": 55}', "--json"))
    diff = git("diff", "--numstat", "--", "tables/personal/demo/people.csv")
    assert diff.split()[:2] == ["1", "0"]


def test_a_hand_edit_is_picked_up_and_a_malformed_file_is_reported_not_rewritten(
    cli, vault: Vault, people: str
) -> None:
    path = rows_file(vault, "people")
    path.write_text(path.read_text(encoding="utf-8") + "5,2024-01-01,Edsger,Austin,72,[]\n", encoding="utf-8")
    found = ok(cli("table", "filter", "people", "--where", 'city == "Austin"', "--json"))
    assert [r["name"] for r in found["tables"][0]["rows"]] == ["Edsger"]
    broken = path.read_text(encoding="utf-8") + "6,2024-02-30,Nobody,Nowhere,1,[]\n"
    path.write_text(broken, encoding="utf-8")
    result = cli("table", "filter", "people", "--json")
    assert result.exit_code == 6
    assert "people.csv line 7, column joined" in result.stderr
    assert path.read_text(encoding="utf-8") == broken
    assert cli("table", "add", "people", "--row", '{"name": "X"}').exit_code == 6
    assert path.read_text(encoding="utf-8") == broken


def test_filters_select_typed_rows(cli, people: str) -> None:
    def names(where: str) -> list[str]:
        document = ok(cli("table", "filter", "people", "--where", where, "--json"))
        return [row["name"] for row in document["tables"][0]["rows"]]

    assert names('age > 30 and city == "London"') == ["Ada Lovelace", "Alan Turing"]
    assert names('"math" in tags') == ["Ada Lovelace", "Alan Turing"]
    assert names('"Hop" in name') == ["Grace Hopper"]
    assert names('joined >= date("2022-01-01")') == ["Alan Turing", "李雷"]
    bad = cli("table", "filter", "people", "--where", '__import__("os").system("true")', "--json")
    assert bad.exit_code == 6 and json.loads(bad.stdout)["error"]["code"] == "invalid_filter"


def test_reduce_search_and_join(cli, people: str) -> None:
    mean = ok(cli("table", "reduce", "people", "-m", "mean", "-c", "age", "-g", "city", "--json"))
    assert {g["group"]["city"]: g["values"]["age"] for g in mean["groups"]} == {
        "London": 38.5,
        "New York": 85.0,
        "北京": 28.0,
    }
    median = ok(
        cli("table", "reduce", "people", "-m", "median", "-c", "age", "--where", "age < 80", "--json")
    )
    assert median["groups"] == [{"group": {}, "values": {"age": 36.0}}]
    hits = ok(cli("table", "search", "北京", "--json"))["hits"]
    assert [h["row"]["name"] for h in hits] == ["李雷"]
    ok(cli("table", "create", "cities", "-c", "city:str", "-c", "country:str", "--json"))
    ok(cli("table", "add", "cities", "--row", '{"city": "London", "country": "UK"}', "--json"))
    joined = ok(
        cli(
            "table", "join", "people", "cities", "--on", "people.city == cities.city",
            "--columns", "people.name,cities.country", "--json",
        )
    )  # fmt: skip
    assert joined["rows"] == [
        {"people.name": "Ada Lovelace", "cities.country": "UK"},
        {"people.name": "Alan Turing", "cities.country": "UK"},
    ]


def test_update_and_delete_rows_are_journaled(cli, vault: Vault, people: str) -> None:
    updated = ok(
        cli(
            "table",
            "update-rows",
            "people",
            "--where",
            'city == "London"',
            "--set",
            '{"city": "Cambridge"}',
            "--json",
        )
    )
    assert updated["matched"] == 2 and updated["updated"] == 2
    assert cli("table", "delete-rows", "people", "--where", "age > 80").exit_code == 2  # --yes needed
    deleted = ok(cli("table", "delete-rows", "people", "--where", "age > 80", "--yes", "--json"))
    assert deleted["deleted"] == 1 and deleted["rows"][0]["name"] == "Grace Hopper"
    journal = [
        json.loads(line) for line in (vault.root / ".aibuddy/logs/tables.jsonl").read_text().splitlines()
    ]
    assert [entry["op"] for entry in journal] == ["create_table", "add_rows", "update_rows", "delete_rows"]
    assert journal[2]["changed"]["before"] == [
        {"key": 1, "values": {"city": "London"}},
        {"key": 2, "values": {"city": "London"}},
    ]


def test_column_operations(cli, vault: Vault, people: str) -> None:
    ok(cli("table", "column", "derive", "people", "decade", "age // 10", "--json"))
    ok(cli("table", "column", "rename", "people", "decade", "age_decade", "--json"))
    ok(cli("table", "column", "add", "people", "email", "str", "--json"))
    before = rows_file(vault, "people").read_bytes()
    refused = cli("table", "column", "transform", "people", "city", "--type", "int", "--json")
    assert refused.exit_code == 6 and json.loads(refused.stdout)["error"]["code"] == "values_not_kept"
    assert "row_id 1: 'London'" in refused.stderr and rows_file(vault, "people").read_bytes() == before
    lossy = ["--type", "int", "--lossy", "drop", "--yes", "--json"]
    transformed = ok(cli("table", "column", "transform", "people", "city", *lossy))
    assert transformed["not_converted"]["count"] == 4 and transformed["lossy"] == "drop"
    assert cli("table", "column", "delete", "people", "city").exit_code == 2  # --yes without a terminal
    ok(cli("table", "column", "delete", "people", "city", "--yes", "--json"))
    rows = ok(cli("table", "filter", "people", "--columns", "name,age_decade,email", "--json"))["tables"][0][
        "rows"
    ]
    assert rows[0] == {"row_id": 1, "name": "Ada Lovelace", "age_decade": 3, "email": None}
    assert cli("table", "column", "delete", "people", "row_id", "--yes").exit_code == 6


def test_rename_and_delete_tables(cli, vault: Vault, people: str) -> None:
    ok(cli("table", "rename", "people", "contacts", "--json"))
    assert not rows_file(vault, "people").exists() and rows_file(vault, "contacts").exists()
    assert cli("table", "show", "people").exit_code == 3
    ok(cli("table", "delete", "contacts", "--yes", "--json"))
    assert ok(cli("table", "list", "--json"))["tables"] == []


def test_team_tables_are_for_members_only(cli, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    config = vault.root / "aibuddy.toml"
    config.write_text(config.read_text() + '\n[teams.ops]\nmembers = ["demo", "bob"]\n')
    ok(cli("table", "create", "team/ops/vendors", "-c", "name:str", "--json"))
    ok(cli("table", "add", "team/ops/vendors", "--row", '{"name": "Acme"}', "--json"))
    assert rows_file(vault, "vendors", "ops", "team").exists()
    assert [t["table"] for t in ok(cli("--user", "bob", "table", "list", "--json"))["tables"]] == [
        "team/ops/vendors"
    ]
    outsider = cli("--user", "eve", "table", "filter", "team/ops/vendors", "--json")
    assert outsider.exit_code == 5 and "vendors" not in outsider.stdout + outsider.stderr
    assert ok(cli("--user", "eve", "table", "list", "--json"))["tables"] == []
    assert ok(cli("--user", "eve", "table", "search", "Acme", "--json"))["hits"] == []
    assert cli("--user", "eve", "table", "filter", "--json").exit_code == 0


def test_rows_from_a_csv_file_infer_types(cli, vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "products.csv"
    source.write_text("sku,price,in_stock,added\n0042,9.5,true,2024-05-01\n0043,12,false,2024-06-01\n")
    ok(cli("table", "create", "products", "--json"))
    ok(cli("table", "add", "products", "--file", str(source), "--json"))
    types = {c["name"]: c["type"] for c in ok(cli("table", "show", "products", "--json"))["columns"]}
    assert types == {"row_id": "int", "sku": "str", "price": "float", "in_stock": "bool", "added": "date"}
    cheap = ok(cli("table", "filter", "products", "--where", "price < 10 and in_stock", "--json"))
    assert [r["sku"] for r in cheap["tables"][0]["rows"]] == ["0042"]


def test_the_index_is_rebuilt_after_aibuddy_dir_is_deleted(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli, people: str
) -> None:
    import shutil

    shutil.rmtree(vault.root / ".aibuddy")
    result = run_in_process("table", "filter", "people", "--where", "age < 30", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert [r["name"] for r in json.loads(result.stdout)["tables"][0]["rows"]] == ["李雷"]


@pytest.mark.process
def test_concurrent_adds_from_many_processes_keep_every_row_once(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str], cli
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    ok(cli("table", "create", "log", "-c", "n:int", "--json"))

    def add(n: int) -> int:
        row = json.dumps({"n": n})
        return run_aibuddy(aibuddy_exe, "table", "add", "log", "--row", row, "--json", env=env).returncode

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(add, range(16))) == [0] * 16
    rows = ok(cli("table", "filter", "log", "--json"))["tables"][0]["rows"]
    assert sorted(r["n"] for r in rows) == list(range(16))
    assert [r["row_id"] for r in rows] == list(range(1, 17))


@pytest.mark.process
def test_rows_from_standard_input_in_a_real_process(
    aibuddy_exe: list[str], vault: Vault, env: dict[str, str]
) -> None:
    assert run_aibuddy(aibuddy_exe, "table", "create", "notes", env=env).returncode == 0
    lines = b'{"text": "first"}\n{"text": "\xe7\xac\xac\xe4\xba\x8c"}\n'
    added = run_aibuddy(aibuddy_exe, "table", "add", "notes", "--file", "-", "--json", env=env, input=lines)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["added"] == 2
    found = run_aibuddy(aibuddy_exe, "table", "search", "第二", "--json", env=env)
    assert [h["row"]["text"] for h in json.loads(found.stdout)["hits"]] == ["第二"]


# --- no input of any kind is a traceback ---------------------------------------------------------


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The whole CLI in-process (the fast path, else the Typer app), as a script runs it."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# Escapes and characters no UTF-8 text holds, values past 64 bits or a float, syntax half written,
# constructs the language refuses, and words shaped like options.
HOSTILE = [
    '"\\ud800"', 'name == "\\udcff"', "\ud800", "\udcff", '"\\x00" in name', "", " ", "(", ")" * 3, "[" * 150,
    "9" * 30, "age > 1e400", "age > 99999999999999999999", "age * 9223372036854775807 * 4 > 0", "age / 0 > 1",
    "age % 0 == 1", "round(age, 99)", "len(age)", "name.upper()", "(lambda: 1)()", "name[0]", "f'{name}'",
    "age @ 2", "~age", "age ** 2", "1 in name", "tags in tags", "not " * 150 + "True", "coalesce()",
    'date("2024-02-30")', "\x1b[31m", "-", "-n",
]
LIMITS = ["0", "-1", "1", str(2**63 - 1), str(2**63), "99999999999999999999999", "1e3", "１２"]
DOCUMENTED = {0, 2, 3, 4, 5, 6, 7}


def test_hostile_filters_searches_and_numbers_get_an_error_never_a_traceback(
    cli, people: str, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = []
    for text in HOSTILE:
        calls += [
            ["table", "filter", "--where", text],
            ["table", "filter", "people", "--where", text],
            ["table", "reduce", "people", "-m", "sum", "-c", "age", "--where", text],
            ["table", "reduce", "people", "-m", "mean", "-c", text],
            ["table", "search", text],
            ["table", "join", "people", "people", "--on", text],
        ]
    for number in LIMITS:
        calls += [
            ["table", "filter", "people", "--offset", number],
            ["table", "filter", "--limit", number],
            ["table", "search", "ada", "--limit", number],
        ]
    for argv in calls:
        code, out, err = run_main(capsys, *argv, "--json")
        assert code in DOCUMENTED, (argv, code, err)
        document = strict_json(out)
        assert ("error" in document) == (code != 0), (argv, out)
        assert "Traceback" not in err and (code == 0 or err.startswith(("error:", "warning:", "Usage:"))), err


@pytest.mark.parametrize(
    "command", [["filter", "people"], ["filter"], ["reduce", "people", "-m", "count", "-c", "age"]]
)
def test_a_lone_surrogate_escape_in_a_filter_is_refused(
    cli, people: str, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    code, out, err = run_main(capsys, "table", *command, "--where", 'name == "\\ud800"', "--json")
    assert code == 6
    assert strict_json(out)["error"]["code"] == "invalid_filter"
    assert "line 1, column 9: a lone surrogate" in err


def test_an_offset_past_64_bits_is_a_usage_error_and_a_large_limit_is_the_maximum(
    cli, people: str, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = "99999999999999999999999"
    code, out, err = run_main(capsys, "table", "filter", "people", "--offset", huge, "--json")
    assert code == 2 and strict_json(out)["error"]["code"] == "usage" and "--offset" in err
    code, out, _ = run_main(capsys, "table", "filter", "people", "--offset", "9223372036854775807", "--json")
    assert code == 0 and strict_json(out)["tables"][0]["rows"] == []
    code, out, _ = run_main(capsys, "table", "filter", "people", "--limit", huge, "--json")
    assert code == 0 and strict_json(out)["limit"] == 1000  # [tables] max_rows


# --- search scores ------------------------------------------------------------------------------


def test_a_matching_row_scores_above_zero_even_alone(cli) -> None:
    ok(cli("table", "create", "parts", "-c", "name:str", "-c", "tags:list", "--json"))
    ok(cli("table", "add", "parts", "--row", '{"name": "NVMe SSD 2TB", "tags": ["storage"]}', "--json"))
    (hit,) = ok(cli("table", "search", "ssd storage", "--json"))["hits"]
    assert hit["row"]["name"] == "NVMe SSD 2TB" and hit["score"] > 0


def test_search_scores_order_rows_by_how_much_of_the_query_they_match(cli) -> None:
    ok(cli("table", "create", "parts", "-c", "name:str", "-c", "tags:list", "--json"))
    rows = [
        {"name": "NVMe SSD 2TB", "tags": ["storage"]},
        {"name": "USB hub", "tags": ["desk"]},
        {"name": "HDD 4TB", "tags": ["storage"]},
        {"name": "SATA SSD 1TB", "tags": ["Storage", "fast"]},
        {"name": "Monitor arm", "tags": ["desk"]},
    ]
    ok(cli("table", "add", "parts", *[a for r in rows for a in ("--row", json.dumps(r))], "--json"))
    hits = ok(cli("table", "search", "SSD storage", "--json"))["hits"]
    names = [h["row"]["name"] for h in hits]
    assert set(names[:2]) == {"NVMe SSD 2TB", "SATA SSD 1TB"} and names[2:] == ["HDD 4TB"]
    scores = [h["score"] for h in hits]
    assert all(score > 0 for score in scores) and scores[1] > scores[2]  # both words beat one
    assert ok(cli("table", "search", "storage", "--json"))["hits"][0]["score"] > 0  # in 3 rows of 5


# --- table filter over every table ---------------------------------------------------------------


def test_a_filter_over_every_table_skips_the_tables_it_does_not_fit_and_says_so(cli, people: str) -> None:
    ok(cli("table", "create", "cities", "-c", "city:str", "--json"))
    ok(cli("table", "add", "cities", "--row", '{"city": "London"}', "--json"))
    result = cli("table", "filter", "--where", "age > 40", "--json")
    document = ok(result)
    assert [t["table"] for t in document["tables"]] == ["people"]
    assert [r["name"] for r in document["tables"][0]["rows"]] == ["Alan Turing", "Grace Hopper"]
    reason = "filter: line 1, column 1: unknown column 'age' (columns: city, row_id)"
    assert document["skipped"] == [{"table": "cities", "reason": reason}]
    assert f"warning: table filter: cities skipped: {reason}" in result.stderr
    by_column = ok(cli("table", "filter", "--columns", "name", "--json"))
    assert [t["table"] for t in by_column["tables"]] == ["people"]
    assert by_column["skipped"][0]["table"] == "cities"


def test_a_filter_that_fits_no_table_or_a_named_one_names_the_table(cli, people: str) -> None:
    ok(cli("table", "create", "cities", "-c", "city:str", "--json"))
    nowhere = cli("table", "filter", "--where", "agee > 40", "--json")
    assert nowhere.exit_code == 6 and json.loads(nowhere.stdout)["error"]["code"] == "invalid_filter"
    assert "no table fits the filter" in nowhere.stderr
    assert "table cities: filter: line 1, column 1: unknown column 'agee'" in nowhere.stderr
    assert "table people: filter: line 1, column 1: unknown column 'agee'" in nowhere.stderr
    named = cli("table", "filter", "people", "cities", "--where", "age > 40", "--json")
    assert named.exit_code == 6
    assert "error: table cities: filter: line 1, column 1: unknown column 'age'" in named.stderr
    anywhere = cli("table", "filter", "--where", "lambda: 1", "--json")  # the same refusal everywhere
    assert anywhere.exit_code == 6
    assert "error: filter: line 1, column 1: lambda is not allowed" in anywhere.stderr


# --- a value that is one of the command's own options ----------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["table", "filter", "people", "--where", "--json"],
        ["table", "filter", "--columns", "--limit", "3"],
        ["table", "reduce", "people", "-m", "sum", "-c", "--json"],
        ["table", "search", "ada", "-t", "--json"],
        ["table", "update-rows", "people", "--where", "--json", "--set", '{"city": "Paris"}'],
        ["table", "update-rows", "people", "--where", "True", "--set", "--json"],
        ["table", "delete-rows", "people", "--where", "--yes"],
        ["table", "join", "people", "people", "--on", "--json"],
        ["table", "column", "transform", "people", "age", "--expression", "--json"],
    ],
)
def test_an_option_value_spelled_like_an_option_is_a_usage_error(
    cli, vault: Vault, people: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    before = rows_file(vault, "people").read_bytes()
    code, out, err = run_main(capsys, *argv, *(["--json"] if "--json" not in argv else []))
    assert code == 2, (out, err)
    assert strict_json(out)["error"]["code"] == "usage"
    assert "is one of this command's options, so the value of" in err
    assert rows_file(vault, "people").read_bytes() == before


# --- table column add: name:type as table create spells it ----------------------------------------


def test_column_add_takes_name_type_as_create_does_and_the_old_spelling_still_works(cli, people: str) -> None:
    ok(cli("table", "column", "add", "people", "email:str:Work address", "--json"))
    ok(cli("table", "column", "add", "people", "phone", "str", "-d", "Mobile", "--json"))
    ok(cli("table", "column", "add", "people", "born:date", "--json"))
    columns = {c["name"]: c for c in ok(cli("table", "show", "people", "--json"))["columns"]}
    assert (columns["email"]["type"], columns["email"]["description"]) == ("str", "Work address")
    assert (columns["phone"]["type"], columns["phone"]["description"]) == ("str", "Mobile")
    assert columns["born"]["type"] == "date"
    for argv, says in (
        (["fax"], "write name:type[:description]"),
        (["fax:str", "str"], "names a type already"),
        (["fax:str:Office", "-d", "Office"], "give the description once"),
    ):
        refused = cli("table", "column", "add", "people", *argv, "--json")
        assert refused.exit_code == 2 and says in refused.stderr, (argv, refused.stderr)
    unknown = cli("table", "column", "add", "people", "fax:strr", "--json")
    assert unknown.exit_code == 6 and "unknown type 'strr'" in unknown.stderr
