"""The README's reference tables are generated from the code; this keeps them in step."""

from __future__ import annotations

from pathlib import Path

from scrapy_rep.core.policy import DEFAULT_ACTIONS, RFC_BEHAVIOUR
from scrapy_rep.runtime.settings import settings_table

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
#: the README with its line breaks and indents as single spaces, for sentences
FLAT = " ".join(README.split())


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


def test_readme_says_how_to_install_from_a_checkout() -> None:
    """The package is on no index: the README must not send users to one."""
    assert "pip install scrapy-rep" not in README
    assert "pip install /path/to/scrapy-rep" in README and "make venv" in README
    assert "already writes `ADDONS = {}`" in FLAT  # fill in the template's, not a second one


def test_readme_per_spider_example_sets_token_and_user_agent_together() -> None:
    example = README.split("class ShopSpider(scrapy.Spider):", 1)[1].split("```", 1)[0]
    assert '"REP_PRODUCT_TOKEN": "shopbot"' in example
    assert '"USER_AGENT": "shopbot/1.0' in example


def test_readme_back_off_duration_matches_the_defaults() -> None:
    """One failing origin keeps the crawl open for the sum of its back-offs; say how long."""
    from scrapy_rep.core.policy import PolicyConfig, backoff

    config = PolicyConfig()
    waits = [int(backoff(n, config)) for n in range(1, config.pause_max_tries)]
    assert waits == [60, 120, 240, 480]
    assert " + ".join(map(str, waits)) + " s apart" in FLAT
    assert f"about **{sum(waits) // 60} minutes**" in FLAT
    short = PolicyConfig(pause_initial=5)
    assert sum(backoff(n, short) for n in range(1, short.pause_max_tries)) == 75
    assert "`REP_PAUSE_INITIAL` (5 s: 75 s in all)" in FLAT


def test_readme_says_rep_enabled_off_means_no_robots_txt_at_all() -> None:
    assert "`REP_ENABLED = False` with the add-on turns robots.txt handling off entirely" in FLAT
