"""Worked examples in the docs whose output a test makes (``docs/examples/``).

A test produces the output from a real run, makes what varies between runs
stable (ports, clocks, temporary paths) and compares it with the file the
docs include. ``REP_UPDATE_EXAMPLES=1`` writes the file instead: the docs
never show output that was pasted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d([ T])\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?")


def stable(text: str, **names: str) -> str:
    """``text`` with each ``names`` value replaced by its key, and clock readings by a mark."""
    for mark, value in names.items():
        text = text.replace(value, mark)
    return _DATE_TIME.sub(_mark, text)


def _mark(found: re.Match[str]) -> str:
    """One clock reading for all, written as the one it replaces was (``T``, fraction, zone)."""
    separator, fraction, zone = found.groups()
    return f"2026-12-01{separator}09:30:00{'.000' if fraction else ''}{zone or ''}"


def check(name: str, text: str) -> None:
    """The docs' example ``name`` is ``text`` (or becomes it, with REP_UPDATE_EXAMPLES=1)."""
    path = EXAMPLES / name
    if os.environ.get("REP_UPDATE_EXAMPLES"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, (
        f"{path} is out of date: run this test with REP_UPDATE_EXAMPLES=1"
    )
