"""Which tables a user may name, and where each one's files are.

A reference is `NAME` (the user's personal table, tables/personal/<user>/NAME) or
`team/<team>/NAME` (tables/team/<team>/NAME, shared by the members listed in
`[teams.<team>] members`). There is no way to name another user's personal table. A team the
user is not a member of is refused with exit 5 before anything is read, and the refusal never
says whether a table exists there: a non-member learns no table names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ..errors import InvalidInput, NotAllowed
from ..vault import is_user_name
from .schema import check_name

SUFFIX_ROWS, SUFFIX_SCHEMA = ".csv", ".schema.json"


class TableRef(NamedTuple):
    scope: str  # "personal" | "team"
    owner: str  # the user, or the team
    name: str

    @property
    def qualified(self) -> str:
        """As the user writes it: NAME for their own table, team/<team>/NAME for a team's."""
        return self.name if self.scope == "personal" else f"team/{self.owner}/{self.name}"

    @property
    def folder(self) -> str:
        return f"tables/{self.scope}/{self.owner}"

    @property
    def rows_key(self) -> str:
        return f"{self.folder}/{self.name}{SUFFIX_ROWS}"

    @property
    def schema_key(self) -> str:
        return f"{self.folder}/{self.name}{SUFFIX_SCHEMA}"

    def renamed(self, name: str) -> TableRef:
        return self._replace(name=check_name(name, "table"))


class TableAccess:
    """One user's view of the vault's tables: their own, and their teams'."""

    def __init__(self, user: str, teams: Mapping[str, frozenset[str]]) -> None:
        self.user = user
        self.teams = sorted(team for team, members in teams.items() if user in members)

    def parse(self, spec: str) -> TableRef:
        """The table a reference names, if the user may use it (NotAllowed for another team's)."""
        if not isinstance(spec, str) or not spec:
            raise InvalidInput("a table reference is empty")
        parts = spec.split("/")
        if len(parts) == 1:
            return TableRef("personal", self.user, check_name(spec, "table"))
        if len(parts) == 3 and parts[0] == "team":
            team, name = parts[1], parts[2]
            if not is_user_name(team):
                raise InvalidInput(f"invalid team name {team!r}")
            if team not in self.teams:
                raise NotAllowed(f"you are not a member of team {team!r}: its tables are not yours to use")
            return TableRef("team", team, check_name(name, "table"))
        raise InvalidInput(f"invalid table reference {spec!r}: use NAME or team/<team>/NAME")

    def folders(self) -> list[TableRef]:
        """The folders whose tables the user sees, as references with no name."""
        return [TableRef("personal", self.user, ""), *(TableRef("team", team, "") for team in self.teams)]
