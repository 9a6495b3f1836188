"""Knowledge tables at their edges (each case a bug a review found): whole-number sums and medians
past 2**53 stay exact, update-rows writes what only == calls equal ([1] and [true], 1 and 1.0,
0.0 and -0.0), JSON Lines with U+2028 in a value, short CSV rows refused, None and nested lists
in 'in', modulo by a large number."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ok


def _rows(cli, table: str, where: str | None = None) -> list[dict]:
    args = ["table", "filter", table, "--json"] + (["--where", where] if where else [])
    return ok(cli(*args))["tables"][0]["rows"]


def _keys(cli, table: str, where: str) -> list[int]:
    return [row["row_id"] for row in _rows(cli, table, where)]


# --- reduce ---------------------------------------------------------------------------------------


def test_sum_of_a_whole_number_column_is_exact(cli) -> None:
    ok(cli("table", "create", "big", "-c", "n:int", "--json"))
    ok(cli("table", "add", "big", "--row", '{"n": 9007199254740993}', "--json"))  # 2**53 + 1
    reduced = ok(cli("table", "reduce", "big", "-m", "sum", "-c", "n", "--json"))
    assert reduced["groups"][0]["values"]["n"] == 9007199254740993


def test_median_of_a_whole_number_column_is_exact(cli) -> None:
    ok(cli("table", "create", "big", "-c", "n:int", "--json"))
    ok(cli("table", "add", "big", "--row", '{"n": 9007199254740993}', "--json"))
    reduced = ok(cli("table", "reduce", "big", "-m", "median", "-c", "n", "--json"))
    assert reduced["groups"][0]["values"]["n"] == 9007199254740993


# --- update-rows ----------------------------------------------------------------------------------


def test_update_rows_writes_a_list_whose_items_change_type(cli, vault) -> None:
    ok(cli("table", "create", "t", "-c", "tags:list", "--json"))
    ok(cli("table", "add", "t", "--row", '{"tags": [1, 0]}', "--json"))
    values = ("--set", '{"tags": [true, false]}')
    changed = ok(cli("table", "update-rows", "t", "--where", "True", *values, "--json"))
    (row,) = _rows(cli, "t")
    # [1, 0] == [True, False] in Python, but they are different values (and different CSV cells).
    assert changed["updated"] == 1, changed
    assert row["tags"] == [True, False] and [type(v) for v in row["tags"]] == [bool, bool], row


def test_update_rows_writes_a_dict_whose_number_changes_type(cli) -> None:
    ok(cli("table", "create", "t", "-c", "meta:dict", "--json"))
    ok(cli("table", "add", "t", "--row", '{"meta": {"a": 1}}', "--json"))
    ok(cli("table", "update-rows", "t", "--where", "True", "--set", '{"meta": {"a": 1.0}}', "--json"))
    (row,) = _rows(cli, "t")
    assert type(row["meta"]["a"]) is float, row


# --- files written by other tools ----------------------------------------------------------------


def test_jsonl_rows_with_a_unicode_line_separator_inside_a_value(cli, tmp_path: Path) -> None:
    # json.dumps(..., ensure_ascii=False) writes U+2028, U+2029 and U+0085 as they are: valid JSON.
    values = ["a\u2028b", "c\u2029d", "e\u0085f"]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps({"text": v}, ensure_ascii=False) + "\n" for v in values), "utf-8")
    ok(cli("table", "create", "notes", "-c", "text:str", "--json"))
    result = cli("table", "add", "notes", "--file", str(source), "--json")
    assert result.exit_code == 0, result.stdout
    assert [row["text"] for row in _rows(cli, "notes")] == values


# --- filters --------------------------------------------------------------------------------------






def test_none_in_a_list_finds_a_null_item(cli) -> None:
    ok(cli("table", "create", "t", "-c", "tags:list", "--json"))
    ok(cli("table", "add", "t", "--row", '{"tags": [null, "a"]}', "--json"))
    assert _keys(cli, "t", "None in tags") == [1]


def test_text_in_a_list_does_not_match_a_nested_list(cli) -> None:
    ok(cli("table", "create", "t", "-c", "tags:list", "--json"))
    ok(cli("table", "add", "t", "--row", '{"tags": [["a"]]}', "--json"))
    assert _keys(cli, "t", "'[\"a\"]' in tags") == []




def test_modulo_by_a_large_whole_number(cli) -> None:
    ok(cli("table", "create", "t", "-c", "n:int", "--json"))
    ok(cli("table", "add", "t", "--row", '{"n": 5}', "--json"))
    assert _keys(cli, "t", "n % 9223372036854775807 == 5") == [1]





# --- rows files written by hand or by other tools -------------------------------------------------


def test_a_csv_row_with_fewer_fields_than_its_header_is_refused(cli, tmp_path: Path) -> None:
    # The table's own reader refuses such a row (csvfile: "N fields where the header has M");
    # `table add --file` fills the missing cells with nothing instead, silently.
    source = tmp_path / "rows.csv"
    source.write_text("name,city\nAlice\n,Berlin\n", "utf-8")  # a line broken by another tool
    ok(cli("table", "create", "p", "-c", "name:str", "-c", "city:str", "--json"))
    assert cli("table", "add", "p", "--file", str(source), "--json").exit_code == 6
    assert ok(cli("table", "filter", "p", "--json"))["tables"][0]["rows"] == []


def test_update_rows_to_negative_zero(cli) -> None:
    ok(cli("table", "create", "t", "-c", "x:float", "--json"))
    ok(cli("table", "add", "t", "--row", '{"x": 0.0}', "--json"))
    changed = ok(cli("table", "update-rows", "t", "--where", "True", "--set", '{"x": -0.0}', "--json"))
    assert changed["updated"] == 1


def test_datetimes_with_offsets_compare_in_time_order(cli) -> None:
    """10:30 at +02:00 is 08:30 UTC: before 09:00 UTC, though its text sorts after."""
    ok(cli("table", "create", "meetings", "-c", "name:str", "-c", "at:datetime", "--json"))
    rows = [
        {"name": "berlin", "at": "2024-05-01T10:30:00+02:00"},
        {"name": "london", "at": "2024-05-01T09:30:00+00:00"},
    ]
    for row in rows:
        ok(cli("table", "add", "meetings", "--row", json.dumps(row), "--json"))
    later = ok(cli("table", "filter", "meetings", "--where", 'at > "2024-05-01T09:00:00+00:00"', "--json"))
    assert [r["name"] for r in later["tables"][0]["rows"]] == ["london"]

