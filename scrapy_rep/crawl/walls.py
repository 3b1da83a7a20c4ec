"""Licence and payment walls in a crawl (:mod:`scrapy_rep.core.walls`): dropped before the
spider (``licence-required``), not retried, recorded with what they ask, counted toward
``REP_BLOCK_AFTER``. The page-status middleware hands this the rare ``401`` and ``402``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from scrapy_rep.core.decision import licence_required
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.policy import Status
from scrapy_rep.core.walls import wall_of
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import RepIgnoreRequest

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_rep.crawl.pushback import PageSignals
    from scrapy_rep.crawl.telemetry import Telemetry
    from scrapy_rep.runtime.resolver import Resolver


class LicenceWalls:
    """Drops a wall response before the spider, records what it asks, walls off origins."""

    def __init__(
        self,
        resolver: Resolver,
        telemetry: Telemetry,
        pushback: PageSignals | None,
        *,
        token: str,
    ) -> None:
        """``resolver``: robots.txt's, whose cached file says the origin's ``License:``
        lines; ``pushback``: the page pauses a wall counts toward (None: off)."""
        self.resolver = resolver
        self.telemetry = telemetry
        self.pushback = pushback
        self.token = token

    def process_response(self, request: Request, response: Response) -> Response:
        """``response`` (a 401 or 402), or :class:`RepIgnoreRequest` if it is a wall (a
        ``dont_obey_robotstxt`` request's too: a wall is no robots.txt)."""
        headers = response.headers
        wall = wall_of(
            response.status,
            # lazily: the wall reads each header only up to the bound of every header
            lambda name: (v.decode("latin-1") for v in headers.getlist(name)),
        )
        if wall is None:
            return response
        origin = origin_or_none(request.url)
        if origin is None:
            return response
        # REP_BLOCK_AFTER refusals in a row (walls, 401/403s) hold the origin like a block
        pushback = self.pushback
        walled = pushback.wall(origin, response.status, request) if pushback else False
        policy = self.resolver.current(origin)
        robots = (
            self.resolver.cache.robots(policy)
            if policy is not None and policy.status is Status.OK
            else None
        )
        licenses = tuple(robots.licenses) if robots is not None else ()
        said = wall.said()
        wall_said = {**asdict(wall), "said": said}
        self.telemetry.licence_wall(origin, request.url, wall_said, walled, licenses)
        detail = f"the page answered {said}: not retried, its items not produced"
        record = licence_required(origin, self.token, request.url, said, detail)
        # the request's last answer: its download (if judged) no longer counts
        self.telemetry.stopped(origin, request.meta.get(M.DECISION), record)
        request.meta[M.DECISION] = record
        raise RepIgnoreRequest(record)
