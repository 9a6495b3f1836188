"""Shared by the tests of test_table_loops and those that build on them."""

from __future__ import annotations

from scripted_model import ScriptedModel

from aibuddy_cli.app.session import Session
from aibuddy_cli.operations.loops.tables import TableAgent
from aibuddy_cli.vault import Vault

ENV = {"AIBUDDY_MODEL_TABLES": "openai/tables-test", "AIBUDDY_TIMEOUT": "30"}


def agent(vault: Vault, model: ScriptedModel, environ: dict[str, str] | None = None) -> TableAgent:
    session = Session(Vault.open(vault.root), "demo", environ=ENV if environ is None else environ)
    return TableAgent(session.tables, session.settings, connect=lambda settings: model)
