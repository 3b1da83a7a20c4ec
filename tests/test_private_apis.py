"""Scrapy's (and scrapy-redis's) private parts are reached only through crawl/compat.py.

A private attribute of another object (``engine._slot``, ``getattr(downloader,
"_enqueue_request")``) is where an upgrade breaks us first: one module holds them,
each with the public fallback, so the next person finds them in one place.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scrapy_rep"
OWN = {"self", "cls"}


def private_reaches(path: Path) -> list[str]:
    """``x._name`` and ``getattr(x, "_name")`` on anything but self/cls, with their lines."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        name, owner = None, None
        if isinstance(node, ast.Attribute):
            name, owner = node.attr, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            name, owner = node.args[1].value, node.args[0]
        if name is None or not name.startswith("_") or name.startswith("__"):
            continue
        if isinstance(owner, ast.Name) and (owner.id in OWN or owner.id[:1].isupper()):
            continue  # our own objects, and our own classes' and modules' helpers
        if (path.name, name) in PUBLIC:
            continue
        where = path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path.name
        found.append(f"{where}:{node.lineno}: {name}")
    return found


#: names that start with ``_`` and are public all the same, by file, with why
PUBLIC = {
    ("job.py", "_job"): "the spider argument scrapyd documents passing to every job",
}


def test_only_compat_reaches_scrapys_private_parts() -> None:
    found = [
        hit
        for folder in ("crawl", "components", "integrations")
        for path in sorted((PACKAGE / folder).rglob("*.py"))
        if path.name != "compat.py"
        for hit in private_reaches(path)
    ]
    assert found == [], "move these into crawl/compat.py:\n" + "\n".join(found)


def test_the_check_sees_a_private_reach(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('def f(engine):\n    return engine._slot, getattr(engine, "_x")\n')
    assert sorted(h.rsplit(": ", 1)[1] for h in private_reaches(sample)) == ["_slot", "_x"]
