"""The Scrapy downloader middleware for downloads no spider callback sees: media pipelines'.

``FilesPipeline`` and ``ImagesPipeline`` (and any ``MediaPipeline``) download
through the engine with ``callback=NO_CALLBACK`` and hand the response to
``media_downloaded``: no spider middleware, so not
:class:`~scrapy_rep.components.page.PageDirectivesMiddleware`, ever sees it.
A request is recognised by that callback, the mark Scrapy sets for
exactly this (``scrapy.http.request.NO_CALLBACK``: "not meant to be handled
by a spider callback"), not by the pipeline's meta keys
(``handle_httpstatus_all`` / ``handle_httpstatus_list``, which any request
may carry). scrapy-rep's own robots.txt and tdmrep.json fetches, and
requests with ``dont_obey_robotstxt``, are not judged here.

With uses declared (``REP_USES``), such a response is answered as a page
is (:func:`~scrapy_rep.components.page_uses.response_answers`: its decision's
request-time answers met by its ``Content-Usage``, ``Content-Signal``,
``tdm-reservation`` and ``X-Robots-Tag`` headers, ``noimageai`` for an
image), counted and written as a ``page_use`` record. Under
``REP_USE_ACTION = "drop"`` a response refusing a declared use fails with
:class:`MediaUseRefused` (an ``IgnoreRequest``): the pipeline's own failure
path (``media_failed``: "File (filtered): ... use-refused: ..."), so the
file is neither stored nor listed in the item's ``files`` / ``images``; it
is counted (``rep/media/dropped/use-refused``) and written as an
``item_dropped`` record with ``media: true``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.http.request import NO_CALLBACK

from scrapy_rep.components.page_uses import count_uses, first_refusal, response_answers
from scrapy_rep.core.decision import USE_REFUSED
from scrapy_rep.core.directives import head_metas
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.use_signals import meta_names
from scrapy_rep.core.uses import uses_field
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class MediaUseRefused(IgnoreRequest):
    """A media download whose own response refuses a declared use (``use-refused``)."""


class MediaUsesMiddleware:
    """Answers the declared uses for responses no callback sees; drops the refused."""

    def __init__(self, crawler: Crawler) -> None:
        if not is_enabled(crawler.settings.get):
            raise NotConfigured("REP_ENABLED is off")
        config = RepSettings.of(crawler)
        if not config.uses:
            raise NotConfigured("REP_USES declares no use")
        self.uses: tuple[str, ...] = tuple(config.uses)
        self.token = config.token
        self.drop_refused = config.use_action == "drop"
        self._meta_names = meta_names(config.token)
        self.telemetry = Telemetry.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MediaUsesMiddleware:
        return cls(crawler)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response:
        if request.callback is not NO_CALLBACK or M.exempt(request.meta):
            return response  # a callback's response: the page middleware answers it
        metas = None
        if isinstance(response, HtmlResponse):
            metas = head_metas(response.body, self._meta_names)
        answers = response_answers(self.token, self.uses, response, request, metas)
        count_uses(self.telemetry, origin_or_none(response.url), response.url, uses_field(answers))
        refused = first_refusal(answers) if self.drop_refused else None
        if refused is None:
            return response
        detail = f"{refused.use} refused: {refused.source}"
        self.telemetry.item_dropped(response.url, USE_REFUSED, detail, media=True)
        raise MediaUseRefused(f"{USE_REFUSED}: {detail}")
