"""The last line of defence on log line length: call sites summarise a site's text
(``robotstxt/text.py``); a message still longer than :data:`MESSAGE_LIMIT` is clipped
here, whatever a future call site forgets.
"""

from __future__ import annotations

import logging

from scrapy_rep.robotstxt.text import MAX_RECORD, clip

#: the longest message kept whole: a line's time, logger name and level fit beside it,
#: and the "… (N more characters)" a clipped message ends with
MESSAGE_LIMIT = MAX_RECORD - 256


class LineLimit(logging.Filter):
    """Clips a record's message past :data:`MESSAGE_LIMIT` characters (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args or not isinstance(record.msg, str):
            message = record.getMessage()
        else:
            message = record.msg  # no formatting: the usual line costs a len()
        if len(message) > MESSAGE_LIMIT:
            record.msg, record.args = clip(message, MESSAGE_LIMIT), None
        return True


_FILTER = LineLimit()


def bound_lines(package: str = "scrapy_rep") -> int:
    """Put :class:`LineLimit` on every logger of ``package`` made so far (a logger's filters
    see only its own records, not its children's); how many got it now. Idempotent."""
    added = 0
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger):
            continue  # a placeholder of a logger not made yet
        if name != package and not name.startswith(package + "."):
            continue
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
            added += 1
    return added


class Outage:
    """What a crawl says of a shared service it leans on (the store, the cluster's pace).

    A failure is a WARNING the first time, DEBUG while the service stays down, and
    one INFO line when it answers again: a Redis outage is a few lines in the log,
    not one a request.
    """

    def __init__(self, log: logging.Logger, failing: str, fallback: str, back: str) -> None:
        """``failing``: a message with ``%(error)s``; ``fallback``: what the crawl does
        meanwhile (appended after "; "); ``back``: the line when it answers again."""
        self.log = log
        self.message = f"{failing}; {fallback}"
        self.back = back
        self.down = False

    def failed(self, exc: BaseException, **fields: str) -> None:
        say = self.log.debug if self.down else self.log.warning
        self.down = True
        say(self.message, {**fields, "error": f"{type(exc).__name__}: {exc}"})

    def answered(self) -> None:
        if self.down:
            self.down = False
            self.log.info(self.back)
