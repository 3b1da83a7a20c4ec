"""The documentation: its reference tables' sources cover the code, its examples run,
and what its guides say about the defaults is what the code does.

The reference tables are generated from the code into the Markdown pages
(``docs/_ext/reptables.py``): a test fails when one is stale; the others check
that the sources they are generated from are complete.
"""

from __future__ import annotations

import ast
import doctest
import re
from pathlib import Path
from typing import Any

from scrapy_rep.crawl.stats import STATS
from scrapy_rep.reference.records import RECORDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "scrapy_rep"


def flat(page: str) -> str:
    return " ".join((DOCS / page).read_text(encoding="utf-8").split())


def _sources() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}


def _pattern(key: str, placeholder: str) -> re.Pattern[str]:
    parts = re.split(placeholder, key)
    return re.compile("^" + "[^/]+".join(map(re.escape, parts)) + "$")


def test_every_stats_key_the_code_counts_is_in_the_stats_table() -> None:
    counted = set()
    for path, text in _sources().items():
        if path.name == "stats.py":
            continue
        counted |= set(re.findall(r'f?"((?:rep|robotstxt)/[\w/{}.-]*)"', text))
    assert counted
    table = [_pattern(key, r"<\w+>") for key in STATS]
    for key in counted:
        shape = re.sub(r"\{[^}]*\}", "x", key)
        assert any(p.match(shape) for p in table), f"stats key {key} is not in STATS"
    for key, pattern in zip(STATS, table, strict=True):
        assert any(pattern.match(re.sub(r"\{[^}]*\}", "x", c)) for c in counted), (
            f"STATS names {key}, which nothing counts"
        )


def test_every_audit_record_type_written_is_in_the_records_table() -> None:
    written = set()
    for text in _sources().values():
        written |= set(re.findall(r'\.audit\.write\(\s*"(\w+)"', text))
    assert written == set(RECORDS)


def _commented(path: Path, owner: str | None = None) -> dict[str, bool]:
    """Assigned names (module level, or a class's fields) -> whether a ``#:`` comment precedes."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    body = tree.body
    if owner is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner).body
    found = {}
    for node in body:
        target = None
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target = node.target.id
        if target is not None:
            found[target] = lines[node.lineno - 2].strip().startswith("#:")
    return found


def test_every_meta_key_signal_and_decision_field_says_what_it_is() -> None:
    """The ``#:`` comments the reference's meta, signals and decision tables are made of."""
    meta = _commented(PACKAGE / "crawl" / "meta.py")
    assert meta and all(meta.values()), [k for k, ok in meta.items() if not ok]
    lines = (PACKAGE / "crawl" / "meta.py").read_text().splitlines()
    pairs = zip(["", *lines], lines, strict=False)
    firsts = [b for a, b in pairs if b.startswith("#: ") and a[:2] != "#:"]
    assert len(firsts) == len(meta)
    for first in firsts:
        who = first[3:].split(":", 1)[0]
        assert who in ("Set by you", "Set by scrapy-rep", "Internal"), first
    signals = _commented(PACKAGE / "signals.py")
    assert set(signals) == {"origin_paused", "origin_resumed"} and all(signals.values())
    from scrapy_rep.core.decision import DecisionRecord

    fields = _commented(PACKAGE / "core" / "decision.py", owner="DecisionRecord")
    assert set(fields) == set(DecisionRecord.__annotations__) and all(fields.values()), fields


def test_docs_name_only_tests_that_exist() -> None:
    for doc in DOCS.glob("*.md"):
        text = doc.read_text(encoding="utf-8")
        for module, test in re.findall(r"tests/(test_\w+)\.py::(\w+)", text):
            source = (ROOT / "tests" / f"{module}.py").read_text(encoding="utf-8")
            assert re.search(rf"^(async )?def {test}\(", source, re.M), (
                f"{doc.name}: no {module}::{test}"
            )


def test_engine_page_examples_run() -> None:
    failures, tried = doctest.testfile(str(DOCS / "engine.md"), module_relative=False)
    assert tried > 0 and failures == 0


