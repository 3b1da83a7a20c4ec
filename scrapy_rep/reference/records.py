"""The audit log's record types (``REP_DECISION_LOG``), in the reference's order.

The reference's table of records is made from :data:`RECORDS`, and
``tests/test_docs.py`` holds every type the package writes against it. Plain data
for the docs, the tests and the command: a crawl never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping

#: record type -> (one per, fields besides ``type``, ``at`` and ``crawl``)
RECORDS: Mapping[str, tuple[str, str]] = {
    "decision": (
        "judged request; and every final answer, whoever made it: a held request dropped "
        "without a new judgement (`park-overflow`, `park-expired`, `spider-closed`, "
        "`unserializable`), a request dropped for a page's directives (`policy_status` `page`), "
        "a held request handed over at close (`action` `requeue`: pushed back into the shared "
        "scrapy-redis queue; `keep`: kept in the JOBDIR for the resumed crawl; `reason`: why "
        "it was held)",
        "the decision record",
    ),
    "fetch": (
        "robots.txt fetch",
        "`origin`, `url`, `final_url`, `status`, `http_status`, `outcome`, `fetched_at`, "
        "`expires_at`, `digest`, `size`, `truncated`, `reason`, `archive` (path in "
        "`REP_POLICY_ARCHIVE`, or null), `licenses` (the file's RSL `License` URLs)",
    ),
    "parked": (
        "request held",
        "`url`, `origin`, `reason`; held for a page's pause (`rate-limited`, "
        "`service-unavailable`, `blocked`) also `status`, `retry_after` (seconds read, or "
        "null), `page` (the page that said it), `until` (the pause's end)",
    ),
    "page_pause": (
        "origin paused for what a page said (429, 503; `blocked`: 401/403 in a row)",
        "`origin`, `cause` (`rate-limited`, `service-unavailable`, `blocked`), `status`, `url` "
        "(the page that said it), `retry_after` (seconds read, or null), `started`, `until` "
        "(the pause's end), `level` (pushbacks in a row), `statuses`, `first_url`, `last_url` "
        "(a block's refusals), `shared` (another worker saw it)",
    ),
    "page_resume": (
        "a page's pause ended (its requests go again, one in flight at first)",
        "`origin`, `cause`, `started`, `until`",
    ),
    "released": (
        "held request handed back to the scheduler",
        "`url`, `origin`, `reason` (why it was held)",
    ),
    "requeued": (
        "held request of a dead worker (its lease expired) this worker pushed back into the "
        "shared scrapy-redis queue, recorded by an older scrapy-rep without what a decision "
        "record needs (otherwise: a `decision` record, action `requeue`)",
        "`url`, `reason` (`worker-lease-expired`), `worker` (the dead worker's id)",
    ),
    "response": (
        "downloaded request",
        "`url` (the decision's), `origin`, `target_status` (the page's own HTTP status, kept "
        "apart from the robots.txt status), `response_url`",
    ),
    "subrequest": (
        "request a browser made while rendering a page (scrapy-playwright), one per URL "
        "judged: a redirect hop is a record of its own",
        "the decision record (`url`: the URL judged), `page`, `request_url` (the first URL "
        "of its redirect chain), `method`, `resource_type`, `hop`; with `REP_USES`, "
        "`page_use` (the page's own answer per use: `answer`, `source`)",
    ),
    "page_use": (
        "response a spider's callback got, or a media pipeline downloaded, with `REP_USES` set",
        "`url`, `origin`, `uses` (declared use -> `answer`, `source`: what `rep_use` says, "
        "and where it was said)",
    ),
    "item_dropped": (
        'item dropped for a use its response refuses (`REP_USE_ACTION = "drop"`) or for '
        "its page's `noindex`; a media pipeline's download failed for a use its response "
        "refuses",
        "`url` (the response's), `reason` (`use-refused`, `page-noindex`), `detail` (the "
        "use and where it was refused, or where `noindex` was said); `media` (true: a "
        "media pipeline's file, not an item)",
    ),
    "tdmrep": (
        "tdmrep.json fetch (only with `train-ai` in `REP_USES`)",
        "the fields of `fetch`, `rules` (entries kept; null when the file could not be read: "
        "5xx, network) and `diagnostics` (what was not understood)",
    ),
    "identity": (
        "request that left for the network under the wrong identity (`REP_IDENTITY_*`): "
        "its `User-Agent` without the product token, or another identity than the one its "
        "origin refused (403/429); a dropped one also has its `decision` record",
        "`origin`, `url`, `reason` (`token-missing`, `identity-changed`), `action` (`warn`: "
        "sent; `drop`), `user_agent`, `detail` (what changed, and the middlewares that may "
        "have changed it)",
    ),
    "origin": (
        "origin, at close",
        "the report's counters: `downloaded`, `dropped` (reason -> count), `parked`, "
        "`released`, `fetches` (made by this crawler), `reused` (policies another crawler "
        "or the shared store fetched), `status`, `crawl_delay`, `browser_allowed`, "
        "`browser_aborted` (reason -> count), `uses_refused` (use -> judged requests robots.txt "
        "refused it for), `walls` (licence or payment walls met), `wall` (what the last asked)",
    ),
    "licence_wall": (
        "response that is a licence or payment wall (`402`, or `401` with "
        "`WWW-Authenticate: License`): not retried, its items never produced",
        "`url`, `origin`, `kind` (`payment`, `licence`), `status`, `said` (one line), "
        "`server` (the licence server a `License` challenge names), `price` "
        "(`crawler-price`), `headers` (`www-authenticate`, `crawler-price`, `link`, as sent), "
        "`walled` (the `REP_BLOCK_AFTER`-th refusal in a row: the origin is held like a "
        "block from now), `licenses` (the origin's robots.txt RSL `License` URLs)",
    ),
}
