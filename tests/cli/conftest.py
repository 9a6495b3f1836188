"""The command-line tests' own fixtures (the shared ones are tests/conftest.py's)."""

from __future__ import annotations

import pytest
from helpers import STRINGS, published

from aibuddy_cli.app.session import Session
from aibuddy_cli.vault import Vault


@pytest.fixture
def kb_vault(vault: Vault) -> Vault:
    """The test vault with system/ch08-02-strings published and task t1 using it."""
    published(Session(vault, "demo", environ={}).knowledge, STRINGS)
    tasks = Session(vault, "demo").tasks
    tasks.set_attached(tasks.new("strings").id, {"system/ch08-02-strings": True})
    return vault
