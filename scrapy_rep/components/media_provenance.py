"""Provenance for the files media pipelines store (``REP_ITEM_PROVENANCE``).

Scrapy's ``FilesPipeline`` and ``ImagesPipeline`` download each file with a
request of their own, which scrapy-rep judges like any other; these
subclasses add that file's provenance (the same fields as an item's:
:func:`~scrapy_rep.components.provenance.provenance`) under the
``REP_ITEM_PROVENANCE`` field of each file's entry in the item's ``files`` /
``images`` list::

    ITEM_PIPELINES = {"scrapy_rep.FilesPipeline": 1}  # instead of scrapy's

With the setting off they are Scrapy's pipelines, unchanged. A file already
stored and still fresh (``uptodate``) was not fetched in this crawl: its
entry has no provenance.

Beside :mod:`scrapy_rep.components.media`, which answers the declared uses for
the same downloads (and drops the refused ones) as a downloader middleware:
that one decides whether a file is stored; this one records, for a file
stored, the evidence it was collectable. Its ``uses`` are the same answers.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from scrapy.pipelines.files import FilesPipeline as _ScrapyFilesPipeline
from scrapy.pipelines.images import ImagesPipeline as _ScrapyImagesPipeline

from scrapy_rep.components.provenance import ProvenanceSource, provenance
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response


class _WithProvenance:
    """Adds the file's provenance to what ``media_downloaded`` returns (sync or async)."""

    _rep_source: ProvenanceSource | None = None
    _rep_field: str | None = None
    _rep_read = False

    def media_downloaded(
        self, response: Response, request: Request, info: Any, *, item: Any = None
    ) -> Any:
        found = super().media_downloaded(response, request, info, item=item)  # type: ignore[misc]
        if not self._rep_ready():
            return found
        if inspect.isawaitable(found):  # Scrapy >= 2.14's async pipelines

            async def marked() -> Any:
                return self._rep_mark(await found, response)

            return marked()
        return self._rep_mark(found, response)

    def _rep_ready(self) -> bool:
        if not self._rep_read:
            self._rep_read = True
            crawler = getattr(self, "crawler", None)
            config = RepSettings.of(crawler) if crawler is not None else None
            if config is not None and config.item_provenance is not None:
                self._rep_field = config.item_provenance
                self._rep_source = ProvenanceSource(config)
        return self._rep_source is not None

    def _rep_mark(self, result: Any, response: Response) -> Any:
        if isinstance(result, dict) and self._rep_source is not None and self._rep_field:
            result[self._rep_field] = provenance(self._rep_source, response)
        return result


class FilesPipeline(_WithProvenance, _ScrapyFilesPipeline):
    """Scrapy's ``FilesPipeline``; with ``REP_ITEM_PROVENANCE``, each file's provenance."""


class ImagesPipeline(_WithProvenance, _ScrapyImagesPipeline):
    """Scrapy's ``ImagesPipeline``; with ``REP_ITEM_PROVENANCE``, each image's provenance."""
