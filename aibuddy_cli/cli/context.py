"""Per-invocation state of the Typer app: global options and the one Session they name."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..app.session import Session
from ..settings import Settings
from .output import report_warnings


@dataclass
class AppState:
    vault_option: str | None = None
    user_option: str | None = None
    json: bool = False
    # The process's environment, read here once for every command (the Session gets it too).
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    # The session's warnings sink, there before the session: the config file's warnings are
    # reported even when no user can be resolved, and whatever is left goes out before an error.
    warnings: list[str] = field(default_factory=list, repr=False)
    _session: Session | None = field(default=None, repr=False)

    @cached_property
    def settings(self) -> Settings:
        """What the environment sets, read once for the command (the Session gets them)."""
        return Settings.read(self.environ)

    def session(self) -> Session:
        if self._session is None:
            self._session = Session.locate(
                self.vault_option, self.user_option, settings=self.settings, warnings=self.warnings
            )
            self.report_warnings()  # unknown keys, ignored values: before anything else
        return self._session

    def report_warnings(self) -> None:
        """Print what the services noticed so far, once."""
        report_warnings(self.warnings)
        self.warnings.clear()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def state_of(ctx: Any, json_mode: bool = False) -> AppState:
    """The AppState of this run, remembering whether output is JSON (for error reporting)."""
    state = ctx.find_root().obj
    if not isinstance(state, AppState):
        state = AppState()
        ctx.find_root().obj = state
    state.json = state.json or json_mode
    return state


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()
