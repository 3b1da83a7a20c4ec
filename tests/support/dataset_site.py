"""An AI-dataset builder's crawl: ``REP_USES = ["train-ai"]``, ``"drop"``, a feed, media pipelines.

A loopback site (two origins on :class:`~tests.support.fakesite.FakeSite`)
and a real ``scrapy crawl`` of it, in a project with ``FilesPipeline`` and
``ImagesPipeline``, an audit log, an HTML report and a JSON feed:

- ``shop``: Cloudflare's managed robots.txt (``Content-Signal: ai-train=no``
  in ``User-Agent: *``): its page is refused before it is fetched;
- ``press``: a robots.txt allowing everything, a tdmrep.json reserving
  ``/reserved/*``, pages whose own response refuses ``train-ai``
  (``Content-Usage`` header), a ``noindex`` page, the same ``noindex`` page
  asked for with ``dont_obey_robotstxt``, and a gallery whose item names
  files and images, some refused by their own response.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fakesite import FakeSite, Origin, Reply
from tests.support.scrapy_command import SETTINGS, scrapy
from tests.support.use_site import CLOUDFLARE_ROBOTS

PRESS_ROBOTS = b"User-agent: *\nContent-Signal: search=yes\nAllow: /\n"
TDMREP = json.dumps([{"location": "/reserved/*", "tdm-reservation": 1}]).encode()

#: press page -> the headers it answers with
PAGES: dict[str, dict[str, str]] = {
    "/plain": {},
    "/refused": {"Content-Usage": "train-ai=n"},
    "/noindex": {"X-Robots-Tag": "noindex"},
    "/reserved/article": {},
    "/gallery": {},
}
#: file -> (its headers, refused for train-ai by its own response)
FILES: dict[str, tuple[dict[str, str], bool]] = {
    "/files/ok.txt": ({"Content-Type": "text/plain"}, False),
    "/files/usage.txt": ({"Content-Type": "text/plain", "Content-Usage": "train-ai=n"}, True),
    "/files/signal.txt": ({"Content-Type": "text/plain", "Content-Signal": "ai-train=no"}, True),
}
IMAGES: dict[str, tuple[dict[str, str], bool]] = {
    "/img/ok.png": ({"Content-Type": "image/png"}, False),
    "/img/noai.png": ({"Content-Type": "image/png", "X-Robots-Tag": "noai"}, True),
    "/img/noimageai.png": ({"Content-Type": "image/png", "X-Robots-Tag": "noimageai"}, True),
}

SPIDER = """\
import scrapy


class DatasetSpider(scrapy.Spider):
    name = "dataset"

    def __init__(self, start="", **kw):
        super().__init__(**kw)
        self.start_urls = start.split(",")

    def parse(self, response):
        item = {"url": response.url}
        if response.url.endswith("/gallery"):
            files = response.css("a.f::attr(href)").getall()
            images = response.css("img::attr(src)").getall()
            item["file_urls"] = [response.urljoin(u) for u in files]
            item["image_urls"] = [response.urljoin(u) for u in images]
        yield item
        for href in response.css("a.p::attr(href)").getall():
            yield response.follow(href)
        for href in response.css("a.obey-not::attr(href)").getall():
            yield response.follow(href, meta={"dont_obey_robotstxt": True}, dont_filter=True)
"""

PROJECT_SETTINGS = """\
REP_USES = ["train-ai"]
REP_USE_ACTION = "drop"
ITEM_PIPELINES = {
    "scrapy.pipelines.files.FilesPipeline": 1,
    "scrapy.pipelines.images.ImagesPipeline": 2,
}
LOG_LEVEL = "DEBUG"
"""


def png() -> bytes:
    """A small real PNG (ImagesPipeline opens it with Pillow)."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@dataclass
class DatasetCrawl:
    shop: Origin
    press: Origin
    project: Path
    stdout: str
    stderr: str
    returncode: int

    @property
    def log(self) -> Path:
        return self.project / "audit.jsonl"

    @property
    def html(self) -> Path:
        return self.project / "report.html"

    @property
    def files_store(self) -> Path:
        return self.project / "files"

    @property
    def images_store(self) -> Path:
        return self.project / "images"

    def items(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads((self.project / "items.json").read_text())
        return found

    def stored(self, store: Path) -> list[str]:
        return sorted(
            os.path.relpath(os.path.join(root, name), store)
            for root, _, names in os.walk(store)
            for name in names
        )

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        with open(self.log, encoding="utf-8") as f:
            found = [json.loads(line) for line in f]
        return [r for r in found if kind is None or r["type"] == kind]


def build(site: FakeSite) -> tuple[Origin, Origin]:
    shop = site.add("shop").robots(Reply(body=CLOUDFLARE_ROBOTS))
    shop.page("/", _html("<h1>shop</h1>"))
    press = site.add("press").robots(Reply(body=PRESS_ROBOTS))
    press.page(
        "/.well-known/tdmrep.json",
        Reply(body=TDMREP, headers={"Content-Type": "application/json"}),
    )
    links = "".join(f'<a class="p" href="{path}">{path}</a>' for path in PAGES)
    links += '<a class="obey-not" href="/noindex">noindex, not obeyed</a>'
    press.page("/", _html(links))
    for path, headers in PAGES.items():
        body = ""
        if path == "/gallery":
            body = "".join(f'<a class="f" href="{f}">{f}</a>' for f in FILES)
            body += "".join(f'<img src="{i}">' for i in IMAGES)
        press.page(path, _html(f"<h1>{path}</h1>{body}", headers))
    for path, (headers, _) in FILES.items():
        press.page(path, Reply(body=f"the file {path}\n".encode(), headers=headers))
    image = png()
    for path, (headers, _) in IMAGES.items():
        press.page(path, Reply(body=image, headers=headers))
    return shop, press


def run(site: FakeSite, where: Path, *extra: str) -> DatasetCrawl:
    """Build the site and ``scrapy crawl dataset`` it in a fresh project under ``where``."""
    shop, press = build(site)
    project = where / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = dataset_settings\n")
    (project / "dataset_settings.py").write_text(
        SETTINGS.replace('"oneshot_spiders"', '"dataset_spiders"') + PROJECT_SETTINGS
    )
    (project / "dataset_spiders.py").write_text(SPIDER)
    done = scrapy(
        project,
        "crawl",
        "dataset",
        "-a",
        f"start={shop.url_for('/')},{press.url_for('/')}",
        "-O",
        "items.json",
        "-s",
        f"FILES_STORE={project / 'files'}",
        "-s",
        f"IMAGES_STORE={project / 'images'}",
        "-s",
        f"REP_DECISION_LOG={project / 'audit.jsonl'}",
        "-s",
        f"REP_REPORT={project / 'report.html'}",
        *extra,
    )
    return DatasetCrawl(shop, press, project, done.stdout, done.stderr, done.returncode)


def _html(body: str, headers: dict[str, str] | None = None) -> Reply:
    page = f"<!doctype html><html><head><title>t</title></head><body>{body}</body></html>"
    return Reply(
        body=page.encode(), headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})}
    )
