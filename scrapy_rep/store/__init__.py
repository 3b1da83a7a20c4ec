"""Where policies live: a bounded local cache, and optionally a store shared by a cluster."""

from scrapy_rep.store.base import SharedStore
from scrapy_rep.store.factory import open_store
from scrapy_rep.store.memory import PolicyCache

__all__ = ["PolicyCache", "SharedStore", "open_store"]
