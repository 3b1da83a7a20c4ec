"""What each ``REP_*`` setting means: the third column of the reference's settings table.

``docs/_ext/reptables.py`` writes that table from the rows of
:class:`~scrapy_rep.runtime.settings.RepSettings` (name, default) and this text;
``tests/test_docs.py`` checks that every row has a meaning here and that no
meaning is left for a setting that is gone. The crawl never imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping

#: setting -> its meaning, one Markdown sentence for the reference's table
MEANINGS: Mapping[str, str] = {
    "REP_ENABLED": (
        "switch scrapy-rep on or off; off, with the add-on, means no robots.txt handling at "
        "all (Scrapy's built-in stays disabled)"
    ),
    "REP_PRODUCT_TOKEN": (
        "token matched against `User-agent` lines; else taken from `ROBOTSTXT_USER_AGENT`, "
        "then `USER_AGENT`: their first product that is not a browser's (`Mozilla/5.0 "
        "(compatible; shopbot/1.0)` gives `shopbot`)"
    ),
    "REP_FETCH_TIMEOUT": (
        "seconds a robots.txt download may take; a third of it (at least 1 s) is how long a "
        "dead worker's fetch lock blocks the others (Redis, SQLite; a live worker renews it)"
    ),
    "REP_CACHE_TTL": ("longest a policy is used before a refetch (RFC 9309 §2.4: 24 h)"),
    "REP_CACHE_MAX_BYTES": (
        "bytes the local cache's origins may take, whatever their files: each counts ~1.5 KiB"
        " plus its compressed robots.txt (at most ~520 KiB, an incompressible 500 KiB file), "
        "least recently used evicted first; the evicted ones kept compact have as much again."
        " 2 GiB holds ~1,000,000 real files, ~4,000 hostile ones. It also sets the origins "
        "cached, one per 2 KiB (1,048,576; their per-origin report counters too), and the "
        "compiled rules kept, an eighth (256 MiB: ~9,000 real files, each counted ~29 KiB; a "
        "hostile 500 KiB one at most ~36 MiB); the others are compiled again when next judged"
        " (~0.1 ms for a median file)"
    ),
    "REP_STATUS_ACTIONS": (
        "override rows of the status table, e.g. `{'401': 'allow', '403': 'allow'}` (actions:"
        " rules, allow, disallow, pause)"
    ),
    "REP_PAUSE_INITIAL": ("first back-off of a paused origin, seconds; doubles per try"),
    "REP_PAUSE_MAX": ("longest back-off, seconds"),
    "REP_PAGE_STATUS_ACTIONS": (
        "override rows of the page status table, e.g. `{'503': 'off'}` (actions: pause, "
        "block, off; defaults: 429 and 503 pause, 401 and 403 block)"
    ),
    "REP_BLOCK_AFTER": (
        "401/403 page responses in a row that stop an origin which served pages (`blocked`)"
    ),
    "REP_PENDING_WAIT": (
        "seconds a request waits in the downloader for a fetch before it is parked instead"
    ),
    "REP_PARK_MAX": (
        "requests held at most, shared fairly by origin: when full, the origin holding the "
        "most gives way to one holding fewer; what overflows is dropped with `park-overflow`,"
        " counted for its own origin"
    ),
    "REP_PARK_TIMEOUT": ("longest a request stays parked before `park-expired`"),
    "REP_COLLECTION_POLICY": (
        "import path of `callable(request, spider)` answering `approved`, `rejected` or "
        "`unresolved`"
    ),
    "REP_COLLECTION_UNRESOLVED_ACTION": ("`drop` or `park` what the hook leaves unresolved"),
    "REP_CRAWL_DELAY_MAX": (
        "cap on an applied Crawl-delay, seconds; `0` turns Crawl-delay off (the download "
        "slots are left as Scrapy sets them)"
    ),
    "REP_DECISION_LOG": (
        "path of a JSON Lines audit log of decisions and fetches; takes the placeholders of "
        "`FEEDS` URIs (`%(name)s`, `%(time)s`, `%(_job)s`: see docs/report.md)"
    ),
    "REP_POLICY_ARCHIVE": (
        "directory keeping each distinct robots.txt body once, as `<digest>.txt`"
    ),
    "REP_REPORT": (
        "`True`: log a per-origin summary (top origins, totals) at close; `False`: not; a "
        "path: that summary, and an HTML page written there at close from this crawl's audit "
        "log records (`scrapy-rep report`; needs `REP_DECISION_LOG`; takes the placeholders "
        "of `FEEDS` URIs, as `REP_DECISION_LOG` does)"
    ),
    "REP_STORE": (
        "`memory`; `redis` to share policies across a cluster (at `REDIS_URL`, else "
        "redis://127.0.0.1:6379), or a Redis URL, e.g. `redis://host:6379/0?prefix=shop` "
        "(keys start `<prefix>:v1:`, by default `scrapy-rep`); `sqlite` to keep them in "
        "`<JOBDIR>/rep-policies.sqlite`, or `sqlite:///abs/path.sqlite`, "
        "`sqlite:relative/path.sqlite`; `auto`: `sqlite` with a JOBDIR, else `memory`"
    ),
    "REP_WORKER_LEASE": (
        "with `REP_STORE = 'redis'` and scrapy-redis: seconds a killed worker's held requests"
        " stay recorded in Redis before a survivor requeues them; renewed, and the dead "
        "workers' looked for, every third of that"
    ),
    "REP_PAGE_DIRECTIVES": (
        'obey page-level directives: `<meta name="robots">`, `X-Robots-Tag` (`nofollow`, '
        "`noindex`, `none`, `unavailable_after`)"
    ),
    "REP_PAGE_NOINDEX_ACTION": (
        "`drop` the items of a `noindex` page, or `keep` them (and only count them)"
    ),
    "REP_REL_NOFOLLOW": ('also drop requests for URLs a page links to only with `rel="nofollow"`'),
    "REP_USES": (
        "what the crawl collects for: any of `train-ai`, `ai-input`, `search`; each request "
        "is answered for them (see docs/uses.md)"
    ),
    "REP_USE_ACTION": (
        "`record` the use answers, or `drop` a request robots.txt refuses for a declared use"
    ),
    "REP_USE_TOKENS": (
        "per use, a policy token whose robots.txt group gives the site's rule for that use, "
        "e.g. `{'train-ai': 'shopbot-training'}`"
    ),
    "REP_BROWSER_GUARD": (
        "with scrapy-playwright configured: judge every request the browser makes while "
        "rendering (images, scripts, iframes, fetch/XHR, redirect hops) and abort what "
        "robots.txt does not allow"
    ),
    "REP_IDENTITY_ACTION": (
        "what is done with a request leaving for the network (after every downloader "
        "middleware) whose `User-Agent` does not carry the product token (`token-missing`), "
        "or sent to an origin that answered 403 or 429 lately with another `User-Agent` or "
        "proxy than the refused one (`identity-changed`): `drop` it, `warn` (sent; one "
        "WARNING per origin) or `off`; one for both, or a dict of the ones to change, e.g. "
        "`{'token-missing': 'drop'}`"
    ),
    "REP_EXCLUDE": (
        "sites never requested, robots.txt included: a list of domains, or the path of a file"
        " of them one a line (`#` comments); each covers its subdomains; dropped with "
        "`excluded-site`"
    ),
    "REP_ITEM_PROVENANCE": (
        "item field (e.g. `'_rep'`) every item a callback yields, and every file a media "
        "pipeline stores, gets: the URL, the REP decision, the policy's version and each "
        "declared use's answer (see docs/uses.md); an item type without the field is logged "
        "once as an error and yielded unchanged"
    ),
    "REP_SPIDERMON": (
        "run scrapy-rep's Spidermon monitor suite when the engine stops (needs "
        "`scrapy-rep[spidermon]`; enables Spidermon): `True` for the default thresholds, or a"
        " dict of the ones to change: `not_allowed` (0), `held_at_close` (0), "
        "`blocked_origins` (10), `uses_refused` (50, percent), `items_dropped` (50, percent);"
        " see docs/report.md"
    ),
}
