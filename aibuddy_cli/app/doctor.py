"""`aibuddy doctor`'s checks: whether this vault, as this user sees it, is ready to work.

One `Check` per thing a person would otherwise find out the hard way: the vault (and how it was
found), the user, the configuration (unknown keys named), where the files are kept (whether a
database that keeps them answers), git's merge driver, whether git tracks the derived cache,
each model role's model (asked for one
token, within a bound), the model worker, the derived indexes (SQLite's own check) and the memory
records (malformed ones named). Nothing here prints or repairs: the front
end shows the lines, and a check that fails says what to run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .session import Session

# A model check waits at most this long for an answer (its own timeout if shorter); litellm's
# one-time import is bounded apart, by the import timeout.
MODEL_CHECK_SECONDS = 10.0


class Check(NamedTuple):
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name}: {self.detail}"


def checks(session: Session, vault_from: str, user_from: str) -> list[Check]:
    """Every check, in the order a person reads them. vault_from, user_from: how the front end
    found them ("--vault", "AIBUDDY_VAULT", …)."""
    return [
        Check("vault", True, f"{session.vault.root} ({vault_from})"),
        Check("user", True, f"{session.user} ({user_from})"),
        config_check(session),
        store_check(session),
        merge_driver_check(session.vault.root),
        cache_check(session.vault.root),
        *model_checks(session),
        worker_check(session.settings.environ),
        watch_check(session),
        *index_checks(session),
        memory_check(session),
        secrets_check(),
    ]


def config_check(session: Session) -> Check:
    from ..config import CONFIG_FILE

    problems = session.vault.config.warnings
    if not problems:
        return Check("configuration", True, f"{CONFIG_FILE} is valid")
    return Check("configuration", False, "; ".join(problems))


def store_check(session: Session) -> Check:
    """Where the vault's files are kept, and whether a database that keeps them answers."""
    from ..errors import AibuddyError
    from ..store.postgres import PgStore

    if not isinstance(session.store, PgStore):
        team = session.vault.config.team_vault
        where = "the shared folder and your personal vault" if team else "the folder"
        return Check("store", True, "files in " + where)
    try:
        return Check("store", True, session.store.summary())
    except AibuddyError as error:
        return Check("store", False, error.message)


def merge_driver_check(root: Path) -> Check:
    from .merge_driver import driver_registered

    registered = driver_registered(root)
    if registered is None:
        return Check(
            "merge driver", True, "not a git repository, or its .gitattributes names no aibuddy driver"
        )
    if registered:
        return Check("merge driver", True, "git knows the aibuddy merge driver")
    return Check(
        "merge driver",
        False,
        "this clone's git config lacks the aibuddy merge driver: run `aibuddy git setup`",
    )


def cache_check(root: Path) -> Check:
    """Whether git tracks anything under .aibuddy (forced in, or committed by an older set-up):
    aibuddy's indexes and logs, copies of the vault's text, would then go with the next commit."""
    import subprocess

    from ..vault import CACHE_DIR

    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", CACHE_DIR], capture_output=True, text=True
        )
    except OSError:
        listed = None
    if listed is None or listed.returncode != 0:
        return Check("derived cache", True, f"{root / CACHE_DIR} (not in a git repository)")
    files = [name for name in listed.stdout.split("\0") if name]
    if not files:
        return Check("derived cache", True, f"{root / CACHE_DIR}, which git does not track")
    return Check(
        "derived cache",
        False,
        f"git tracks {len(files)} file(s) of {CACHE_DIR} ({files[0]}{', …' if len(files) > 1 else ''}), "
        f"where aibuddy keeps indexes and logs of your text: `git rm -r --cached {CACHE_DIR}` and commit",
    )


