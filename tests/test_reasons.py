"""Every reason the package gives is in ``REASONS`` (``scrapy_rep/reference/reasons.py``).

The reference's list of reasons is made from that table, so a reason given
anywhere else would be missing from the docs. The package is read as the
project spells a reason: a literal (or an f-string) put where a reason goes,
which is

- a parameter, keyword, variable or dataclass field named ``reason``,
  ``held_reason`` or ``drop`` (its default, the value given to it, positional
  arguments included, and what it is compared with);
- a record's ``"reason"`` key, and ``meta[M.DROP]``;
- the keys of a ``*_DETAIL`` or ``*_EXPLAIN`` table;
- a module constant used in one of those places (``GUARD_ERROR``).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_rep.reference.reasons import REASONS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scrapy_rep"
#: the names a reason goes by
NAMES = frozenset({"reason", "held_reason", "drop"})
#: how a reason is spelled: one lowercase word, or words joined by hyphens (other text given
#: as a "reason", e.g. a WebSocket close's, is not one of ours)
SHAPE = re.compile(r"[a-z]+(-[a-z]+)*")


class Scan:
    """The reasons of some modules: literal -> where, and f-string patterns -> where."""

    def __init__(self, paths: list[Path]) -> None:
        self.trees = {path: ast.parse(path.read_text("utf-8"), str(path)) for path in paths}
        self.constants: dict[str, list[ast.expr]] = defaultdict(list)
        self.tables: dict[str, list[ast.expr]] = defaultdict(list)
        self.signatures: dict[str, list[list[str]]] = defaultdict(list)
        #: module -> its own functions' signatures, which its calls mean first
        self.local: dict[int, dict[str, list[list[str]]]] = {}
        for tree in self.trees.values():
            self._learn(tree)
        self.literals: dict[str, list[str]] = defaultdict(list)
        self.patterns: dict[str, list[str]] = defaultdict(list)
        for path, tree in self.trees.items():
            where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            for node in self._reasons(tree):
                for value in self._values(node, depth=0):
                    place = f"{where}:{node.lineno}"
                    if isinstance(value, re.Pattern):
                        self.patterns[value.pattern].append(place)
                    elif SHAPE.fullmatch(value):
                        self.literals[value].append(place)

    # -- what the modules define -----------------------------------------------------------

    def _learn(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._constant(target, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._constant(node.target, node.value)
        local = self.local[id(tree)] = defaultdict(list)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.signatures[node.name].append(_params(node.args))
                local[node.name].append(_params(node.args))
            elif isinstance(node, ast.ClassDef):
                inits = [
                    n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"
                ]
                init = inits[0] if inits else None
                if init is not None:
                    self.signatures[node.name].append(_params(init.args))
                else:  # a dataclass or NamedTuple: its fields, in order
                    fields = [
                        n.target.id
                        for n in node.body
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                    ]
                    self.signatures[node.name].append(fields)

    def _constant(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.constants[target.id].append(value)
            if isinstance(value, ast.Dict):
                self.tables[target.id].append(value)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            for each, part in zip(target.elts, value.elts, strict=False):
                self._constant(each, part)

    # -- where a reason goes -----------------------------------------------------------------

    def _reasons(self, tree: ast.Module) -> Iterator[ast.expr]:
        for node in ast.walk(tree):
            if isinstance(node, ast.arguments):
                yield from _defaults(node)
            elif isinstance(node, ast.keyword) and node.arg in NAMES:
                yield node.value
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    yield from self._assigned(target, node.value)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "reason":
                        yield value
            elif isinstance(node, ast.Compare) and _named(node.left):
                yield from node.comparators
            elif isinstance(node, ast.Call):
                yield from self._arguments(node, self.local[id(tree)])
        for name, dicts in self.tables.items():
            if name.endswith(("_DETAIL", "_EXPLAIN")) and _defined_in(tree, name):
                for table in dicts:
                    yield from (key for key in table.keys if isinstance(key, ast.Constant))

    def _assigned(self, target: ast.expr, value: ast.expr | None) -> Iterator[ast.expr]:
        if value is None:
            return
        if _named(target) or (
            isinstance(target, ast.Subscript)
            and (
                (isinstance(target.slice, ast.Constant) and target.slice.value == "reason")
                or (isinstance(target.slice, ast.Attribute) and target.slice.attr == "DROP")
            )
        ):
            yield value
        elif isinstance(target, ast.Tuple):
            for index, each in enumerate(target.elts):
                if not _named(each):
                    continue
                if isinstance(value, ast.Tuple):
                    yield value.elts[index]
                elif _is_get(value):  # rep, reason = TABLE.get(key, (default, ...))
                    assert isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                    table = value.func.value
                    rows = self.tables.get(table.id, []) if isinstance(table, ast.Name) else []
                    for row in [v for d in rows for v in d.values] + value.args[1:]:
                        if isinstance(row, ast.Tuple) and index < len(row.elts):
                            yield row.elts[index]

    def _arguments(self, call: ast.Call, local: dict[str, list[list[str]]]) -> Iterator[ast.expr]:
        """Positional arguments given to a reason parameter, the callee known by its name.

        ``f()`` or ``self.f()`` means the calling module's own ``f`` first; of
        several sharing a name elsewhere (``write``), only a place where all take
        a reason counts.
        """
        func = call.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        own = isinstance(func, ast.Name) or (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
        )
        signatures = (own and local.get(name or "")) or self.signatures.get(name or "", [])
        for index, arg in enumerate(call.args):
            if signatures and all(
                index < len(params) and params[index] in NAMES for params in signatures
            ):
                yield arg

    # -- what a place holds --------------------------------------------------------------------

    def _values(self, node: ast.expr, depth: int) -> Iterator[str | re.Pattern[str]]:
        if depth > 4:
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            text = [p.value for p in node.values if isinstance(p, ast.Constant)]
            if all(re.fullmatch(r"[a-z-]*", str(part)) for part in text):
                yield _pattern(node)
        elif isinstance(node, ast.IfExp):
            yield from self._values(node.body, depth + 1)
            yield from self._values(node.orelse, depth + 1)
        elif isinstance(node, ast.BoolOp):
            for each in node.values:
                yield from self._values(each, depth + 1)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # reason in ("a", "b")
            for each in node.elts:
                yield from self._values(each, depth + 1)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name.lstrip("_").isupper():  # a constant: MY_REASON, _BY_STATUS
                for value in self.constants.get(name, []):
                    yield from self._values(value, depth + 1)


def _params(args: ast.arguments) -> list[str]:
    """The positional parameters, as a call passes them (a method's ``self`` is implied)."""
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _defaults(args: ast.arguments) -> Iterator[ast.expr]:
    positional = [*args.posonlyargs, *args.args]
    with_default = positional[len(positional) - len(args.defaults) :]
    for arg, default in zip(with_default, args.defaults, strict=True):
        if arg.arg in NAMES:
            yield default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg in NAMES and kw_default is not None:
            yield kw_default


def _named(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in NAMES) or (
        isinstance(node, ast.Attribute) and node.attr in NAMES
    )


def _is_get(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
    )


def _defined_in(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == name
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in tree.body
    )


def _pattern(node: ast.JoinedStr) -> re.Pattern[str]:
    parts = [
        re.escape(part.value) if isinstance(part, ast.Constant) else "[a-z]+"
        for part in node.values
    ]
    return re.compile("".join(parts))


@pytest.fixture(scope="module")
def package() -> Scan:
    """The package's reasons, scanned once for the tests that read them."""
    return Scan(sorted(PACKAGE.rglob("*.py")))


def _add(reason: str) -> str:
    return f'    "{reason}": ("<who gives it>", "<what it means>"),'


def test_every_reason_the_package_gives_is_in_the_reasons_table(package: Scan) -> None:
    found = package
    assert len(found.literals) >= 15, sorted(found.literals)
    missing = {reason: places for reason, places in found.literals.items() if reason not in REASONS}
    assert not missing, (
        "reasons given but not in REASONS; add to REASONS in scrapy_rep/reference/reasons.py:\n"
        + "\n".join(f"{_add(r)}  # given at {', '.join(p)}" for r, p in sorted(missing.items()))
    )
    for pattern, places in found.patterns.items():
        assert any(re.fullmatch(pattern, reason) for reason in REASONS), (
            f"the reasons made at {', '.join(places)} ({pattern!r}) match none in REASONS; "
            "add each one it makes to REASONS in scrapy_rep/reference/reasons.py"
        )


def test_every_reason_in_the_table_is_given_somewhere(package: Scan) -> None:
    found = package
    patterns = [re.compile(p) for p in found.patterns]
    unused = [
        reason
        for reason in REASONS
        if reason not in found.literals and not any(p.fullmatch(reason) for p in patterns)
    ]
    assert unused == [], f"REASONS names {unused}, which nothing in scrapy_rep gives"


def test_reasons_are_one_lowercase_word_each_with_who_and_meaning() -> None:
    for reason, (who, meaning) in REASONS.items():
        assert SHAPE.fullmatch(reason), reason
        assert who and meaning and "\n" not in meaning, reason


def test_the_scan_sees_a_reason_in_each_place_it_may_go(tmp_path: Path) -> None:
    module = tmp_path / "planted.py"
    module.write_text(
        "from dataclasses import dataclass\n"
        "MY_REASON = 'planted-constant'\n"
        "WHY_DETAIL = {'planted-detail': 'text'}\n"
        "@dataclass\n"
        "class Event:\n"
        "    url: str\n"
        "    reason: str\n"
        "def give(url, reason='planted-default', *, drop=''):\n"
        "    record = {'reason': 'planted-key'}\n"
        "    record['reason'] = 'planted-item'\n"
        "    if reason == 'planted-compared':\n"
        "        reason = 'planted-assigned' if url else MY_REASON\n"
        "    give(url, 'planted-positional')\n"
        "    give(url, drop=f'planted-{url}')\n"
        "    return Event(url, 'planted-field')\n"
    )
    found = Scan([module])
    assert sorted(found.literals) == sorted(
        [
            "planted-constant",
            "planted-detail",
            "planted-default",
            "planted-key",
            "planted-item",
            "planted-compared",
            "planted-assigned",
            "planted-positional",
            "planted-field",
        ]
    )
    assert list(found.patterns) == ["planted\\-[a-z]+"]


def test_the_reference_lists_the_reasons_from_the_table() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text("utf-8")
    assert "<!-- rep-table reasons -->\n|" in reference
