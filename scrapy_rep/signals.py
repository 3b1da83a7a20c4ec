"""Signals scrapy-rep sends, besides Scrapy's own ``robots_parsed``.

Handlers receive ``origin`` (``scheme://host:port``), ``policy`` (the new
:class:`~scrapy_rep.core.policy.Policy`) and ``spider``.
"""

origin_paused = object()
origin_resumed = object()
