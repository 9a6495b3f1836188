"""The import structure of aibuddy_cli: no circles, and no module imports a floor above its own.

Every module is parsed with `ast` and every import counts: at the top of the file, inside
functions (a lazy import is still a dependency, only a later one) and under TYPE_CHECKING (an
annotation a reader follows is a dependency too; a type both sides need goes on a floor both
may import, as `knowledge/usable.py` and `models/roles.py` do). `from . import x` and
`from .x import y` count as imports of the modules x and x.y where those are modules.

The floors are the package's folders: FLOORS names them, top first, and a module's floor is its
folder's. The modules at the package's top (errors, vault, config, text, …) are the foundations,
except the few TOP_MODULES places elsewhere. A folder FLOORS does not name fails the test, so a new
folder is given its floor when it is made. A module may import its own floor and those below it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "aibuddy_cli"

# Top first: each floor's folders; the last floor also holds the modules at the package's top.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("front ends", ("cli", "mcp", "hooks", "ui")),
    # The registry of operations, from which the front ends are derived, and the model loops
    # whose tools are operations (each loop offers operations of the registry as its tools).
    ("operations", ("operations",)),
    # What builds the services for one vault and user, and what spans several of them.
    ("composition", ("app",)),
    ("task services", ("tasks",)),  # a task's context and consolidation use the other services
    ("services", ("memory", "knowledge", "tables")),
    ("model calls", ("models",)),
    ("foundations", ("store", "redaction", "git")),
)
# The modules at the package's top that are not foundations: the entry point, and the bearer
# tokens' service (one module, no folder of its own).
TOP_MODULES = {"__main__": "front ends", "tokens": "services"}

# Imports up a floor that are known and on their way out, (importer, imported): the test passes
# with them and fails on any other, and on an entry whose import is gone (so the list only
# shrinks). None is left.
KNOWN: set[tuple[str, str]] = set()


# --- the checker ---------------------------------------------------------------------------------


def module_files(package: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, whether it is a package's __init__)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        if is_init:
            parts.pop()
        modules[".".join(parts)] = (path, is_init)
    return modules


def imports_of(name: str, path: Path, is_init: bool, known: Iterable[str]) -> set[str]:
    """The package's modules that module name imports anywhere in its file."""
    known = set(known)
    top = name.split(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_init else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                member = f"{target}.{alias.name}"
                found.add(member if member in known else target)
    return {target for target in found if target.split(".")[0] == top and target != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_files(package)
    return {name: imports_of(name, path, is_init, modules) for name, (path, is_init) in modules.items()}


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules, as a path that ends where it starts
    (["a", "b", "a"]); [] when there is none. Tarjan's algorithm, without recursion."""
    edges = {node: sorted(set(targets) & set(graph)) for node, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, at = work.pop()
            if at == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if at < len(edges[node]):
                work.append((node, at + 1))
                target = edges[node][at]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges[node]:
                    groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(_circle(group, edges) for group in groups)


def _circle(group: list[str], edges: Mapping[str, list[str]]) -> list[str]:
    """A path from the group's first module back to it through the group (breadth first)."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in edges[node]:
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if target in members and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{group} is not a circle")  # a strongly connected group always is


def layer_of(
    module: str,
    floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS,
    top_modules: Mapping[str, str] = TOP_MODULES,
    folders: Iterable[str] | None = None,
) -> int | None:
    """The floor of module, 0 at the top: its folder's, or for a module at the package's top the
    last floor unless top_modules names another; None for a folder FLOORS does not name.
    folders: the package's folders (those of aibuddy_cli when None)."""
    rest = module.partition(".")[2]  # the name inside the package; "" for the package itself
    first = rest.partition(".")[0]
    names = [name for _, folder_names in floors for name in folder_names]
    known_folders = set(package_folders() if folders is None else folders)
    if first in known_folders or first in names:
        return next((floor for floor, (_, found) in enumerate(floors) if first in found), None)
    floor_names = [name for name, _ in floors]
    return floor_names.index(top_modules[first]) if first in top_modules else len(floors) - 1


def upward_imports(
    graph: Mapping[str, Iterable[str]],
    floor_of: Callable[[str], int | None] = layer_of,
    floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS,
) -> list[str]:
    """Each import of a module on a higher floor than the importer's, named with both floors."""
    found = []
    for module in sorted(graph):
        own = floor_of(module)
        for target in sorted(graph[module]):
            theirs = floor_of(target)
            if own is not None and theirs is not None and theirs < own:
                found.append(f"{module} ({floors[own][0]}) imports {target} ({floors[theirs][0]})")
    return found


# --- the checks on aibuddy_cli ------------------------------------------------------------------


@functools.cache
def package_folders() -> frozenset[str]:
    """aibuddy_cli's folders (its subpackages at the top)."""
    return frozenset(path.parent.name for path in PACKAGE.glob("*/__init__.py"))


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """aibuddy_cli's import graph, read once a process for the checks below (a second each)."""
    return import_graph()


def test_no_module_imports_itself_back_in_a_circle() -> None:
    cycles = find_cycles(package_graph())
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_every_folder_has_a_floor() -> None:
    named = {name for _, names in FLOORS for name in names}
    assert sorted(package_folders() - named) == [], f"add these folders to FLOORS in {Path(__file__).name}"
    assert sorted(named - package_folders()) == [], "FLOORS names folders the package does not have"
    unplaced = [module for module in package_graph() if layer_of(module) is None]
    assert unplaced == []


def test_the_top_of_the_package_is_a_few_modules() -> None:
    """The folders show the layers: what is loose at the top stays a handful of foundations."""
    loose = sorted(path.stem for path in PACKAGE.glob("*.py"))
    assert len(loose) < 20, loose
    assert set(TOP_MODULES) <= set(loose)


def test_no_module_imports_a_floor_above_its_own() -> None:
    graph = {
        module: {target for target in targets if (module, target) not in KNOWN}
        for module, targets in package_graph().items()
    }
    upward = upward_imports(graph)
    assert upward == [], "imports up a floor:\n" + "\n".join(upward)


def test_every_known_upward_import_still_exists() -> None:
    """An entry of KNOWN whose import is gone is taken out, so the list only shrinks."""
    graph = package_graph()
    gone = sorted(pair for pair in KNOWN if pair[1] not in graph.get(pair[0], set()))
    assert gone == [], f"no longer imported, remove from KNOWN: {gone}"


# --- the checker itself -------------------------------------------------------------------------


def test_the_checker_finds_a_circle_and_names_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # Two circles through one module are one group, named by one of them.
    (circle,) = find_cycles({"a": {"b", "c"}, "b": {"a"}, "c": {"a"}})
    assert circle[0] == circle[-1] == "a" and len(circle) == 3


def test_the_checker_reads_every_kind_of_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import low\n")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import thing\n"
    )
    (package / "high.py").write_text("def f():\n    from .sub.low import x\n    import pkg.low\n")
    (package / "sub" / "low.py").write_text("from ..high import f\n")
    graph = import_graph(package)
    assert graph == {
        "pkg": set(),
        "pkg.high": {"pkg.sub.low", "pkg.low"},
        "pkg.low": {"pkg.high"},
        "pkg.sub": {"pkg.sub.low"},
        "pkg.sub.low": {"pkg.high"},
    }
    assert find_cycles(graph) == [["pkg.high", "pkg.low", "pkg.high"]]


def test_the_checker_finds_an_import_up_a_floor() -> None:
    floors = (("top", ("cli",)), ("middle", ("memory",)), ("bottom", ()))
    folders = {"cli", "memory", "unplaced"}

    def floor_of(module: str) -> int | None:
        return layer_of(module, floors, {"main": "top"}, folders)

    assert floor_of("pkg.cli.app") == 0 and floor_of("pkg.memory.names") == 1
    assert floor_of("pkg") == 2 and floor_of("pkg.vault") == 2 and floor_of("pkg.main") == 0
    assert floor_of("pkg.unplaced.thing") is None  # a folder is given its floor when it is made
    graph = {
        "pkg.cli.app": {"pkg.memory.service", "pkg.vault"},
        "pkg.memory.service": {"pkg.vault", "pkg.cli.app"},
        "pkg.vault": {"pkg.memory.service"},
    }
    assert upward_imports(graph, floor_of, floors) == [
        "pkg.memory.service (middle) imports pkg.cli.app (top)",
        "pkg.vault (bottom) imports pkg.memory.service (middle)",
    ]
