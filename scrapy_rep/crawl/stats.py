"""Every stats key scrapy-rep counts, with what it counts: the reference's stats table.

Bounded dimensions only (status, reason, outcome, exception class), never one key
per origin. ``<name>`` stands for the dimension; a test checks that every key the
code counts is here, and every key here is counted somewhere.
"""

from collections.abc import Mapping

#: key -> what it counts
STATS: Mapping[str, str] = {
    "rep/judgements": "judgements of a request against a policy: a request parked, then "
    "judged when its origin resumes, counts once per judgement",
    "rep/judgements/<rep_decision>": "the same, by `allow`, `disallow`, `unresolved`",
    "rep/downloaded": "requests let through to the downloader (each request's final answer "
    "counts once: `rep/downloaded` + `rep/dropped/*` = requests)",
    "rep/downloaded/not-allowed": "requests let through whose REP decision was not `allow`: "
    "never, by construction; the Spidermon suite's check (`REP_SPIDERMON`)",
    "rep/dropped/<reason>": "requests dropped, by reason (`page-nofollow` and `link-nofollow` "
    "from page directives)",
    "rep/parked": "requests parked",
    "rep/parked/<reason>": "the same, by reason (`origin-paused`, `origin-pending`, ...)",
    "rep/released": "parked requests handed back",
    "rep/requeued": "parked requests pushed back to a shared scrapy-redis queue at close",
    "rep/cluster/requeued-from-dead-worker": "held requests of dead workers (lease expired) "
    "this worker moved back into the shared scrapy-redis queue",
    "rep/cluster/held-unrecorded": "held requests that could not be recorded in Redis (not "
    "serialisable: a lambda callback, ...); lost if their worker is killed",
    "rep/cluster/delay-waits": "requests that waited for their send time under the cluster's "
    "shared Crawl-delay",
    "rep/robots/served_from_cache": "a spider's own robots.txt requests (`SitemapSpider`) "
    "answered from scrapy-rep's cache",
    "rep/held/saved": "requests held at a graceful stop and kept in the JOBDIR for the "
    "resumed crawl",
    "rep/held/restored": "requests a resumed crawl read back from its JOBDIR and judged again",
    "rep/cache/<outcome>": "policy lookups, by `hit` (a fresh cached policy), `miss` (none "
    "cached) and `expired`",
    "rep/fetch/count": "robots.txt fetches this crawler made (a fetch shared with another "
    "crawler counts for the one that made it)",
    "rep/fetch/outcome/<outcome>": "the same, by status-table row (`2xx`, `4xx`, `403`, "
    "`5xx`, `network`, ...); `not-modified`: a `304` to a conditional refetch renewed the "
    "copy in hand",
    "rep/fetch/error/<exception>": "network errors by exception class name",
    "rep/fetch/truncated": "bodies cut at 500 KiB",
    "rep/fetch/redirected": "fetches that followed redirects",
    "rep/fetch/reused": "policies this crawler adopted without fetching: another crawler's "
    "fetch in the same process, or the shared store",
    "rep/pauses/<outcome>": "pause events, by outcome (an origin paused three times in a row "
    "counts three)",
    "rep/resumes": "held origins that recovered",
    "rep/pushback/pauses/<cause>": "origins paused for what a page said, by cause "
    "(`rate-limited`: 429, `service-unavailable`: 503, `blocked`: 401/403 in a row); one per "
    "episode (responses already in flight that push back too do not count again)",
    "rep/pushback/resumes/<cause>": "page pauses that ended, by cause",
    "rep/pushback/held/<cause>": "requests held for a page's pause, by cause (also in "
    "`rep/parked/<reason>`)",
    "rep/pushback/released/<cause>": "requests held for a page's pause handed back, by cause",
    "rep/pushback/refused/<status>": "responses that pushed back (429, 503, ...) taken before "
    "Scrapy's RetryMiddleware: their requests are held and sent again after the pause, not "
    "retried at once nor given up",
    "rep/pushback/unsent": "requests waiting on a download slot taken back when their origin "
    "paused (held, not sent)",
    "rep/robots/with_diagnostics": "files with lines the parser did not understand",
    "rep/crawl_delay/applied": "download slots given a Crawl-delay floor",
    "rep/crawl_delay/capped": "Crawl-delays above `REP_CRAWL_DELAY_MAX`",
    "robotstxt/forbidden": "disallowed requests (Scrapy's own key, kept for dashboards)",
    "rep/use/<use>/<answer>": "judged requests by what robots.txt (and tdmrep.json) answer "
    "for a use: each declared use (`REP_USES`), and with none declared each use the site "
    "states; answers `allowed`, `refused`, `unknown`",
    "rep/page/nofollow": "pages that say `nofollow` (or `none`) to the product token",
    "rep/page/noindex": "pages that say `noindex` (or `none`, or a past `unavailable_after`)",
    "rep/page/noindex/items-dropped": "items of `noindex` pages dropped "
    '(`REP_PAGE_NOINDEX_ACTION = "drop"`)',
    "rep/page/noindex/items-kept": 'items of `noindex` pages kept and counted (`"keep"`)',
    "rep/page/invalid_date": "`unavailable_after` values that are no readable date (ignored)",
    "rep/page/use/<use>/<answer>": "responses answered for a declared use (`REP_USES`) after "
    "their own signals, by `allowed`, `refused`, `unknown`",
    "rep/page/items-dropped/<reason>": "items dropped for what their response says about a "
    'declared use: `use-refused` (`REP_USE_ACTION = "drop"`)',
    "rep/media/dropped/<reason>": "media pipeline downloads (`FilesPipeline`, "
    "`ImagesPipeline`: requests with no callback) failed for what their own response says "
    'about a declared use: `use-refused` (`REP_USE_ACTION = "drop"`)',
    "rep/tdmrep/fetch/count": "tdmrep.json fetches this crawler made (only with `train-ai` "
    "in `REP_USES`)",
    "rep/tdmrep/fetch/outcome/<outcome>": "the same, by status-table row (`2xx`, `4xx`, "
    "`5xx`, `network`, ...)",
    "rep/tdmrep/with_rules": "tdmrep.json files with at least one usable entry",
    "rep/tdmrep/unknown": "tdmrep.json files that could not be read (5xx, network): "
    "`train-ai` unknown from that source until the next TTL",
    "rep/tdmrep/with_diagnostics": "tdmrep.json files with something not understood (not "
    "JSON, an entry without a path pattern, a reservation neither 0 nor 1)",
    "rep/tdmrep/html": "tdmrep.json answered by an HTML page that is no JSON (a soft 404): "
    "no file, named in one INFO line at close, not warned about per origin",
    "rep/walls/<kind>": "responses that are a licence or payment wall, by `payment` (`402`) "
    "and `licence` (`401` with `WWW-Authenticate: License`): never retried, their items "
    "never produced; each is its request's final answer, counted in "
    "`rep/dropped/licence-required` too, and no longer in `rep/downloaded`",
    "rep/walls/origins-walled": "origins held like a block by a wall: `REP_BLOCK_AFTER` "
    "refusals in a row, walls among them (their other requests end `blocked`)",
    "rep/browser/allowed": "browser sub-requests (scrapy-playwright renders) let through, each "
    "judged URL counting once (a redirect hop too)",
    "rep/browser/aborted/<reason>": "browser sub-requests aborted, by reason: the drop "
    "reasons (`disallow-rule`, `origin-paused`, `origin-pending`, `policy-unresolved`, "
    "`robots-unreachable`, `collection-*`), `use-refused` (a page refusing a declared use, "
    'under `REP_USE_ACTION = "drop"`) and `guard-error` (the guard could not judge)',
    "rep/identity/<reason>": "requests that left for the network (after every downloader "
    "middleware) under the wrong identity, sent or dropped: `token-missing` (the `User-Agent` "
    "does not carry the product token), `identity-changed` (another `User-Agent` or proxy "
    "than the one the origin refused with a 403/429); the drops count in `rep/dropped/<reason>` "
    "too, and no longer in `rep/downloaded`",
}
