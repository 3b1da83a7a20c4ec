"""The README's reference tables are generated from the code; this keeps them in step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy_rep.policy import DEFAULT_ACTIONS, RFC_BEHAVIOUR
from scrapy_rep.settings import DEFAULTS

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value!r}`"


def settings_table() -> str:
    rows = [f"| `{name}` | {_value(d)} | {meaning} |" for name, (d, meaning) in DEFAULTS.items()]
    return "\n".join(["| setting | default | meaning |", "|---|---|---|", *rows])


def status_table() -> str:
    rows = [
        f"| `{outcome}` | {RFC_BEHAVIOUR[outcome]} | `{action.value}` |"
        for outcome, action in DEFAULT_ACTIONS.items()
    ]
    return "\n".join(["| outcome | RFC 9309 | scrapy-rep default |", "|---|---|---|", *rows])


def test_settings_table_matches_defaults() -> None:
    table = settings_table()
    assert table in README, "README settings table is stale; expected:\n" + table


def test_status_table_matches_policy() -> None:
    table = status_table()
    assert table in README, "README status table is stale; expected:\n" + table


def test_readme_gives_the_two_commands() -> None:
    assert "make demo" in README and "make test" in README


def test_readme_examples_run() -> None:
    import doctest

    path = Path(__file__).parent.parent / "README.md"
    failures, tried = doctest.testfile(str(path), module_relative=False)
    assert tried > 0 and failures == 0


def test_engine_docstring_examples_run() -> None:
    import doctest

    import scrapy_rep.robotstxt

    failures, tried = doctest.testmod(scrapy_rep.robotstxt)
    assert tried > 0 and failures == 0
