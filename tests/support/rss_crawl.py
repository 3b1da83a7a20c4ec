"""One crawl in a process of its own, for its peak RSS.

Usage: ``python -m tests.support.rss_crawl '<json config>'`` with keys ``urls``,
``settings`` (added to ``tests/support/crawl.BASE_SETTINGS``), ``follow`` (the
spider follows links; default false) and ``out`` (a JSON
report written at the end: ``maxrss_kib``, this process's peak resident set
as ``getrusage`` gives it, and the crawl's ``stats``). The sites are served by
the parent (``FakeSite``), so the child's RSS is the crawler's alone.
"""

from __future__ import annotations

import json
import logging
import resource
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    level = (config.get("settings") or {}).get("LOG_LEVEL", "INFO")
    logging.basicConfig(  # the crawl log on stderr, as ``scrapy crawl`` writes it
        level=level, stream=sys.stderr, format="%(asctime)s [%(name)s] %(levelname)s: %(message)s"
    )
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import reactor
    from twisted.internet.defer import ensureDeferred

    from tests.support.crawl import crawl

    results: list[Any] = []

    async def run() -> None:
        try:
            settings, follow = config.get("settings") or {}, bool(config.get("follow"))
            results.append(await crawl(config["urls"], settings, follow=follow))
        finally:
            reactor.stop()  # type: ignore[attr-defined]

    reactor.callWhenRunning(lambda: ensureDeferred(run()))  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    (result,) = results
    report = {
        "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "stats": {k: v for k, v in result.stats.items() if isinstance(v, (int, float, str))},
        "downloaded": result.downloaded,
        "dropped": result.dropped,
    }
    Path(config["out"]).write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
