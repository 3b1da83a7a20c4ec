"""The folders are the layers: the pure ones import no I/O framework."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_rep"
#: folder -> top-level modules it must never import
FORBIDDEN = {
    "robotstxt": {"scrapy", "twisted", "asyncio"},
    "core": {"scrapy", "twisted", "asyncio"},
    "runtime": {"scrapy", "twisted"},
    "report": {"scrapy", "twisted"},
    "reference": {"scrapy", "twisted", "asyncio"},
}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path`` parsed once for all the checks here (each walks the whole tree)."""
    return ast.parse(path.read_text(), str(path))


@pytest.fixture(autouse=True, scope="module")
def _parsed_once() -> Iterator[None]:
    """The trees are large: kept for this module's checks only."""
    yield
    parsed.cache_clear()


def imported_tops(path: Path) -> set[str]:
    tops: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
            if node.module == "scrapy_rep":
                tops.update(f"scrapy_rep.{alias.name}" for alias in node.names)
    return tops


def scrapy_rep_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("scrapy_rep")
        ):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("scrapy_rep"))
    return found


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_layer_imports_no_framework(folder: str) -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(imported_tops(path) & FORBIDDEN[folder])
        for path in sorted((PACKAGE / folder).rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_lower_layers_never_import_upper_ones(folder: str) -> None:
    upper = {"scrapy_rep.crawl", "scrapy_rep.cli", "scrapy_rep.addon"}
    if folder in {"robotstxt", "core"}:
        upper.add("scrapy_rep.runtime")
    if folder == "robotstxt":
        upper.add("scrapy_rep.core")
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            name
            for name in scrapy_rep_imports(path)
            if any(name == u or name.startswith(u + ".") for u in upper)
        )
        for path in sorted((PACKAGE / folder).rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import asyncio\nfrom scrapy.http import Request\n")
    assert {"asyncio", "scrapy"} <= imported_tops(bad)


def test_top_of_the_package_is_only_entry_points() -> None:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == {"__init__.py", "addon.py", "signals.py"}


TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path) -> set[str]:
    """The test modules (``test_*``, anywhere under tests/) that ``path`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):  # read once: not kept
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module if node.level == 0 else f"<relative>.{node.module}"
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found.update(n for n in names if any(p.startswith("test_") for p in n.split(".")))
    return found


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in tests/support/; a test module is imported only by pytest."""
    offenders = {
        str(path.relative_to(TESTS)): sorted(imported_test_modules(path))
        for path in sorted(TESTS.rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_a_test_module_imported(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("from tests.integration.test_y import helper\nimport tests.test_z\n")
    assert imported_test_modules(module) == {
        "tests.integration.test_y",
        "tests.integration.test_y.helper",
        "tests.test_z",
    }


def module_imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports, anywhere in it (in a function, under
    TYPE_CHECKING too): ``from a.b import c`` names ``a.b.c`` where that is a module."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= module_imports_of(node)
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = frozenset(module_name(p) for p in PACKAGE.rglob("*.py"))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that reach themselves again, one sorted list per group of them."""
    found: list[list[str]] = []
    for start in sorted(graph):
        around = {name for name in reach(graph, start) if start in reach(graph, name)}
        if start in around and not any(start in group for group in found):
            found.append(sorted(around))
    return found


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def package_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports, anywhere in it."""
    return {
        module_name(path): module_imports(path) - {module_name(path)}
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_the_package_has_no_import_cycle() -> None:
    """Imports flow one way through the whole package, counting every import (in a
    function, under TYPE_CHECKING): the engine's shared types with the compiler in
    robotstxt/intervals.py, below the sieve and the matcher; the service below the graph
    that builds it, and the components above both."""
    assert cycles(package_graph()) == []


#: what the crawl's object graph never imports, by any import: the classes Scrapy builds
#: sit above it, and the after-crawl tools and optional integrations apart from it
ABOVE_THE_CRAWL = (
    "scrapy_rep.components",
    "scrapy_rep.reference",
    "scrapy_rep.integrations",
    "scrapy_rep.report",
    "scrapy_rep.cli",
    "scrapy_rep.addon",
)


def test_the_crawl_never_imports_a_component_an_integration_or_a_tool() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            name for name in module_imports(path) if name.startswith(ABOVE_THE_CRAWL)
        )
        for path in sorted((PACKAGE / "crawl").rglob("*.py"))
    }
    assert {k: v for k, v in offenders.items() if v} == {}


#: (importer, imported) -> the optional dependency that keeps the import in a function
FUNCTION_LEVEL = {
    ("scrapy_rep.runtime.store.factory", "scrapy_rep.runtime.store.redis"): "redis",
    ("scrapy_rep.cli.store", "scrapy_rep.runtime.store.redis"): "redis",
    ("scrapy_rep.crawl.held_records", "scrapy_rep.runtime.store.held"): "scrapy-redis, redis",
    # sqlite3 is a standard module that some Python builds leave out; only a JOBDIR or
    # REP_STORE = "sqlite" needs it
    ("scrapy_rep.runtime.store.factory", "scrapy_rep.runtime.store.sqlite"): "sqlite3",
    ("scrapy_rep.cli.store", "scrapy_rep.runtime.store.sqlite"): "sqlite3",
    # the scrapy-rep command runs without importing Scrapy (or a reactor) but for the
    # subcommands that crawl or read a project's settings
    ("scrapy_rep.cli.recheck", "scrapy_rep.cli.recheck_crawl"): "scrapy (a crawl)",
    ("scrapy_rep.cli.describe", "scrapy_rep.addon"): "scrapy (a project's settings)",
    ("scrapy_rep.integrations.wiring", "scrapy_rep.integrations.monitors"): "spidermon",
    ("scrapy_rep.cli.describe", "scrapy_rep.cli.recheck_crawl"): "scrapy (a project's settings)",
}


def function_level_imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports inside a function body."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found |= module_imports_of(inner)
    return found


def module_imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.startswith("scrapy_rep")}
    """The package's modules an import statement names: ``from a.b import c`` names
    ``a.b.c`` where that is a module (``a.b`` is then only its parent package), else ``a.b``."""
    module = node.module or ""
    if not module.startswith("scrapy_rep"):
        return set()
    submodules = {f"{module}.{a.name}" for a in node.names} & MODULES
    names_more = len(submodules) < len(node.names)
    return submodules | ({module} & MODULES if names_more else set())


def test_a_function_level_import_is_kept_for_an_optional_dependency() -> None:
    """Imports of the package's own modules are at the top of a module, but where an
    optional dependency requires them in a function (named in :data:`FUNCTION_LEVEL`)."""
    found = {
        (module_name(path), imported)
        for path in sorted(PACKAGE.rglob("*.py"))
        for imported in function_level_imports(path)
    }
    assert found - FUNCTION_LEVEL.keys() == set()
    assert FUNCTION_LEVEL.keys() - found == set()  # an entry no longer needed goes


def test_the_check_sees_a_function_level_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from scrapy_rep.crawl import graph\n")
    assert function_level_imports(module) == {"scrapy_rep.crawl.graph"}


def test_the_check_sees_an_import_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
