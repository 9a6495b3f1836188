"""`table filter --sort COLUMN`: rows ordered by a column (descending with a leading -), then by key."""

from __future__ import annotations

import json

from aibuddy_cli.vault import Vault


def names(result) -> list[str]:  # noqa: ANN001 - a CliRunner result
    assert result.exit_code == 0, result.stderr
    return [row["name"] for row in json.loads(result.stdout)["tables"][0]["rows"]]


def test_rows_come_ordered_by_the_column_asked_for_then_by_key(cli, vault: Vault) -> None:
    assert cli("table", "create", "people", "-c", "name:str", "-c", "age:int").exit_code == 0
    rows = ['{"name": "Ada", "age": 36}', '{"name": "Alan", "age": 41}', '{"name": "Grace", "age": 29}',
            '{"name": "Edsger", "age": 36}']  # fmt: skip
    assert cli("table", "add", "people", *[a for row in rows for a in ("--row", row)]).exit_code == 0
    assert names(cli("table", "filter", "people", "--json")) == ["Ada", "Alan", "Grace", "Edsger"]
    by_age = cli("table", "filter", "people", "--sort", "age", "--json")
    assert names(by_age) == ["Grace", "Ada", "Edsger", "Alan"]  # two of 36: by key, Ada first
    oldest_first = cli("table", "filter", "people", "--sort", "-age", "--json")
    assert names(oldest_first) == ["Alan", "Ada", "Edsger", "Grace"]
    paged = cli("table", "filter", "people", "--sort", "-age", "--limit", "2", "--offset", "1", "--json")
    assert names(paged) == ["Ada", "Edsger"]
    refused = cli("table", "filter", "people", "--sort", "height", "--json")
    assert refused.exit_code != 0 and "no column 'height'" in refused.stdout
