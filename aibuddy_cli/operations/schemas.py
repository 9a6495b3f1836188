"""JSON Schemas derived from types: an operation's tool arguments, and a result's JSON.

A result type owns its JSON (`to_json`); its schema is that method's return type, a TypedDict
(or a list or mapping of them), read here. Types the derivation does not know become `{}` (any
value), never a guess. Imported when a model loop or the MCP server needs schemas, not by the
fast path.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from .registry import Argument, Operation

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of values of a Python type (see the module's docstring)."""
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    if kind is None or kind is type(None):
        return {"type": "null"}
    origin, parts = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:
        return type_schema(parts[0])
    if origin in (typing.Union, types.UnionType):
        options = [type_schema(part) for part in parts if part is not type(None)]
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        return {"anyOf": [schema, {"type": "null"}]} if type(None) in parts else schema
    if origin is typing.Literal:
        return {"enum": list(parts)}
    if origin is tuple and parts and parts[-1] is not Ellipsis:  # tuple[int, str]: a fixed array
        fields = [type_schema(part) for part in parts]
        return {"type": "array", "prefixItems": fields, "minItems": len(fields), "maxItems": len(fields)}
    if origin in (list, tuple, Sequence) or kind in (list, tuple):
        return {"type": "array", "items": type_schema(parts[0])} if parts else {"type": "array"}
    if origin in (dict, Mapping) or kind is dict:
        if len(parts) == 2 and parts[1] is not Any:
            return {"type": "object", "additionalProperties": type_schema(parts[1])}
        return {"type": "object"}
    if origin in (typing.Required, typing.NotRequired):
        return type_schema(parts[0])
    if typing.is_typeddict(kind) or typing.is_typeddict(origin):  # (origin: a generic one, given its types)
        declared = origin if origin is not None else kind
        hints = typing.get_type_hints(declared, include_extras=True)
        given = dict(zip(getattr(declared, "__parameters__", ()), parts, strict=False))
        hints = {name: _given(hint, given) for name, hint in hints.items()}
        return {
            "type": "object",
            "properties": {name: type_schema(hint) for name, hint in hints.items()},
            "required": sorted(_required_keys(declared, hints)),
        }
    if isinstance(kind, type) and hasattr(kind, "to_json"):
        return result_schema(kind)
    if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        # a NamedTuple without to_json is written by json as the array of its fields
        hints = typing.get_type_hints(kind)
        fields = [type_schema(hints.get(name, Any)) for name in kind._fields]
        return {"type": "array", "prefixItems": fields, "minItems": len(fields), "maxItems": len(fields)}
    return {}


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


def result_schema(kind: type) -> dict[str, Any]:
    """The schema of `kind(...).to_json()`, from that method's return type (read with the names
    its module imports under `if TYPE_CHECKING:`, where an operation's module declares its JSON)."""
    method = kind.to_json  # type: ignore[attr-defined]
    try:
        hints = typing.get_type_hints(method)
    except NameError:
        hints = typing.get_type_hints(method, localns=_checking_names(kind.__module__))
    return type_schema(hints.get("return", Any))


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


def _checking_names(module: str) -> dict[str, Any]:
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
