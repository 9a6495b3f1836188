"""Shared by the tests of test_mcp_http and those that build on them."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any


class HttpServer:
    """`aibuddy mcp --http 127.0.0.1:0 …` as a child process; its URL is the one it prints."""

    def __init__(self, aibuddy_exe: list[str], env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [*aibuddy_exe, "mcp", "--http", "127.0.0.1:0", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        self.first_line = self.process.stderr.readline()
        assert "serving MCP at http://" in self.first_line, self.first_line
        self.url = self.first_line.split("serving MCP at ", 1)[1].split(" ", 1)[0]

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, rest = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, rest = self.process.communicate()
        return self.first_line + rest


def with_client(url: str, token: str, body: Callable[[Any], Awaitable[Any]], mode: str = "auto") -> Any:
    """body with the SDK's client of url, the token in every request's Authorization header."""

    async def main() -> Any:
        return await client_session(url, token, body, mode)

    return asyncio.run(main())


def answer(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def client_session(
    url: str, token: str, body: Callable[[Any], Awaitable[Any]], mode: str = "auto"
) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            return await body(client)
