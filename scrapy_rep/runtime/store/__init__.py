"""Where policies live: a bounded local cache, and optionally a store shared by a cluster."""

from scrapy_rep.runtime.store.base import SharedStore
from scrapy_rep.runtime.store.factory import open_store
from scrapy_rep.runtime.store.memory import PolicyCache

__all__ = ["PolicyCache", "SharedStore", "open_store"]
