"""``scrapy_rep/reference/settings.py``: a meaning for every setting, none for one gone.

The reference's settings table is written from the rows of ``RepSettings`` and these
meanings (``docs/_ext/reptables.py``); a row without a meaning would break it, and a
meaning left for a removed or misspelt setting would document what does not exist.
"""

from __future__ import annotations

import re

from scrapy_rep.reference.settings import MEANINGS
from scrapy_rep.runtime.settings import SETTINGS

NAMES = {row.name for row in SETTINGS}


def test_every_setting_has_a_meaning() -> None:
    assert sorted(NAMES - set(MEANINGS)) == []


def test_no_meaning_names_a_setting_that_does_not_exist() -> None:
    assert sorted(set(MEANINGS) - NAMES) == []
    named = {name: set(re.findall(r"\bREP_[A-Z_]+\b", text)) for name, text in MEANINGS.items()}
    assert {name: sorted(found - NAMES) for name, found in named.items() if found - NAMES} == {}


def test_each_meaning_is_one_line_of_text() -> None:
    for name, text in MEANINGS.items():
        assert text.strip() == text and text and "\n" not in text, name
