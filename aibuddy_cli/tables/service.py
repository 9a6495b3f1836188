"""Knowledge tables of one user: the tables they and their teams keep under tables/.

`TableService` composes the parts that share one `TablesState` (access, store, index, lock,
journal): `queries` (list, show, filter, reduce, search, join: all that reads) and `changes`
(create, rows, rename, delete, columns). `read_only()` is the same user's view over a store
that refuses every write, for the `table ask` loop.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ..store.files import ReadOnlyStore, Store
from ..vault import Vault, validate_user_name
from .queries import TableQueries
from .state import TablesState

if TYPE_CHECKING:
    from ..settings import Settings
    from .changes import TableChanges

class TableService:
    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        store: Store,
        settings: Settings,
        warnings: list[str],
    ) -> None:
        self.state = TablesState(vault, validate_user_name(user), store, warnings, settings)
        self.queries = TableQueries(self.state)

    @cached_property
    def changes(self) -> TableChanges:
        from .changes import TableChanges  # not imported by the read-only fast path

        return TableChanges(self.state)

    @property
    def warnings(self) -> list[str]:
        return self.state.warnings

    def read_only(self) -> TableQueries:
        """The queries over a store that refuses writes (its own index handle, the same sink)."""
        state = self.state
        read_only = ReadOnlyStore(state.store)
        return TableQueries(TablesState(state.vault, state.user, read_only, state.warnings, state.settings))

    def close(self) -> None:
        self.state.close()
