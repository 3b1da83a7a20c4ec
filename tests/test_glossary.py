"""docs/glossary.md: one meaning per word, and every name it points at exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "glossary.md"
NAME = re.compile(r"`(scrapy_rep(?:\.\w+)+)`")


def rows() -> list[tuple[str, str, list[str]]]:
    """(word, meaning, names) for each row of the table."""
    found = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("word", "---"):
            continue
        found.append((cells[0], cells[1], NAME.findall(cells[2])))
    return found


def resolve(dotted: str) -> object:
    """The module, class, function or constant a dotted name points at."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_glossary_has_each_word_once_with_a_name_behind_it() -> None:
    table = rows()
    assert len(table) >= 40
    words = [word.lower() for word, _, _ in table]
    assert sorted(w for w in set(words) if words.count(w) > 1) == []
    assert [word for word, _, names in table if not names] == []


@pytest.mark.parametrize("name", sorted({n for _, _, names in rows() for n in names}))
def test_every_name_the_glossary_gives_exists(name: str) -> None:
    resolve(name)


def test_a_missing_name_is_caught() -> None:
    with pytest.raises(AttributeError):
        resolve("scrapy_rep.core.gate.NO_SUCH_NAME")
