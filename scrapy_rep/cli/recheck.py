"""``scrapy-rep recheck FEED -o KEPT``: re-judge a dataset against what its sites say now.

Before training on a dataset collected weeks ago, ask each site again: each
origin's robots.txt (and tdmrep.json when ``train-ai`` is declared) is
fetched once, through a real Scrapy crawler with the project's settings and
the add-on (the same fetch, status table, cache and shared store as a
crawl; nothing else is downloaded), and every item's URL is judged:

- ``allowed``: still allowed, for every declared use;
- ``refused``: a rule disallows it now, or a declared use is refused (which
  rule, line, or use-preference line);
- ``unknown``: the origin's robots.txt could not be read (its status).

The feed is JSON Lines (``.jsonl``, ``.jl``, ``.ndjson``), JSON (an array) or
CSV, by its extension; the URL is the field ``--url-field`` (default ``url``).
The feed is read as a stream, one item at a time (a JSON array too), and read
again to write what is kept: what is held is one item and a verdict per URL.
The items still allowed (and, with ``--keep-unknown``, the unknown ones) are
written to ``-o`` in the feed's format; ``--report`` writes one JSON line per
item with its verdict and why. Every item not allowed is listed on stdout,
then a summary line; progress goes to stderr.

Exit status: 0 every item still allowed, 1 some now refused, 3 none refused
but some unknown, 2 a usage or input error. Inside a Scrapy project the
project's settings apply (its token, uses, proxies, store); ``-s NAME=VALUE``
and ``--use`` override them.
"""

from __future__ import annotations

import argparse
import codecs
import csv
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

from scrapy_rep.cli.subcommand import subcommand
from scrapy_rep.core.origin import NotAnOrigin, origin_of
from scrapy_rep.core.recheck import ALLOWED, REFUSED, UNKNOWN, VERDICTS, ItemVerdict, verdict
from scrapy_rep.core.uses import USES
from scrapy_rep.robotstxt.text import printable

