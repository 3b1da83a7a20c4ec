"""The README is the front page: what it promises, and every document it cites, exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: the README with its line breaks and indents as single spaces, for sentences
FLAT = " ".join(README.split())


def test_readme_gives_the_two_commands() -> None:
    assert "make demo" in README and "make test" in README


def test_readme_says_how_to_install_from_a_checkout() -> None:
    """The package is on no index: the README must not send users to one."""
    assert "pip install scrapy-rep" not in README
    assert "pip install /path/to/scrapy-rep" in README and "make venv" in README
    assert "already writes `ADDONS = {}`" in FLAT  # fill in the template's, not a second one


def test_readme_gives_the_one_addons_line() -> None:
    assert 'ADDONS = {"scrapy_rep.Addon": 100}' in README


def test_every_document_the_readme_cites_is_in_the_repository() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README links into the docs"
    for link in local:
        assert (ROOT / link).exists(), f"README cites {link}, which is not in the repository"
    for path in re.findall(r"`((?:docs|tests|benchmarks|example_project|ci)/[\w./-]+)`", README):
        assert (ROOT / path).exists(), f"README names {path}, which is not in the repository"


def test_readme_is_a_front_page() -> None:
    """Guides and measurements live in docs/; the README stays short."""
    assert len(README.encode()) <= 12_000, len(README.encode())
    assert not re.search(r"\b[0-9a-f]{7,40}\b", README), "no commit hashes on the front page"
    assert not re.search(r"\b(target|met|missed)\b", README), "no met/missed wording"
