"""The placeholders REP_DECISION_LOG and REP_REPORT take: the ones FEED_URI takes.

The files a crawl writes there: ``tests/integration/test_job_paths.py``.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from scrapy_rep.crawl.job import params_of, with_params


class Spider:
    name = "shop"
    _job = "abc123"

    @property
    def broken(self) -> str:
        raise AttributeError("not yet")


def test_placeholders_are_the_ones_feed_uris_take() -> None:
    now = datetime(2026, 12, 3, 10, 4, 5, 678, tzinfo=timezone.utc)
    params = params_of(Spider(), now)
    assert with_params("/x/%(name)s/%(_job)s-%(time)s.jsonl", params, "S") == (
        "/x/shop/abc123-2026-12-03T10-04-05+00-00.jsonl"
    )
    assert with_params("%(batch_time)s-%(batch_id)d", params, "S") == (
        "2026-12-03T10-04-05.000678+00-00-1"
    )
    assert with_params("/a%20b/100%", params, "S") == "/a%20b/100%"  # no placeholder: as given
    assert with_params("/a%20b/%(name)s", params, "S") == "/a%20b/shop"
    with pytest.raises(ValueError, match=r"REP_REPORT = .*%\(nope\)s.*nope"):
        with_params("%(nope)s.html", params, "REP_REPORT")
