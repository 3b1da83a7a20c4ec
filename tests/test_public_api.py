"""The public surface is what the reference says, and each name resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import scrapy_rep

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"


def documented_names() -> set[str]:
    text = REFERENCE.read_text()
    section = text.split("## What you may import", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, re.M))


def test_all_is_what_the_reference_lists() -> None:
    assert set(scrapy_rep.__all__) == documented_names()


def test_every_public_name_resolves() -> None:
    for name in scrapy_rep.__all__:
        assert getattr(scrapy_rep, name) is not None, name
    assert scrapy_rep.RepIgnoreRequest.__module__.startswith("scrapy_rep.")
    assert scrapy_rep.signals.origin_paused is not scrapy_rep.signals.origin_resumed


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        scrapy_rep.Nope  # noqa: B018
    except AttributeError as exc:
        assert "Nope" in str(exc)
    else:
        raise AssertionError("scrapy_rep.Nope resolved")


def test_importing_the_package_loads_no_scrapy() -> None:
    code = (
        "import sys, scrapy_rep; scrapy_rep.parse('User-agent: *'); print('scrapy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
