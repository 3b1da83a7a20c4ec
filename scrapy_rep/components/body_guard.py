"""``BodyGuard``: robots.txt bodies inflated to 500 KiB at most."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from scrapy_rep.crawl import meta as M
from scrapy_rep.robotstxt import MAX_BYTES

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response


class BodyGuard:
    """Decompresses robots.txt bodies itself, stopping at 500 KiB: between Scrapy's
    HttpCompressionMiddleware and the downloader, it cuts a gzip bomb served as robots.txt
    at the cap instead of inflating it whole. Other responses pass untouched."""

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        if not request.meta.get(M.ROBOTS_REQUEST):
            return response
        encodings = [
            e.strip().lower()
            for value in response.headers.getlist(b"Content-Encoding")
            for e in value.split(b",")
            if e.strip()
        ]
        if not encodings:
            return response
        body = response.body
        for encoding in reversed(encodings):
            if encoding == b"identity":
                continue
            if encoding not in (b"gzip", b"x-gzip", b"deflate"):
                request.meta[M.ENCODING_ERROR] = "UnsupportedEncoding"
                return response.replace(body=b"")
            try:
                body, cut = _inflate(body, encoding)
            except zlib.error:
                request.meta[M.ENCODING_ERROR] = "BadCompression"
                return response.replace(body=b"")
            if cut:
                request.meta[M.TRUNCATED] = True
        headers = response.headers.copy()
        del headers[b"Content-Encoding"]
        return response.replace(body=body, headers=headers)


def _inflate(data: bytes, encoding: bytes) -> tuple[bytes, bool]:
    """At most MAX_BYTES + 1 of the decompressed data, and whether it was cut."""
    if encoding == b"deflate":
        try:
            return _bounded(zlib.decompressobj(), data)
        except zlib.error:
            return _bounded(zlib.decompressobj(-zlib.MAX_WBITS), data)  # raw deflate
    return _bounded(zlib.decompressobj(16 + zlib.MAX_WBITS), data)


def _bounded(inflater: Any, data: bytes) -> tuple[bytes, bool]:
    out = inflater.decompress(data, MAX_BYTES + 1)
    return out, len(out) > MAX_BYTES or bool(inflater.unconsumed_tail)
