"""The knowledge tests' own fixtures (the shared ones are tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibuddy_cli.vault import Vault, init_vault


@pytest.fixture
def kvault(tmp_path: Path) -> Vault:
    """A vault where alice is the admin and bob is not."""
    return init_vault(tmp_path / "kvault", "alice")
