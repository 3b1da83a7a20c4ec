"""The page middleware of a crawl that declares uses (``REP_USES``): installed by the add-on
in place of :class:`~scrapy_rep.components.page.PageDirectivesMiddleware`.

Besides the page directives, it answers each declared use for the response
after the response's own signals (:mod:`scrapy_rep.core.use_signals`):
``response.meta["rep_use"]`` maps each declared use to ``allowed``,
``refused`` or ``unknown``, and with ``REP_USE_ACTION = "drop"`` the items of a
response refusing a declared use are dropped (``use-refused``), counted.

It also gives the crawl's graph its tdmrep.json part when ``train-ai`` is
declared (:class:`~scrapy_rep.crawl.tdmrep.TdmRep`, asked before each request
is judged): so a crawl that declares no use loads none of the use machinery
(response signals, TDMRep), only robots.txt's own preference lines, which a
decision record answers whatever is declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse

from scrapy_rep.components.page import Page, PageDirectivesMiddleware
from scrapy_rep.core.decision import USE_REFUSED
from scrapy_rep.core.directives import NO_DIRECTIVES, head_metas
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.tdmrep import USE as TDM_USE
from scrapy_rep.core.use_signals import (
    meta_names,
    request_answers,
    response_signals,
    response_uses,
)
from scrapy_rep.core.uses import REFUSED, UseAnswer, uses_field
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.tdmrep import TdmRep
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class PageUsesMiddleware(PageDirectivesMiddleware):
    """The page directives, and each declared use answered per response."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        config = RepSettings.of(crawler)
        #: the declared uses, answered per response; under "drop" refusing items are dropped
        self.uses = tuple(config.uses)
        self.drop_refused = config.use_action == "drop"
        self._meta_names = meta_names(config.token)
        service = graph.running(crawler)  # None: no downloader middleware judges requests
        if service is not None and TDM_USE in self.uses and service.tdmrep is None:
            service.use_tdmrep(
                TdmRep.beside(
                    crawler,
                    config,
                    service.telemetry,
                    service.resolver,
                    service.spec,
                    service.listener.closing,
                )
            )

    def _read_page(self, response: Response) -> Page | None:
        """The page directives and the uses answered, from one reading of the ``<head>``."""
        if not self.uses:  # installed by hand, no use declared
            return PageDirectivesMiddleware._read_page(self, response)
        html = isinstance(response, HtmlResponse)
        metas = head_metas(response.body, self._meta_names) if html else None
        page = self._read_directives(response, metas) if self.directives else None
        refused = self._read_uses(response, metas)
        if refused is not None:
            page = page or Page(NO_DIRECTIVES, False)
            page.refused = refused
        return page

    def _read_uses(
        self, response: Response, metas: list[tuple[str, str]] | None
    ) -> UseAnswer | None:
        """``meta["rep_use"]`` for the response; the refusal that drops its items, if any."""
        request = response.request
        answers = response_answers(self.token, self.uses, response, request, metas)
        origin = origin_or_none(response.url)
        count_uses(self.telemetry, origin, response.url, uses_field(answers))
        if not self.drop_refused or request is None or M.exempt(request.meta):
            return None
        return first_refusal(answers)

    def _drop_item(self, response: Response, refused: UseAnswer) -> None:
        """An item of a response that refuses a declared use, under REP_USE_ACTION = "drop"."""
        detail = f"{refused.use} refused: {refused.source}"
        self.telemetry.inc(f"rep/page/items-dropped/{USE_REFUSED}")
        self.telemetry.item_dropped(response.url, USE_REFUSED, detail)


def response_answers(
    token: str,
    uses: tuple[str, ...],
    response: Response,
    request: Request | None,
    metas: list[tuple[str, str]] | None,
) -> dict[str, UseAnswer]:
    """Each declared use's answer for ``response`` after its own signals, also set as
    ``meta["rep_use"]`` on ``request``: the request-time answers of its decision record
    met by its headers (and ``metas``, the ``<head>`` tags read, for HTML)."""
    headers = response.headers
    signals = response_signals(
        token,
        content_usage=headers.getlist(b"Content-Usage"),
        content_signal=headers.getlist(b"Content-Signal"),
        tdm_reservation=headers.getlist(b"tdm-reservation"),
        x_robots_tag=headers.getlist(b"X-Robots-Tag"),
        robots_tag=headers.getlist(b"Robots-Tag"),
        metas=metas,
        image=(headers.get(b"Content-Type") or b"").lstrip()[:6].lower() == b"image/",
    )
    meta = request.meta if request is not None else {}
    decision = meta.get(M.DECISION)
    before, tdm_file = request_answers(decision.get("uses") if decision else None)
    answers = response_uses(uses, before, tdm_file, signals)
    if request is not None:
        meta[M.USE] = {use: answer.answer for use, answer in answers.items()}
    return answers


def first_refusal(answers: dict[str, UseAnswer]) -> UseAnswer | None:
    """The first declared use ``answers`` refuse, or None."""
    return next((a for a in answers.values() if a.answer == REFUSED), None)


def count_uses(
    telemetry: Telemetry, origin: str | None, url: str, uses: dict[str, dict[str, str]]
) -> None:
    """A response's answer for each declared use: counted, and its ``page_use`` record."""
    for use, said in uses.items():
        answer = said["answer"]
        telemetry.inc(f"rep/page/use/{use}/{answer}")
    if telemetry.audit is not None:
        telemetry.audit.write("page_use", {"url": url, "origin": origin, "uses": uses})
