"""Per-invocation state shared by the commands: global options, lazily opened vault and services."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..knowledge.service import KnowledgeService
from ..memory.service import MemoryService
from ..vault import Vault, locate_vault, resolve_user
from .output import report_warnings


@dataclass
class AppState:
    vault_option: str | None = None
    user_option: str | None = None
    json: bool = False
    _opened: tuple[Vault, str] | None = field(default=None, repr=False)
    # Warning lists of the services this run opened, printed before an error too.
    warning_lists: list[list[str]] = field(default_factory=list, repr=False)

    def open(self) -> tuple[Vault, str]:
        if self._opened is None:
            vault = locate_vault(self.vault_option, os.environ, Path.cwd())
            report_warnings(vault.config.warnings)  # unknown keys, ignored values: before anything else
            self._opened = vault, resolve_user(self.user_option, os.environ, vault.config)
        return self._opened

    def memory(self) -> MemoryService:
        vault, user = self.open()
        return MemoryService(vault, user)

    def knowledge(self) -> KnowledgeService:
        vault, user = self.open()
        service = KnowledgeService(vault, user)
        self.warning_lists.append(service.warnings)
        return service


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
