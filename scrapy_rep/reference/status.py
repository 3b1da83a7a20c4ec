"""The words of the two status tables of the reference: what RFC 9309 says of each
robots.txt fetch outcome, and what each page status the crawl acts on does.

The actions themselves are the code's (``DEFAULT_ACTIONS``, ``DEFAULT_PAGE_ACTIONS``);
these sentences are for the docs, the tests and the command: a crawl never imports them.
"""

from __future__ import annotations

from collections.abc import Mapping

#: robots.txt fetch outcome (a row of ``core/policy.py``'s ``DEFAULT_ACTIONS``) -> what
#: RFC 9309 says of it: the status table's middle column, and ``scrapy-rep describe``'s
RFC_BEHAVIOUR: Mapping[str, str] = {
    "2xx": "parse and obey (§2.3.1.1)",
    "4xx": "unavailable: may crawl anything (§2.3.1.3)",
    "401": "unavailable: may crawl anything (§2.3.1.3)",
    "403": "unavailable: may crawl anything (§2.3.1.3)",
    "429": "unavailable: may crawl anything (§2.3.1.3)",
    "5xx": "unreachable: complete disallow (§2.3.1.4)",
    "network": "unreachable: complete disallow (§2.3.1.4)",
    "redirect-limit": "more than 5 redirects: may treat as unavailable (§2.3.1.2)",
    "3xx": "a redirect with no Location: nothing to follow; unavailable (§2.3.1.3)",
    "excluded-redirect": "a redirect into a site of REP_EXCLUDE, not followed: the file "
    "cannot be read, as if unreachable (§2.3.1.4)",
}

#: page status (a row of ``core/pushback.py``'s ``DEFAULT_PAGE_ACTIONS``) -> what it does:
#: the page status table's middle column
PAGE_BEHAVIOUR: Mapping[str, str] = {
    "429": "`rate-limited`: the origin pauses for `Retry-After` (or the back-off); the "
    "request is held and sent again after the pause",
    "503": "`service-unavailable`: as 429",
    "401": "`blocked` after `REP_BLOCK_AFTER` in a row from an origin that served pages: "
    "the origin stops for 6 h; a lone one is that URL's answer",
    "403": "as 401",
    "402": "a licence or payment wall (so is a 401 with `WWW-Authenticate: License`): the "
    "request is dropped (`licence-required`), never retried; `REP_BLOCK_AFTER` refusals in "
    "a row block the origin as 401",
}