def model_checks(session: Session) -> list[Check]:
    """One check per role: unset is fine (the deterministic path runs); a set model must answer.
    Roles that share a model and endpoint are asked once."""
    from ..config import ROLES
    from ..errors import ModelError
    from ..models.calls import complete
    from ..models.roles import model_settings

    found: list[Check] = []
    asked: dict[tuple[str | None, str | None], Check] = {}
    for role in ROLES:
        settings = model_settings(role, session.vault.config.models, session.settings)
        name = f"model for {role}"
        if not settings.configured:
            found.append(Check(name, True, "none set: the deterministic path runs"))
            continue
        if settings.problem is not None:
            found.append(Check(name, False, settings.problem))
            continue
        key = (settings.model, settings.api_base)
        if key not in asked:
            bounded = settings._replace(timeout=min(settings.timeout, MODEL_CHECK_SECONDS))
            try:
                complete(bounded, [{"role": "user", "content": "Reply with OK."}], max_tokens=1)
                asked[key] = Check(name, True, f"{settings.model} answers")
            except ModelError as error:
                asked[key] = Check(name, False, f"{settings.model}: {error}")
        found.append(asked[key]._replace(name=name))
    return found


def worker_check(environ: Mapping[str, str]) -> Check:
    from ..errors import AibuddyError
    from ..models import worker

    try:
        status = worker.status(environ)
    except AibuddyError as error:
        return Check("model worker", False, error.message)
    if status.running:
        return Check("model worker", True, f"running (pid {status.pid}, {status.calls} calls)")
    return Check("model worker", True, "not running (the next model call starts one)")


def watch_check(session: Session) -> Check:
    """The vault's watch process (store/watch_client.py): off, running, or started by the next walk of a
    big folder."""
    from ..store.watch_client import status
    from ..unix_peer import PeerUnavailable

    chosen = session.settings.watch or session.vault.config.indexes.watch
    if chosen == "off":
        return Check("watch process", True, "off ([indexes] watch or AIBUDDY_WATCH)")
    try:
        found = status(session.settings.environ, session.vault.root)
    except PeerUnavailable as error:
        return Check("watch process", False, str(error))
    if found.running:
        return Check("watch process", True, f"running (pid {found.pid}, {found.folders} folders watched)")
    return Check("watch process", True, f"not running ({chosen}: the next walk of a big folder starts one)")


def index_checks(session: Session) -> list[Check]:
    """SQLite's quick_check of each derived index that exists; a damaged one is safe to delete."""
    vault = session.vault
    found = []
    for what, path in (
        ("memory index", vault.memory_index_path(session.user)),
        ("knowledge index", vault.knowledge_index_path()),
        ("tables index", vault.tables_index_path()),
    ):
        if not path.exists():
            found.append(Check(what, True, "not built yet (the first command that needs it builds it)"))
            continue
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
                verdict = db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.Error as error:
            verdict = str(error)
        if verdict == "ok":
            found.append(Check(what, True, f"{path} is sound"))
        else:
            found.append(
                Check(what, False, f"{path}: {verdict}; it is only a cache: delete it, it is rebuilt")
            )
    return found


def secrets_check() -> Check:
    """The detector every automatic write and `aibuddy scan` share: a platform the rule catalogue
    has no build for still redacts, from the common providers' prefixes only, and is told so."""
    from ..redaction.catalog import about

    loaded, what = about()
    if loaded:
        return Check("secret detector", True, f"{what}, and aibuddy's rules for named values")
    return Check(
        "secret detector", False,
        f"the rule catalogue cannot be loaded here ({what}): provider keys are recognised by the common "
        "prefixes only; install kingfisher-secret-scanner where it has a build",
    )  # fmt: skip


def memory_check(session: Session) -> Check:
    from ..errors import AibuddyError

    try:
        listed = session.memory.list_records()
    except AibuddyError as error:
        return Check("memory records", False, error.message)
    records, problems = listed.records, listed.problems
    if not problems:
        return Check("memory records", True, f"{len(records)} readable")
    named = ", ".join(f"{p.name} ({p.message})" for p in problems[:5]) + (", …" if len(problems) > 5 else "")
    return Check("memory records", False, f"{len(records)} readable, {len(problems)} not: {named}")
