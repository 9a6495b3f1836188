"""JSON Schemas derived from types by pydantic: an operation's tool arguments, and a result's JSON.

A result is a NamedTuple whose fields are its JSON's keys (`jsonvalues.to_json`), or a type that
reshapes and declares its JSON as its `to_json`'s return type (a TypedDict). `json_type` turns
either into the TypedDict pydantic reads; pydantic writes the schema. Imported when a model loop,
the MCP server or the documentation needs schemas, never by the fast path.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from .registry import Argument, Operation


def type_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of the JSON of values of a Python type (see the module's docstring)."""
    import pydantic

    adapter = pydantic.TypeAdapter(json_type(kind))
    schema = adapter.json_schema(mode="serialization", schema_generator=_generator())
    return _inlined(schema, schema.pop("$defs", {}))


def _inlined(schema: dict[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    """schema with each `$ref` replaced by what it names (a document reads top to bottom, and some
    clients of tools follow no references; results hold no cycle), and without pydantic's titles
    (the Python names of the declarations, which say nothing to a reader of the JSON)."""
    if "$ref" in schema:
        return _inlined(definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions)
    tidy: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword == "properties":
            tidy[keyword] = {name: _inlined(part, definitions) for name, part in value.items()}
        elif keyword in ("anyOf", "prefixItems"):
            tidy[keyword] = [_inlined(part, definitions) for part in value]
        elif keyword in ("items", "additionalProperties") and isinstance(value, dict):
            tidy[keyword] = _inlined(value, definitions)
        elif keyword != "title":
            tidy[keyword] = value
    return tidy


@functools.cache
def _generator() -> Any:
    from pydantic.json_schema import GenerateJsonSchema

    class WithoutTitles(GenerateJsonSchema):
        """Pydantic's schemas, without a title for every key (its name says it already), in order."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

        def sort(self, value: Any, parent_key: Any = None) -> Any:
            return value  # in the order of the declaration: "type" first, keys as printed

    return WithoutTitles


def json_type(kind: Any) -> Any:
    """What the JSON of a value of type kind is, as a type pydantic reads: a result (a NamedTuple,
    or a type with `to_json`) becomes the TypedDict of its JSON, inside lists, unions and the rest."""
    if isinstance(kind, type) and (hasattr(kind, "to_json") or hasattr(kind, "_fields")):
        return _result_type(kind)
    origin, parts = typing.get_origin(kind), typing.get_args(kind)
    if typing.is_typeddict(kind) or typing.is_typeddict(origin):  # (origin: a generic one, given its types)
        declared = origin if origin is not None else kind
        given = dict(zip(getattr(declared, "__parameters__", ()), parts, strict=False))
        hints = {name: _given(hint, given) for name, hint in _hints(declared).items()}
        return _typed_dict(declared, hints, _required_keys(declared, hints))
    if origin is typing.Annotated or origin in (typing.Required, typing.NotRequired):
        return json_type(parts[0])
    if origin is typing.Literal or not parts:
        return kind
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, [json_type(part) for part in parts])  # a | b | …
    if origin is Sequence:
        origin = list
    elif origin is Mapping:
        origin = dict
    return origin[tuple(json_type(part) if part is not Ellipsis else part for part in parts)]


@functools.cache
def _result_type(kind: type) -> Any:
    """A result's JSON as a TypedDict, made once per result type (pydantic then reuses its schema
    wherever the type appears: a record inside a recall, a save, a revert)."""
    if hasattr(kind, "to_json"):
        return json_type(_to_json_type(kind))
    return _typed_dict(kind, _hints(kind), set(kind._fields))  # type: ignore[attr-defined]


def _typed_dict(kind: type, hints: Mapping[str, Any], required: set[str]) -> Any:
    import typing_extensions  # pydantic reads only its TypedDict on Python 3.11

    kept, optional = typing_extensions.Required, typing_extensions.NotRequired
    fields = {name: (kept if name in required else optional)[json_type(hint)] for name, hint in hints.items()}
    return typing_extensions.TypedDict(kind.__name__, fields)  # type: ignore[operator]


def _hints(kind: Any) -> dict[str, Any]:
    """A class's annotations as types, read with the names its module imports under
    `if TYPE_CHECKING:` when the module's own names do not resolve them."""
    try:
        return typing.get_type_hints(kind, include_extras=True)
    except NameError:
        return typing.get_type_hints(kind, localns=_checking_names(kind.__module__), include_extras=True)


def _to_json_type(kind: type) -> Any:
    """The type a reshaping result's `to_json` declares it returns."""
    method = kind.to_json  # type: ignore[attr-defined]
    try:
        hints = typing.get_type_hints(method)
    except NameError:
        hints = typing.get_type_hints(method, localns=_checking_names(kind.__module__))
    return hints.get("return", Any)


def _given(hint: Any, given: Mapping[Any, Any]) -> Any:
    """hint with the type variables of a generic TypedDict replaced by the types it was given."""
    if hint in given:
        return given[hint]
    variables = getattr(hint, "__parameters__", ())
    return hint[tuple(given.get(variable, Any) for variable in variables)] if variables else hint


def _required_keys(kind: Any, hints: Mapping[str, Any]) -> set[str]:
    """A TypedDict's required keys. Python 3.11 reads `Required[…]` and `NotRequired[…]` only in
    annotations that are not strings (`from __future__ import annotations` makes them all strings),
    so `__required_keys__` follows `total` alone: the qualifiers are applied here."""
    required = set(kind.__required_keys__)
    for name, hint in hints.items():
        if typing.get_origin(hint) is typing.NotRequired:
            required.discard(name)
        elif typing.get_origin(hint) is typing.Required:
            required.add(name)
    return required


def argument_schema(argument: Argument) -> dict[str, Any]:
    """One argument as a model's tool declares it."""
    param = argument.param
    schema = dict(param.tool_schema) if param.tool_schema is not None else _without_null(argument.type)
    if schema.get("type") == "integer":
        if param.minimum is not None:
            schema.setdefault("minimum", param.minimum)
        if param.maximum is not None:
            schema.setdefault("maximum", param.maximum)
    if param.help and "description" not in schema:
        schema["description"] = param.help
    return schema


def _without_null(kind: Any) -> dict[str, Any]:
    """An optional argument's schema is its value's: a model leaves it out rather than send null."""
    schema = type_schema(kind)
    options = schema.get("anyOf")
    if options and options[-1] == {"type": "null"}:
        return dict(options[0])
    return schema


def input_schema(op: Operation) -> dict[str, Any]:
    """The JSON Schema of the operation's tool arguments (an object)."""
    offered = [argument for argument in op.arguments if argument.param.model]
    return {
        "type": "object",
        "properties": {argument.tool_name: argument_schema(argument) for argument in offered},
        "required": [argument.tool_name for argument in offered if argument.required],
    }


def output_schema(op: Operation) -> dict[str, Any]:
    """The JSON Schema of the operation's result, from its function's return type."""
    annotation = op.function.__annotations__.get("return", "Any")
    if isinstance(annotation, str):
        namespace = {**vars(typing), **op.function.__globals__, **_checking_names(op.function.__module__)}
        annotation = eval(annotation, namespace)  # noqa: S307 - the package's own source
    return type_schema(annotation)


@functools.cache
def _checking_names(module: str) -> Mapping[str, Any]:
    """The names a module imports under `if TYPE_CHECKING:` (its result types), imported now:
    the operations' modules import services only when they run, so start-up stays lean."""
    import ast
    import importlib
    import inspect

    source = importlib.import_module(module)
    tree = ast.parse(inspect.getsource(source))
    block = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    names: dict[str, Any] = {"__package__": source.__package__, "__name__": module}
    for node in block:
        exec(compile(ast.Module(node.body, []), module, "exec"), names)  # noqa: S102 - its own imports
    return names
