"""Every ``Request.meta`` key scrapy-rep reads or writes. The ``#:`` comment above each is
its entry in the reference's table; internal keys start with an underscore.
"""

#: Set by scrapy-rep: the decision record (a plain, picklable dict) of the latest
#: judgement; on the response's ``meta``, and on the ``RepIgnoreRequest``
#: (``failure.value.decision``) of a dropped request.
DECISION = "rep_decision"
#: Set by you: ``True``, and scrapy-rep neither judges nor parks this request, nor
#: drops it for what a page says (Scrapy's own key, same meaning).
DONT_OBEY = "dont_obey_robotstxt"
#: Set by scrapy-rep: on a response's ``meta``, for its callback, what the page says
#: to the product token (``noindex``, ``nofollow``, ``noarchive``, ``nosnippet``,
#: ``unavailable_after``, ``sources``, ``invalid_dates``); only when it says something.
PAGE = "rep_page"
#: Set by scrapy-rep: with ``REP_USES``, on a response's ``meta``, each declared use ->
#: ``allowed``, ``refused`` or ``unknown`` after the response's own signals
#: (``Content-Usage`` and ``Content-Signal`` headers, ``tdm-reservation`` header and
#: meta, ``noai``); on the request a browser sub-request is judged as, the rendered
#: page's own answer.
USE = "rep_use"
#: Set by scrapy-rep: on the request a browser sub-request is judged as (what
#: ``REP_COLLECTION_POLICY`` receives for it): ``page`` (the rendered page's URL),
#: ``resource_type`` (Playwright's: ``image``, ``script``, ``stylesheet``, ``font``,
#: ``document``, ``fetch``, ``xhr``, ``websocket``, ...), ``method``, ``hop`` (0, or the
#: redirect hop).
SUBREQUEST = "rep_subrequest"
#: Set by you: ``True``, the response is a sitemap, not subject to page directives
#: (``SitemapSpider``'s requests need no key).
SITEMAP = "rep_sitemap"

#: Internal: marks scrapy-rep's own robots.txt requests.
ROBOTS_REQUEST = "_rep_robots"
#: Internal: why the downloader handed a request back to be parked.
PARK = "_rep_park"
#: Internal: a request its site refused (429, 503): first in its origin's line when parked,
#: the retry its ``Retry-After`` asked for.
PARK_FIRST = "_rep_park_first"
#: Internal: a held request on its way to be dropped in the downloader (so its
#: errback hears why).
DROP = "_rep_drop"
#: Internal: when a request was first parked (for ``REP_PARK_TIMEOUT``).
PARKED_AT = "_rep_parked_at"
#: Internal: the id of a held request's record in the shared queue's Redis.
HELD_ID = "_rep_held_id"
#: Internal: bytes of a robots.txt download received so far (its size cap).
RECEIVED = "_rep_received"
#: Internal: which fetcher counts a download's bytes (robots.txt's or tdmrep.json's):
#: each listens to every download, and counts only its own.
COUNTED_BY = "_rep_counted_by"
#: Internal: a robots.txt download cut by the size cap.
TRUNCATED = "_rep_truncated"
#: Internal: a robots.txt download whose decompression failed.
ENCODING_ERROR = "_rep_encoding_error"
#: Internal: on a rendered request, the key of the browser guard that judges its sub-requests
BROWSER_GUARD = "_rep_browser_guard"
#: Internal: on a rendered request, the user's own page-init callback, run after the guard's
BROWSER_PAGE_INIT = "_rep_page_init"
#: Internal: on a rendered request, the record of the navigation the guard refused
BROWSER_NAVIGATION_DROP = "_rep_navigation_drop"
#: Internal: on a rendered request, the robots ``<meta>`` tags of the page's initial HTML
#: (the page directives are those of the initial HTML and the final DOM together)
BROWSER_INITIAL_METAS = "_rep_initial_metas"
#: Internal: with ``REP_ITEM_PROVENANCE``, when the downloader received the response
FETCHED_AT = "_rep_fetched_at"


def exempt(meta: dict[str, object]) -> bool:
    """Requests robots.txt does not govern here: opted out, or our own fetches."""
    return bool(meta.get(DONT_OBEY) or meta.get(ROBOTS_REQUEST))
