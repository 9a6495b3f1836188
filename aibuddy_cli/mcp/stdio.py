"""The MCP server's stdio transport: the SDK's, with every line the client sends answered.

The SDK's stdio reader passes a line it cannot read as a JSON-RPC message (not JSON, or text that
is not valid Unicode: a lone surrogate such as `"\\ud800"`, which its JSON parser refuses) to the
server as an exception, and the server drops it: the client would wait for an answer forever.
`AnsweredReads` stands between the two and answers such a line itself, as JSON-RPC 2.0 says:

- a line that is not JSON: parse error (-32700) with id null;
- JSON that is not one request or notification: invalid request (-32600), to its id if it has one
  (id null when its id is no string or integer: over HTTP, see answer_to; the SDK's stdio reader
  takes such a line for a notification);
- a `tools/call` whose arguments hold a lone surrogate: a tool error (the model can resend the
  argument), the CLI's error document as for any refused call;
- any other request holding one: invalid params (-32602), to its id.

A notification (or a response) is never answered; it is noted on stderr.

When the client closes its input, the requests it sent are still answered: the end of the input
reaches the server only once every request handed to it has its answer written (or was
cancelled by the client, which JSON-RPC leaves unanswered). The SDK would otherwise cancel them,
answering -32000 "Connection closed" or nothing. (aibuddy's server never asks the client
anything, so no request waits on input that can no longer come.)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from types import TracebackType
from typing import Any

from ..errors import InvalidInput

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # what JSON's \u escapes can make and UTF-8 cannot hold


def surrogate_at(value: Any) -> str | None:
    """The dotted path of a string (a key or a value) in value that holds a lone surrogate, "" for
    value itself; None when none does."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{key}" if path else str(key)
                if _LONE_SURROGATE.search(key):
                    return where
                stack.append((where, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def _shown(text: str) -> str:
    """text with what is not ASCII (a lone surrogate above all) as backslash escapes."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def valid_id(message: dict[str, Any]) -> str | int | None:
    """The message's id when it is one a request may have (a string or an integer), else None."""
    found = message.get("id")
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _unreadable(problem: Exception) -> Any:
    """What the client sent, as far as the SDK's reader kept it: the line (a string) when it was
    no JSON to its parser, else the parsed value; None when the exception does not say."""
    errors = getattr(problem, "errors", None)
    try:
        found = errors()[0].get("input") if callable(errors) else None
    except (IndexError, AttributeError, TypeError):
        return None
    return found


def _error(request_id: str | int | None, code: int, message: str) -> Any:
    from mcp_types import ErrorData, JSONRPCError

    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def answer_for(problem: Exception) -> Any:
    """The JSON-RPC message (an mcp_types model) that answers a line the SDK could not read, or
    None when JSON-RPC wants no answer (a notification, a response)."""
    from mcp_types import PARSE_ERROR

    sent = _unreadable(problem)
    if sent is None or isinstance(sent, str):
        try:
            sent = json.loads(sent) if isinstance(sent, str) else None
        except (ValueError, RecursionError):
            sent = None
        if sent is None:
            return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    return answer_to(sent)


def answer_to(sent: Any) -> Any:
    """The answer to a message the SDK cannot take, given as the JSON value sent (see the module's
    docstring), or None when JSON-RPC wants none. A request whose id is no string or integer
    (null, true, 1.5, an object) is an invalid request answered with id null: its id cannot be
    named back, and MCP allows no other."""
    from mcp_types import INVALID_PARAMS, INVALID_REQUEST, CallToolResult, JSONRPCResponse, TextContent

    if not isinstance(sent, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message is one JSON-RPC 2.0 object")
    request_id, method = valid_id(sent), sent.get("method")
    if "method" not in sent and ("result" in sent or "error" in sent):
        return None  # a response to the server: never answered
    if "id" in sent and request_id is None:
        return _error(None, INVALID_REQUEST, "Invalid Request: a request's id is a string or an integer")
    where = surrogate_at(sent)
    if where is None or not isinstance(method, str):
        if "id" not in sent and isinstance(method, str):
            return None  # a notification that the SDK found malformed: nothing to answer
        return _error(request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request")
    if "id" not in sent:
        return None
    not_text = "is not valid Unicode text (it holds a lone surrogate, such as \\ud800): send it as UTF-8"
    arguments = "params.arguments."
    if method == "tools/call" and where.startswith(arguments) and request_id is not None:
        argument = where[len(arguments) :].split(".")[0].split("[")[0]
        document = {"error": InvalidInput(f"argument '{_shown(argument)}' {not_text}").to_json()}
        text = json.dumps(document)
        result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        wire = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=wire)
    return _error(request_id, INVALID_PARAMS, f"Invalid params: {_shown(where)} {not_text}")


class Unanswered:
    """The requests handed to the server that it has not answered yet, by id as the SDK pairs a
    request with its answer ("7" and 7 are one)."""

    def __init__(self) -> None:
        self.waiting: Counter[Any] = Counter()
        self.changed: Any = None  # an anyio.Event while the end of the input waits

    def handed(self, message: Any) -> None:
        """message, which the server is about to get: a request waits for its answer; a
        cancellation settles its request (it is never answered)."""
        from mcp.shared.dispatcher import as_request_id, coerce_request_id
        from mcp_types import JSONRPCNotification, JSONRPCRequest

        if isinstance(message, JSONRPCRequest):
            self.waiting[coerce_request_id(message.id)] += 1
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = as_request_id((message.params or {}).get("requestId"))
            if cancelled is not None:
                self.settled(cancelled)

    def settled(self, request_id: Any) -> None:
        from mcp.shared.dispatcher import coerce_request_id

        key = coerce_request_id(request_id)
        if self.waiting[key] > 0:
            self.waiting[key] -= 1
        if self.changed is not None:
            self.changed.set()

    async def none_left(self) -> None:
        import anyio

        while self.waiting.total():
            self.changed = anyio.Event()
            await self.changed.wait()


class NotedWrites:
    """The SDK's write stream, each answer it carries settling its request in unanswered."""

    def __init__(self, writes: Any, unanswered: Unanswered) -> None:
        self.writes, self.unanswered = writes, unanswered

    async def send(self, item: Any) -> None:
        from mcp_types import JSONRPCError, JSONRPCResponse

        await self.writes.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.unanswered.settled(message.id)

    async def aclose(self) -> None:
        await self.writes.aclose()

    async def __aenter__(self) -> NotedWrites:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()


class AnsweredReads:
    """The SDK's read stream with the lines it could not read answered (see the module's
    docstring) instead of handed on, and its end held back until every request handed on is
    answered (unanswered: see NotedWrites); the server sees only readable messages."""

    def __init__(self, reads: Any, writes: Any, unanswered: Unanswered | None = None) -> None:
        self.reads, self.writes = reads, writes
        self.unanswered = Unanswered() if unanswered is None else unanswered
        self.last_context: Any = None  # the sender's context of the last message, as the SDK's stream

    async def receive(self) -> Any:
        import anyio
        from mcp.shared.message import SessionMessage

        while True:
            try:
                item = await self.reads.receive()
            except anyio.EndOfStream:
                await self.unanswered.none_left()
                raise
            self.last_context = getattr(self.reads, "last_context", None)
            if not isinstance(item, Exception):
                self.unanswered.handed(item.message)
                return item
            reply = answer_for(item)
            if reply is None:
                dropped = "warning: an unreadable MCP notification or response was dropped"
                print(dropped, file=sys.stderr, flush=True)
                continue
            try:
                await self.writes.send(SessionMessage(reply))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the server is closing: no one reads the answer

    async def aclose(self) -> None:
        await self.reads.aclose()

    def __aiter__(self) -> AnsweredReads:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweredReads:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()


async def serve_stdio(app: Any) -> None:
    """Run app (an MCPServer) on stdin/stdout, as `MCPServer.run("stdio")` does, every line
    answered, also those still under way when the input ends."""
    from mcp.server.stdio import stdio_server

    server = getattr(app, "_lowlevel_server", None)  # what run("stdio") drives: no hook on its reads
    if server is None:  # an SDK that has it no more: its own stdio, which drops unreadable lines
        await app.run_stdio_async()
        return
    async with stdio_server() as (reads, writes):
        unanswered = Unanswered()
        noted = NotedWrites(writes, unanswered)
        answered = AnsweredReads(reads, noted, unanswered)
        await server.run(answered, noted, server.create_initialization_options())


def wire_json(document: Any) -> Any:
    """document as the JSON value a client receives as structured content (what `to_json` returns
    may hold tuples or paths, which JSON writes as lists and strings). A string UTF-8 cannot hold
    (a lone surrogate, from a file name's undecodable bytes) has it as "?" here; the text content
    keeps its exact \\u escape (json_text)."""
    value = json.loads(json.dumps(document, default=str))
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return _utf8(value)
    return value


def _utf8(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_utf8(item) for item in value]
    if isinstance(value, dict):
        return {_utf8(key): _utf8(item) for key, item in value.items()}
    return value


def json_text(document: Any, indent: int | None = None) -> str:
    """document as JSON text for the wire, which is UTF-8: a string that UTF-8 cannot hold (a lone
    surrogate, as a file name's undecodable bytes become) is sent as its \\u escape."""
    text = json.dumps(document, ensure_ascii=False, indent=indent, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(document, indent=indent, default=str)
    return text
