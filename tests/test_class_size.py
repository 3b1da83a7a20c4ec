"""No class in the package is over 250 lines (issue 38): one job per class."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_rep"
#: the most lines a class may span, from its ``class`` line to its last
MAX_LINES = 250


def long_classes(source: str, where: str = "<source>") -> dict[str, int]:
    """The classes in ``source`` (nested ones too) over ``MAX_LINES``: name -> lines."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES:
                found[f"{where}:{node.name}"] = lines
    return found


def test_no_class_is_over_250_lines() -> None:
    offenders: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        offenders.update(long_classes(path.read_text(), str(path.relative_to(PACKAGE))))
    assert offenders == {}


def test_the_check_sees_a_long_class() -> None:
    def lines(count: int) -> str:
        return "".join(f"    x{n} = {n}\n" for n in range(count))

    # the class line and 250 more: 251 lines; then one of exactly 250, nested in another
    assert long_classes(f"class Long:\n{lines(MAX_LINES)}") == {"<source>:Long": MAX_LINES + 1}
    nested = f"class Outer:\n    class Inner:\n{lines(MAX_LINES - 1).replace('    ', '        ')}"
    assert long_classes(nested) == {"<source>:Outer": MAX_LINES + 1}
    assert long_classes(f"class Short:\n{lines(MAX_LINES - 1)}") == {}
