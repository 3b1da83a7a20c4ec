"""Signals scrapy-rep sends, besides Scrapy's own ``robots_parsed``.

Connect with ``crawler.signals.connect(handler, signal=...)``. The ``#:``
comment above each signal is its entry in the reference's table.
"""

#: An origin is paused (its robots.txt answered 401/403/429/5xx or could not be
#: reached); handlers receive ``origin`` (``scheme://host:port``), ``policy`` (the
#: new ``scrapy_rep.core.policy.Policy``) and ``spider``.
origin_paused = object()
#: A paused origin can be judged again; handlers receive ``origin``, ``policy`` and
#: ``spider``.
origin_resumed = object()
