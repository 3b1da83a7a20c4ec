"""Declared uses for downloads no callback sees (media pipelines'), in-process: a request
with ``callback=NO_CALLBACK`` through the crawl's downloader middlewares on the rig. The
whole crawls with ``FilesPipeline`` are in ``tests/integration/test_uses_crawl.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK

from scrapy_rep.components.media import MediaUsesMiddleware
from tests.support.rig import Middlewares, Rig, in_loop, rig_for

SITE = "http://a.example"
ROBOTS = (200, {}, b"User-agent: *\nAllow: /\n")
REFUSING = (200, {"Content-Usage": "train-ai=n"}, b"\x89PNG")
FILE = f"{SITE}/cover.png"


def rig_of(**settings: Any) -> Rig:
    settings = {"REP_USES": ["train-ai"], **settings}
    return rig_for({"http://a.example:80": ROBOTS, FILE: REFUSING}, **settings)


@pytest_twisted.ensureDeferred
async def test_a_media_download_refusing_a_declared_use_fails_under_drop() -> None:
    rig = rig_of(REP_USE_ACTION="drop")
    mw = Middlewares(rig)

    async def scenario() -> None:
        with pytest.raises(IgnoreRequest, match="use-refused: train-ai refused"):
            await mw.fetch(Request(FILE, callback=NO_CALLBACK))  # the pipeline's failure path
        assert rig.stat("rep/media/dropped/use-refused") == 1
        # a callback's response is the page directives middleware's to answer
        response = await mw.fetch(Request(FILE, dont_filter=True))
        assert isinstance(response, Response) and response.status == 200
        assert rig.stat("rep/media/dropped/use-refused") == 1

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_recorded_not_dropped_by_default_and_off_without_declared_uses() -> None:
    for settings, judged in (({}, True), ({"REP_USES": []}, False)):
        rig = rig_of(**settings)
        mw = Middlewares(rig)

        async def scenario(mw: Middlewares = mw) -> None:
            response = await mw.fetch(Request(FILE, callback=NO_CALLBACK))
            assert isinstance(response, Response) and response.status == 200  # stored

        try:
            await in_loop(scenario())
            media = [m for m in mw.downloader.middlewares if isinstance(m, MediaUsesMiddleware)]
            assert bool(media) is judged
            assert (rig.stat("rep/page/use/train-ai/refused") == 1) is judged
            assert rig.stat("rep/media/dropped/use-refused") is None
        finally:
            rig.close()
