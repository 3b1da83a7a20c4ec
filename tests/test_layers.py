"""The folders are the layers: the pure ones import no I/O framework."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_rep"
#: folder -> top-level modules it must never import
FORBIDDEN = {
    "robotstxt": {"scrapy", "twisted", "asyncio"},
    "core": {"scrapy", "twisted", "asyncio"},
    "runtime": {"scrapy", "twisted"},
}


def imported_tops(path: Path) -> set[str]:
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
            if node.module == "scrapy_rep":
                tops.update(f"scrapy_rep.{alias.name}" for alias in node.names)
    return tops


def scrapy_rep_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
    upper = {"scrapy_rep.adapter", "scrapy_rep.cli", "scrapy_rep.addon"}
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
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
