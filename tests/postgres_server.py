"""A throw-away PostgreSQL cluster for the tests: the Debian package's server, started as the
`postgres` account (initdb refuses root) on a Unix socket in a temporary folder, no TCP port; one
per pytest process, a new database per test. Skipped, with that reason, where no server binary
exists (`.ci/run` installs the package) or psycopg is not installed."""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class Cluster:
    def __init__(self, *, fsync: bool = False) -> None:
        """fsync: run the server with fsync on, as a real one is (the tests keep it off)."""
        folder = binaries()
        if folder is None:
            pytest.skip("no PostgreSQL server binary (apt-get install postgresql)")
        pytest.importorskip(
            "psycopg", reason="psycopg is not installed (pip install 'aibuddy-cli[postgres]')"
        )
        self.bin = folder
        self.fsync = fsync
        self.root = Path(tempfile.mkdtemp(prefix="aibuddy-pg-"))
        self.data, self.socket = self.root / "data", self.root
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if as_postgres:
            shutil.chown(self.root, "postgres")
        self.prefix = as_postgres
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self.numbers = itertools.count(1)

    def start(self) -> None:
        fsync = "on" if self.fsync else "off"
        options = f"-k {self.socket} -c listen_addresses='' -c fsync={fsync} -c max_connections=300"
        self.run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.prefix, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql:///{database}?host={self.socket}&user=postgres"

    def new_database(self) -> str:
        import psycopg

        name = f"t{os.getpid()}_{next(self.numbers)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