EXIT_ALLOWED, EXIT_REFUSED, EXIT_ERROR, EXIT_UNKNOWN = 0, 1, 2, 3
_FORMATS = {".jsonl": "jsonl", ".jl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
#: the longest item (a JSON Lines line, a CSV field) read, in characters: a page's text of
#: a few MB fits; a longer line (a sparse or corrupt file) is said at once, never held whole
LONGEST_ITEM = 64 * 1024 * 1024
#: how much of a JSON array is read at a time, in characters (doubled for a longer item)
JSON_CHUNK = 64 * 1024
_JSON_SPACE = " \t\n\r"
#: how feeds are written: undecodable octets of the feed (read with ``surrogateescape``) go
#: back out as they came; another lone surrogate (JSON's ``\ud800``) as that escape
_WRITE_ERRORS = "scrapy_rep.recheck"


def _unencodable(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    char = ord(exc.object[exc.start])
    if 0xDC80 <= char <= 0xDCFF:  # an octet surrogateescape read: that octet
        return bytes([char - 0xDC00]), exc.start + 1
    return f"\\u{char:04x}", exc.start + 1


codecs.register_error(_WRITE_ERRORS, _unencodable)


class _InputError(Exception):
    """A feed or option problem, said in one line."""


def add_parser(subparsers: Any) -> None:
    """Register ``recheck`` on the ``scrapy-rep`` command's subparsers."""
    recheck = subcommand(
        subparsers,
        "recheck",
        "re-judge a dataset's items against what their sites say now",
        __doc__,
    )
    recheck.add_argument("feed", metavar="FEED", help="JSON Lines, JSON or CSV items")
    recheck.add_argument("-o", "--output", metavar="KEPT", help="write the kept items here")
    recheck.add_argument("--url-field", default="url", help="the items' URL field (url)")
    recheck.add_argument("--report", metavar="PATH", help="one JSON line per item: its verdict")
    recheck.add_argument(
        "--keep-unknown", action="store_true", help="keep items whose site could not be asked"
    )
    recheck.add_argument(
        "--use", action="append", choices=USES, help="declare this use (repeatable): REP_USES"
    )
    recheck.add_argument(
        "-s", "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting"
    )
    recheck.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        kind = _format(args.feed)
        out_kind = _format(args.output) if args.output else kind
        for path in (args.output, args.report):
            if path:
                _writable(path)  # before anything is fetched
        urls: dict[str, None] = {}  # each URL once, in the feed's order
        for item in _items(args.feed, kind):
            url = _url(item, args.url_field)
            if url is not None:
                urls[url] = None
        settings = _settings(args)
    except _InputError as exc:
        print(printable(f"scrapy-rep: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"scrapy-rep: error: cannot read {args.feed}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    origins: dict[str, list[str]] = {}
    unjudged: dict[str, ItemVerdict] = {}  # URLs no site can be asked about, and why
    for url in urls:
        try:
            url.encode("utf-8")
            origins.setdefault(origin_of(url), []).append(url)
        except (NotAnOrigin, ValueError) as exc:  # http://[ ; a lone surrogate
            unjudged[url] = ItemVerdict(UNKNOWN, f"not a URL: {exc}")
    del urls
    total = sum(len(found) for found in origins.values())
    from scrapy_rep.cli.recheck_crawl import recheck  # Scrapy only when there is work

    records, problems = recheck(settings, origins, _progress(total, len(origins)))
    if problems:
        for problem in problems:
            print(f"scrapy-rep: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    verdicts = {url: verdict(record) for url, record in records.items()} | unjudged
    return _write(args, kind, out_kind, verdicts, records)


class _Verdicts:
    """Each item's verdict, from its URL's."""

    def __init__(self, verdicts: dict[str, ItemVerdict], field: str) -> None:
        self.verdicts = verdicts
        self.field = field
        self.no_url = ItemVerdict(UNKNOWN, f"no http(s) URL in field {field!r}")

    def of(self, item: Any) -> tuple[str | None, ItemVerdict]:
        url = _url(item, self.field)
        found = self.verdicts.get(url) if url is not None else None
        return url, found or self.no_url


class _Kept:
    """The feed's items whose verdict is kept, read from the feed again at each pass (a CSV
    is written in two: its columns, then its rows)."""

    def __init__(self, feed: str, kind: str, verdicts: _Verdicts, keep: set[str]) -> None:
        self.feed, self.kind, self.verdicts, self.keep = feed, kind, verdicts, keep

    def __iter__(self) -> Iterator[Any]:
        for item in _items(self.feed, self.kind):
            if self.verdicts.of(item)[1].verdict in self.keep:
                yield item


def _write(
    args: argparse.Namespace,
    kind: str,
    out_kind: str,
    verdicts: dict[str, ItemVerdict],
    records: Mapping[str, Mapping[str, Any]],
) -> int:
    counts = dict.fromkeys(VERDICTS, 0)
    keep = {ALLOWED, UNKNOWN} if args.keep_unknown else {ALLOWED}
    judged = _Verdicts(verdicts, args.url_field)
    report = (
        open(args.report, "w", encoding="utf-8", errors=_WRITE_ERRORS)  # noqa: SIM115
        if args.report
        else None
    )
    kept = items = 0
    try:
        for item in _items(args.feed, kind):
            url, found = judged.of(item)
            items += 1
            counts[found.verdict] += 1
            if found.verdict != ALLOWED:
                print(printable(f"{found.verdict:8} {url}  {found.why}"))
            if found.verdict in keep:
                kept += 1
            if report is not None:
                record = records.get(url or "", {})
                line: dict[str, Any] = {
                    "url": url,
                    "verdict": found.verdict,
                    "why": found.why,
                    "policy_status": record.get("policy_status"),
                    "policy_fetched_at": record.get("policy_fetched_at"),
                    "uses": record.get("uses") or {},
                }
                report.write(json.dumps(line, ensure_ascii=False) + "\n")
    finally:
        if report is not None:
            report.close()
    if args.output:
        try:
            _dump(args.output, out_kind, _Kept(args.feed, kind, judged, keep))
        except OSError as exc:
            print(f"scrapy-rep: error: cannot write {args.output}: {exc}", file=sys.stderr)
            return EXIT_ERROR
    where = f"; kept {kept} in {args.output}" if args.output else ""
    print(
        f"{items} items: {counts[ALLOWED]} allowed, {counts[REFUSED]} refused, "
        f"{counts[UNKNOWN]} unknown{where}"
    )
    if counts[REFUSED]:
        return EXIT_REFUSED
    return EXIT_UNKNOWN if counts[UNKNOWN] else EXIT_ALLOWED


def _format(path: str) -> str:
    found = _FORMATS.get(os.path.splitext(path)[1].lower())
    if found is None:
        raise _InputError(f"{path}: not a feed scrapy-rep reads (.jsonl, .jl, .json, .csv)")
    return found


def _writable(path: str) -> None:
    """Raise :class:`_InputError` unless a file can be written at ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "is a directory")
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".recheck-"):
            pass
    except OSError as exc:
        raise _InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _lines(f: Any, path: str) -> Iterator[tuple[int, str]]:
    """``f``'s lines, numbered; a line longer than :data:`LONGEST_ITEM` is an input error."""
    number = 0
    while line := f.readline(LONGEST_ITEM + 1):
        number += 1
        if len(line) > LONGEST_ITEM:
            raise _InputError(f"{path}, line {number}: longer than {LONGEST_ITEM} characters")
        yield number, line


def _decoded(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise _InputError(f"{where}: nested too deep") from None
    except ValueError as exc:
        raise _InputError(f"{where}: not JSON ({exc})") from None


def _items(path: str, kind: str) -> Iterator[Any]:
    """The feed's items; octets that are no UTF-8 kept (``surrogateescape``) to be written
    back as they were."""
    newline = "" if kind == "csv" else None
    with open(path, encoding="utf-8", errors="surrogateescape", newline=newline) as f:
        if kind == "csv":
            csv.field_size_limit(max(csv.field_size_limit(), LONGEST_ITEM))
            yield from csv.DictReader(line for _, line in _lines(f, path))
        elif kind == "json":
            yield from _json_array(f, path)
        else:
            for number, line in _lines(f, path):
                if line.strip():
                    yield _decoded(line, f"{path}, line {number}")


class _Buffer:
    """A sliding window on a text file: ``text[pos:]`` is what is not read yet."""

    def __init__(self, f: TextIO) -> None:
        self.f = f
        self.text, self.pos, self.eof = "", 0, False

    def more(self, at_least: int = JSON_CHUNK) -> bool:
        """Read on (``at_least`` characters, or to the end): False at the end of the file."""
        if self.eof:
            return False
        read = self.f.read(at_least)
        self.text = self.text[self.pos :] + read
        self.pos = 0
        self.eof = len(read) < at_least
        return bool(read)

    def next_char(self) -> str:
        """The next character that is no JSON whitespace ("" at the end), not consumed."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _JSON_SPACE:
                self.pos += 1
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos : self.pos + 1]


def _json_array(f: TextIO, path: str) -> Iterator[Any]:
    """The items of the JSON array in ``f``, decoded one at a time from a sliding buffer:
    what is held is one item (at most :data:`LONGEST_ITEM` characters), never the feed."""
    decoder = json.JSONDecoder()
    buffer = _Buffer(f)
    if buffer.next_char() != "[":
        raise _InputError(f"{path}: not a JSON array (a JSON feed is an array of items)")
    buffer.pos += 1
    count = 0
    while True:
        char = buffer.next_char()
        if not char:
            raise _InputError(f"{path}: not JSON (the array is cut short)")
        if char == "]":
            buffer.pos += 1
            if buffer.next_char():
                raise _InputError(f"{path}: not JSON (more after the array's end)")
            return
        if count:
            if char != ",":
                raise _InputError(f"{path}, item {count + 1}: not JSON (expected ',' or ']')")
            buffer.pos += 1
            buffer.next_char()
        count += 1
        yield _json_item(decoder, buffer, f"{path}, item {count}")


def _json_item(decoder: json.JSONDecoder, buffer: _Buffer, where: str) -> Any:
    """The JSON value at the buffer's position, read on (doubling) until it is whole."""
    while True:
        text, pos = buffer.text, buffer.pos
        try:
            item, end = decoder.raw_decode(text, pos)
        except RecursionError:
            raise _InputError(f"{where}: nested too deep") from None
        except ValueError as exc:
            if buffer.eof:
                raise _InputError(f"{where}: not JSON ({exc})") from None
            end = -1
        if end != -1 and (end < len(text) or buffer.eof):  # a number may go on past the end
            buffer.pos = end
            return item
        if len(text) - pos > LONGEST_ITEM:
            raise _InputError(f"{where}: longer than {LONGEST_ITEM} characters")
        buffer.more(max(JSON_CHUNK, len(text) - pos))


def _url(item: Any, field: str) -> str | None:
    value = item.get(field) if isinstance(item, dict) else None
    return value if isinstance(value, str) and value.startswith(("http://", "https://")) else None


def _dump(path: str, kind: str, items: Iterable[Any]) -> None:
    """Write ``items`` one at a time (a CSV passes over them twice: its columns, its rows)."""
    newline = "" if kind == "csv" else None
    with open(path, "w", encoding="utf-8", errors=_WRITE_ERRORS, newline=newline) as f:
        if kind == "csv":
            names = list(dict.fromkeys(name for item in items for name in item))
            writer = csv.DictWriter(f, fieldnames=names)
            writer.writeheader()
            writer.writerows(items)
        elif kind == "json":
            f.write("[")
            for n, item in enumerate(items):
                f.write((", " if n else "") + json.dumps(item, ensure_ascii=False))
            f.write("]")
        else:
            for item in items:
                f.write(json.dumps(item, ensure_ascii=False) + "\n")


def _settings(args: argparse.Namespace) -> Any:
    """The project's settings (if inside one), then ``-s`` and ``--use`` on top."""
    from scrapy.settings import Settings
    from scrapy.utils.project import get_project_settings, inside_project

    settings = get_project_settings() if inside_project() else Settings()
    for pair in args.set:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise _InputError(f"-s {pair!r}: expected NAME=VALUE")
        settings.set(name, value, priority="cmdline")
    if args.use:
        settings.set("REP_USES", list(dict.fromkeys(args.use)), priority="cmdline")
    return settings


def _progress(total: int, origins: int) -> Any:
    """Progress on stderr for a large feed: a line at each tenth of its URLs."""
    step = max(1, total // 10)
    said = [0]

    def progress(done: int) -> None:
        if total >= 1000 and done // step > said[0]:
            said[0] = done // step
            print(f"recheck: {done} of {total} URLs judged ({origins} origins)", file=sys.stderr)

    return progress
