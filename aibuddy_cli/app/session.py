"""The composition root: one user working in one vault.

A `Session` builds each service once, on first use, over one store, and gives them one warnings
sink; it closes the SQLite handles they opened. Every front end holds one: the Typer app
(`cli/context.AppState`), the fast path, and whatever serves agents or runs in the background.
Front ends compose; services own the behaviour and never print. This is the one place that
reads the environment's settings (`settings.Settings`, once) and chooses the store: a service
takes its store, settings and sink as required arguments and never builds its own.

The store is the vault's folder, or, in a team vault (`[teams.*]` in aibuddy.toml), that folder
composed with the user's personal vault (`team.compose`: the user's memory, tasks, personal
documents and tables never enter the folder the team's git remote receives). Every front end
gets the same composition because it is made here. What the services noticed on
the way (a damaged task file, a model that failed and was replaced by its fallback, a new file
in the knowledge folders) lands in `warnings`, and the front end reports it once with
`take_warnings()`, before its answer or its error.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..settings import Settings
from ..store.files import FileStore, Store, WalkableStore
from ..vault import Vault, locate_vault, resolve_user, validate_user_name

if TYPE_CHECKING:
    from ..knowledge.service import KnowledgeService
    from ..memory.service import MemoryService
    from ..store.folder_watch import Watch
    from ..tables.service import TableService
    from ..tasks.consolidation import Consolidator
    from ..tasks.context import ContextAssembler
    from ..tasks.service import TaskService
    from ..tokens import TokenService
    from .team import Adopted


def database_store(vault: Vault, settings: Settings) -> WalkableStore | None:
    """The database that serves the vault's files (AIBUDDY_STORE_URL, else `[store] url`), if any."""
    url = settings.store_url or vault.config.store.url
    if not url:
        return None
    from ..store.postgres import shared_store

    return shared_store(url)


def _remote_watch(vault: Vault, settings: Settings) -> Watch | None:
    """A one-shot command's watch: the vault's watch process, asked over its socket (store.watch_client),
    unless AIBUDDY_WATCH, else `[indexes] watch`, is "off"."""
    from ..store.watch_client import MIN_FILES, RemoteWatch

    chosen = settings.watch or vault.config.indexes.watch
    if chosen == "off":
        return None
    return RemoteWatch(vault.root, settings, 0 if chosen == "on" else MIN_FILES)


class Session:
    def __init__(
        self,
        vault: Vault,
        user: str,
        *,
        environ: Mapping[str, str] | None = None,
        settings: Settings | None = None,
        store: Store | None = None,
        warnings: list[str] | None = None,
        watch: Watch | None = None,
    ) -> None:
        """settings: the environment's, read (else read here from environ: None, the process's);
        warnings: the sink to use as it is (else a new one holding the config file's warnings);
        watch: a long-lived process's, so the vault's folders need no scan to tell what changed."""
        self.vault = vault
        self.user = validate_user_name(user)
        self.settings = Settings.read(environ) if settings is None else settings
        # The one sink: appended to by every service, never rebound (they hold on to it).
        self.warnings: list[str] = list(vault.config.warnings) if warnings is None else warnings
        if store is None:
            store = database_store(vault, self.settings)
        if store is None and watch is None:
            watch = _remote_watch(vault, self.settings)
        # In a team vault: what the composition moved into the personal vault (`team.compose`).
        self.adopted: Adopted | None = None
        if store is None and vault.config.team_vault:
            from .team import compose

            store, self.adopted = compose(vault, self.user, self.settings, self.warnings, watch)
        self.store: Store = store or FileStore(vault.root, vault.locks_dir(), watch)

    @classmethod
    def locate(
        cls,
        vault: str | None,
        user: str | None,
        *,
        environ: Mapping[str, str] | None = None,
        settings: Settings | None = None,
        cwd: Path | None = None,
        warnings: list[str] | None = None,
        watch: Watch | None = None,
    ) -> Session:
        """The vault and user a command names: --vault, then AIBUDDY_VAULT, then the nearest
        aibuddy.toml above cwd; --user, then AIBUDDY_USER, then the vault's default_user.

        The config file's warnings go first into `warnings` (the sink the session then uses),
        before the user is resolved: a front end that passes its own sink reports them even
        when no user can be found."""
        settings = Settings.read(environ) if settings is None else settings
        sink: list[str] = [] if warnings is None else warnings
        found = locate_vault(vault, settings, Path.cwd() if cwd is None else cwd)
        sink.extend(found.config.warnings)
        from .merge_driver import setup_hint

        hint = setup_hint(found.root)
        if hint is not None:
            sink.append(hint)
        user = resolve_user(user, settings, found.config)
        return cls(found, user, settings=settings, warnings=sink, watch=watch)

    def take_warnings(self) -> list[str]:
        """The warnings so far, once: the sink is emptied."""
        taken = list(self.warnings)
        self.warnings.clear()
        return taken

    # --- services, built once and sharing the store and the sink -----------------------

    @cached_property
    def memory(self) -> MemoryService:
        from ..memory.service import MemoryService

        return MemoryService(
            self.vault, self.user, store=self.store, settings=self.settings, warnings=self.warnings
        )

    @cached_property
    def tasks(self) -> TaskService:
        from ..tasks.service import TaskService

        return TaskService(self.vault, self.user, store=self.store, warnings=self.warnings)

    @cached_property
    def knowledge(self) -> KnowledgeService:
        from ..knowledge.service import KnowledgeService

        return KnowledgeService(
            self.vault,
            self.user,
            store=self.store,
            settings=self.settings,
            tasks=self.tasks,
            warnings=self.warnings,
        )

    @cached_property
    def tables(self) -> TableService:
        from ..tables.service import TableService

        return TableService(
            self.vault, self.user, store=self.store, warnings=self.warnings, settings=self.settings
        )

    @cached_property
    def tokens(self) -> TokenService:
        from ..tokens import TokenService

        return TokenService(self.vault, self.user, self.store)

    @cached_property
    def consolidation(self) -> Consolidator:
        from ..tasks.consolidation import Consolidator

        return Consolidator(self.tasks, self.memory, lambda: self.tables, self.settings)

    @cached_property
    def context(self) -> ContextAssembler:
        from ..tasks.context import ContextAssembler

        return ContextAssembler(self.tasks, self.memory, self.knowledge)

    # --- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the SQLite handles the services opened (they open again on next use)."""
        built = self.__dict__
        if "knowledge" in built:
            self.knowledge.close()
        if "memory" in built:
            self.memory.close()
        if "tables" in built:
            self.tables.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
