"""Every ``Request.meta`` key scrapy-rep reads or writes, in one place.

Public keys are documented in ``docs/reference.md``. Internal ones start with
an underscore, Scrapy's convention for keys that are nobody else's business.
"""

#: the decision record of a judged request (a plain, picklable dict)
DECISION = "rep_decision"
#: Scrapy's own switch: this request is not subject to robots.txt
DONT_OBEY = "dont_obey_robotstxt"
#: on a response: the page-level directives that applied to it (a plain dict)
PAGE = "rep_page"
#: on a response: each declared use (REP_USES) -> allowed, refused or unknown, after the
#: response's own signals
USE = "rep_use"
#: on the request a browser sub-request is judged as (collection hook): page URL, resource
#: type, method, redirect hop
SUBREQUEST = "rep_subrequest"
#: set by a spider on sitemap requests: their responses are not subject to page directives
SITEMAP = "rep_sitemap"

#: marks scrapy-rep's own robots.txt requests
ROBOTS_REQUEST = "_rep_robots"
#: why the downloader handed a request back to be parked
PARK = "_rep_park"
#: why a held request is on its way to be dropped in the downloader
DROP = "_rep_drop"
#: when a request was first parked (policy clock)
PARKED_AT = "_rep_parked_at"
#: robots.txt download: bytes received so far, cut by the body guard, encoding error
RECEIVED = "_rep_received"
TRUNCATED = "_rep_truncated"
ENCODING_ERROR = "_rep_encoding_error"
#: a rendered request: the key of the browser guard that judges its sub-requests
BROWSER_GUARD = "_rep_browser_guard"
#: a rendered request: the user's own page-init callback, run after the guard's
BROWSER_PAGE_INIT = "_rep_page_init"
#: a rendered request: the record of the navigation the guard refused
BROWSER_NAVIGATION_DROP = "_rep_navigation_drop"


def exempt(meta: dict[str, object]) -> bool:
    """Requests robots.txt does not govern here: opted out, or our own fetches."""
    return bool(meta.get(DONT_OBEY) or meta.get(ROBOTS_REQUEST))
