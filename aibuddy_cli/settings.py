"""The environment's settings, each read once: a flag wins over the environment, which wins over
aibuddy.toml.

`VARIABLES` declares every `AIBUDDY_*` variable once: its name, what it sets and the aibuddy.toml
key it stands over; `aibuddy --help` and the documentation list them from here. `Settings.read`
reads them all, once per session (`app.session`), and the services are handed the result: no
other module looks a variable up. The model layer alone also keeps the environment itself
(`Settings.environ`), which litellm reads provider keys and bases from and a model worker is
started with; a process aibuddy starts inherits it too.

Kept cheap to import: every command reads its settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from .config import FLAG, ROLES, TABLES


class Variable(NamedTuple):
    name: str  # <ROLE> or <CATEGORY>: one variable per role or category
    help: str
    overrides: str = ""  # the aibuddy.toml key it stands over


CATEGORIES = tuple(s.name for t in TABLES if t.name == "consolidation" for s in t.settings if s.kind is FLAG)


def _upper(names: tuple[str, ...]) -> str:
    return ", ".join(name.upper() for name in names)


VARIABLES = (
    Variable("AIBUDDY_VAULT", "the vault folder, without --vault (else the nearest aibuddy.toml above)"),
    Variable("AIBUDDY_USER", "the user, without --user", "default_user"),
    Variable("AIBUDDY_PERSONAL_VAULT", "a team vault's personal folder"),
    Variable("AIBUDDY_STORE_URL", "a postgresql:// URL serving the vault's files", "[store] url"),
    Variable("AIBUDDY_MODEL", "every role's model", "[models] default"),
    Variable("AIBUDDY_MODEL_<ROLE>", f"one role's model ({_upper(ROLES)})", "[models] <role>"),
    Variable("AIBUDDY_TIMEOUT", "seconds for a model's answer", "[models] timeout"),
    Variable("AIBUDDY_IMPORT_TIMEOUT", "seconds for litellm's import (120)"),
    Variable("AIBUDDY_WORKER", "0: no model worker; any other value: always one"),
    Variable("AIBUDDY_WORKER_IDLE", "seconds an unused model worker stays up", "[models] keep_worker"),
    Variable("AIBUDDY_WATCH", "auto, on or off (also 1, 0): the vault's watch process", "[indexes] watch"),
    Variable("AIBUDDY_WATCH_IDLE", "seconds the watch process stays up without a question (1800)"),
    Variable(
        "AIBUDDY_CONSOLIDATE_<CATEGORY>",
        f"0 or 1: a consolidation category off or on ({_upper(CATEGORIES)})",
        "[consolidation] <category>",
    ),
)
_WATCH_MODES = {"auto": "auto", "on": "on", "off": "off", "1": "on", "0": "off", "true": "on", "false": "off"}


def help_lines() -> list[str]:
    """The variables as `aibuddy --help` and the documentation list them."""
    return [
        f"{variable.name}: {variable.help}" + (f" (over {variable.overrides})" if variable.overrides else "")
        for variable in VARIABLES
    ]


class Settings(NamedTuple):
    """What the environment sets, read once. Values are as given (None: not set) unless a field
    says how it is read; the services combine them with aibuddy.toml (`Config`)."""

    environ: Mapping[str, str]  # the environment itself: for litellm, a model worker, a child process
    process: bool  # it is this process's own (what the `aibuddy` command runs in), not a mapping built
    vault: str | None = None
    user: str | None = None
    personal_vault: str | None = None
    store_url: str | None = None
    model: str | None = None  # every role's (AIBUDDY_MODEL)
    role_models: Mapping[str, str] = MappingProxyType({})  # role -> AIBUDDY_MODEL_<ROLE>
    timeout: str | None = None  # (checked with the role's settings, which name a bad value's source)
    import_timeout: str | None = None
    # Whether model calls go through a worker: AIBUDDY_WORKER "0" never, any other value always;
    # unset, only from the process's own environment (a worker serves the environment it was started
    # with, and litellm, in this process, reads the process's).
    worker: bool = False
    worker_idle: float | None = None  # None: unset or not a number (the worker derives its own)
    watch: str | None = None  # "auto", "on" or "off"; None: unset or none of them
    watch_idle: str | None = None
    consolidate: Mapping[str, bool] = MappingProxyType({})  # category -> on, for each 0 or 1 given

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings of environ (None: this process's environment)."""
        process = environ is None or environ is os.environ
        given: Mapping[str, str] = os.environ if environ is None else environ
        worker = given.get("AIBUDDY_WORKER")
        return cls(
            environ=given,
            process=process,
            vault=given.get("AIBUDDY_VAULT"),
            user=given.get("AIBUDDY_USER"),
            personal_vault=given.get("AIBUDDY_PERSONAL_VAULT"),
            store_url=given.get("AIBUDDY_STORE_URL"),
            model=given.get("AIBUDDY_MODEL"),
            role_models=MappingProxyType(
                {role: given[name] for role in ROLES if (name := f"AIBUDDY_MODEL_{role.upper()}") in given}
            ),
            timeout=given.get("AIBUDDY_TIMEOUT"),
            import_timeout=given.get("AIBUDDY_IMPORT_TIMEOUT"),
            worker=worker != "0" if worker is not None else process,
            worker_idle=_seconds(given.get("AIBUDDY_WORKER_IDLE")),
            watch=_WATCH_MODES.get(given.get("AIBUDDY_WATCH", "").strip().lower()),
            watch_idle=given.get("AIBUDDY_WATCH_IDLE") or None,
            consolidate=MappingProxyType(
                {
                    category: value == "1"
                    for category in CATEGORIES
                    if (value := given.get(f"AIBUDDY_CONSOLIDATE_{category.upper()}")) in ("0", "1")
                }
            ),
        )

    def for_child(self) -> dict[str, str]:
        """The environment of a process aibuddy starts: this one's, or, for a mapping a library
        caller or test built (which holds what it changes), that mapping over this process's."""
        return dict(self.environ) if self.process else {**os.environ, **self.environ}

    def __repr__(self) -> str:  # never the environment's values (provider keys)
        shown = (f"{name}={value!r}" for name, value in self._asdict().items() if name != "environ")
        return f"Settings(environ=<{len(self.environ)} variables>, {', '.join(shown)})"

    def with_models_off(self, *roles: str) -> Settings:
        """These settings with the model of each role switched off (as AIBUDDY_MODEL_<ROLE>=none)."""
        off = MappingProxyType({**self.role_models, **dict.fromkeys(roles, "none")})
        return self._replace(role_models=off)


def _seconds(raw: str | None) -> float | None:
    try:
        return max(float(raw), 0.0) if raw is not None else None
    except ValueError:
        return None