def test_engine_docstring_examples_run() -> None:
    import scrapy_rep.robotstxt

    failures, tried = doctest.testmod(scrapy_rep.robotstxt)
    assert tried > 0 and failures == 0


def test_per_spider_example_sets_token_and_user_agent_together() -> None:
    page = (DOCS / "spiders.md").read_text(encoding="utf-8")
    example = page.split("class ShopSpider(scrapy.Spider):", 1)[1].split("```", 1)[0]
    assert '"REP_PRODUCT_TOKEN": "shopbot"' in example
    assert '"USER_AGENT": "shopbot/1.0' in example


def test_status_page_back_off_duration_matches_the_defaults() -> None:
    """One failing origin keeps the crawl open for the sum of its back-offs; say how long."""
    from scrapy_rep.core.policy import PolicyConfig

    text = flat("status.md")
    config = PolicyConfig()
    waits = [int(config.backoff.wait(n)) for n in range(1, config.pause_max_tries)]
    assert waits == [60, 120, 240, 480]
    assert " + ".join(map(str, waits)) + " s apart" in text
    assert f"about **{sum(waits) // 60} minutes**" in text
    short = PolicyConfig(pause_initial=5)
    assert sum(short.backoff.wait(n) for n in range(1, short.pause_max_tries)) == 75
    assert "`REP_PAUSE_INITIAL` (5 s: 75 s in all)" in text


def test_setup_page_says_rep_enabled_off_means_no_robots_txt_at_all() -> None:
    text = flat("setup.md")
    assert "`REP_ENABLED = False` with the add-on turns robots.txt handling off entirely" in text


def test_the_gate_diagram_is_drawn_from_the_gates_own_table() -> None:
    """The docs' extension reads core/gate.py: a rename there must not break ``make docs``."""
    diagram = _ext("gate_diagram")
    dot = diagram.gate_dot()
    assert dot.startswith("digraph gate {") and "style=dashed" in dot and "(resumes)" in dot


def _ext(name: str) -> Any:
    """A module of ``docs/_ext`` (not a package), loaded under a name of its own."""
    import importlib.util

    path = DOCS / "_ext" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_tables_in_the_markdown_are_the_codes() -> None:
    """Read as plain Markdown (a forge, an editor) the reference has every table; a table
    that no longer says what the code says fails here: python docs/_ext/reptables.py."""
    from scrapy_rep.runtime.settings import SETTINGS

    tables = _ext("reptables")
    assert tables.stale() == []
    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    for row in SETTINGS:
        assert f"\n| `{row.name}` | " in reference, row.name
    marked = {m.group(2) for p in tables.pages() for m in tables.MARKED.finditer(p.read_text())}
    assert marked == set(tables.TABLES)


def test_a_stale_table_is_found_and_rewritten() -> None:
    tables = _ext("reptables")
    page = "intro\n<!-- rep-table stats -->\n| old |\n<!-- end rep-table -->\nafter\n"
    new = tables.refreshed(page)
    assert new != page and tables.refreshed(new) == new
    assert new.startswith("intro\n<!-- rep-table stats -->\n| key | counts |\n|---|---|\n")
    assert new.endswith("<!-- end rep-table -->\nafter\n")


def test_docs_code_and_tests_cite_no_issue_numbers() -> None:
    """What a file says stands on its own: no page, module or test points to an issue."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
    pages += sorted((ROOT / "scrapy_rep").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    cited = {
        str(page.relative_to(ROOT)): found
        for page in pages
        if (found := re.findall(r"\bissues? #?\d+|\(#\d+\)", page.read_text(), re.I))
    }
    assert cited == {}


def test_the_public_names_table_names_methods_that_exist() -> None:
    """The reference's 'What you may import' table: each ``name()`` it gives a public class
    is a method of that class."""
    import scrapy_rep

    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", reference, re.M)
    named = [
        (n, m)
        for n, text in rows
        if n in scrapy_rep.__all__
        for m in re.findall(r"`(\w+)\(\)`", text)
    ]
    assert named, rows
    missing = [f"{n}.{m}" for n, m in named if not hasattr(getattr(scrapy_rep, n), m)]
    assert missing == []
