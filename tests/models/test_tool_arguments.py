"""A model's tool arguments checked by jsonschema against the schema the tool declares: one
message a refusal, after the path of the argument; 5.0 read as 5 where an integer is declared;
NaN and infinities refused; bounds, and with values=False an enum's values, left to the tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aibuddy_cli.models import tool_arguments
from aibuddy_cli.models.tool_arguments import check_arguments, json_text_read

TEXT = {"type": "string"}
NAMES = {"anyOf": [TEXT, {"type": "array", "items": TEXT}]}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": NAMES,
        "limit": {"type": "integer", "minimum": 1, "maximum": 10},
        "share": {"type": "number"},
        "exact": {"type": "boolean"},
        "metric": {"type": "string", "enum": ["count", "sum"]},
        "keys": {"type": "array", "items": {"type": "integer"}},
        "file": {
            "type": "object",
            "properties": {"source": TEXT, "lines": {"type": "array", "items": TEXT}},
            "required": ["source", "lines"],
        },
        "rows": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["query"],
}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": "a", "where": 1}, "unknown argument 'where' (the arguments are: query, limit, share, "),
        ({"limit": 2}, "'query' is a required property"),
        ({"query": None}, "'query' is a required property"),  # null is an argument left out
        ({"query": 3}, "query: 3 is not of type 'string' or 'array'"),
        ({"query": ["a", 3]}, "query[1]: 3 is not of type 'string'"),
        ({"query": "a", "limit": True}, "limit: True is not of type 'integer'"),
        ({"query": "a", "limit": "5"}, "limit: '5' is not of type 'integer'"),
        ({"query": "a", "limit": 2.5}, "limit: 2.5 is not of type 'integer'"),
        ({"query": "a", "share": "0.5"}, "share: '0.5' is not of type 'number'"),
        ({"query": "a", "share": float("nan")}, "share: nan is not of type 'number'"),
        ({"query": "a", "share": float("-inf")}, "share: -inf is not of type 'number'"),
        ({"query": "a", "exact": 1}, "exact: 1 is not of type 'boolean'"),
        ({"query": "a", "metric": "avg"}, "metric: 'avg' is not one of ['count', 'sum']"),
        ({"query": "a", "keys": [1, "2"]}, "keys[1]: '2' is not of type 'integer'"),
        ({"query": "a", "file": {"source": "x"}}, "file: 'lines' is a required property"),
        ({"query": "a", "file": {"source": "x", "lines": ["a", 2]}}, "file.lines[1]: 2 is not of type"),
        ({"query": "a", "rows": ["x" * 500]}, "rows[0]: 'xxxxxxxxxxxx...xxxxxxxxxxxxx' is not of type"),
    ],
)
def test_a_refusal_is_one_message_naming_the_argument(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_arguments(SCHEMA, arguments)
    assert str(refused.value).startswith(message), str(refused.value)
    assert "\n" not in str(refused.value)


def test_whole_numbers_sent_as_floats_come_back_as_ints_where_an_integer_is_declared() -> None:
    sent = {"query": "a", "limit": 5.0, "share": 2.0, "keys": [1.0, 2], "exact": None}
    checked = check_arguments(SCHEMA, sent)
    assert checked == {"query": "a", "limit": 5, "share": 2.0, "keys": [1, 2], "exact": None}
    assert type(checked["limit"]) is int and type(checked["share"]) is float
    assert all(type(key) is int for key in checked["keys"])


def test_bounds_and_with_values_false_an_enums_values_are_the_tools() -> None:
    assert check_arguments(SCHEMA, {"query": "a", "limit": 50})["limit"] == 50  # the tool clamps or refuses
    assert check_arguments(SCHEMA, {"query": "a", "metric": "avg"}, values=False)["metric"] == "avg"
    with pytest.raises(ValueError, match=r"^metric: 5 is not of type 'string'$"):  # the kind still checked
        check_arguments(SCHEMA, {"query": "a", "metric": 5}, values=False)


def test_a_schema_is_compiled_once_whichever_dict_holds_it() -> None:
    check_arguments(SCHEMA, {"query": "a"})
    before = tool_arguments._validator.cache_info()
    check_arguments(json.loads(json.dumps(SCHEMA)), {"query": "b"})  # a new dict, as the MCP server's
    after = tool_arguments._validator.cache_info()
    assert after.hits == before.hits + 1 and after.currsize == before.currsize


def test_a_list_sent_as_its_json_text_is_read_where_no_string_is_taken() -> None:
    read = json_text_read(SCHEMA, {"query": '["a"]', "keys": "[1, 2]", "rows": "not JSON"})
    assert read == {"query": '["a"]', "keys": [1, 2], "rows": "not JSON"}
