"""REP_ITEM_PROVENANCE end to end: ``scrapy crawl -O`` as a user runs it, the feed read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from scrapy_rep.core.policy import digest_of
from tests.support import doc_examples
from tests.support.crawl import ItemSpider, crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import make_project, scrapy

ROBOTS = b"User-agent: *\nDisallow: /private\nContent-Usage: train-ai=y\n"

SPIDERS = """\
import dataclasses

import attrs
import scrapy


class Page(scrapy.Item):
    url = scrapy.Field()
    _rep = scrapy.Field()


class Bare(scrapy.Item):
    url = scrapy.Field()


@dataclasses.dataclass
class PageData:
    url: str
    _rep: dict = None


@attrs.define
class PageAttrs:
    url: str
    _rep: dict = None


class FromUrl(scrapy.Spider):
    def __init__(self, url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]


class KindsSpider(FromUrl):
    name = "kinds"

    def parse(self, response):
        yield {"url": response.url, "kind": "dict"}
        yield Page(url=response.url)
        yield PageData(url=response.url)
        yield PageAttrs(url=response.url)
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)


class BareSpider(FromUrl):
    name = "bare"

    def parse(self, response):
        yield Bare(url=response.url)
        yield {"url": response.url, "kind": "dict"}
        yield Bare(url=response.url)
"""


def project(tmp_path: Path, **settings: Any) -> Path:
    where = make_project(tmp_path / "project")
    (where / "oneshot_spiders.py").write_text(SPIDERS)
    with open(where / "oneshot_settings.py", "a") as f:
        for name, value in settings.items():
            f.write(f"{name} = {value!r}\n")
    return where


def feed(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def origin(site: FakeSite) -> Any:
    a = site.add("a").robots(Reply(body=ROBOTS))
    a.links("/", ["/open", "/private/x"])
    body = b"<html><head><title>t</title></head><body>open</body></html>"
    a.page("/open", Reply(body=body, headers={"Content-Usage": "train-ai=n"}))
    return a


def test_every_kind_of_item_carries_its_provenance_in_the_feed(origin: Any, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    where = project(
        tmp_path,
        REP_ITEM_PROVENANCE="_rep",
        REP_USES=["train-ai"],
        REP_POLICY_ARCHIVE=str(archive),
    )
    out = tmp_path / "out.jsonl"
    done = scrapy(where, "crawl", "kinds", "-a", f"url={origin.url_for('/')}", "-O", str(out))
    assert done.returncode == 0, done.stderr
    items = feed(out)
    assert origin.hits("/private/x") == 0
    assert len(items) == 8  # four kinds, two pages
    digest = digest_of(ROBOTS)
    for item in items:
        rep = item["_rep"]
        assert rep["url"] == item["url"]
        assert rep["origin"] == f"http://127.0.0.1:{origin.port}"
        assert rep["product_token"] == "testbot"
        assert rep["status"] == 200
        assert isinstance(rep["fetched_at"], float) and rep["fetched_at_iso"].endswith("+00:00")
        decision = rep["decision"]
        assert (decision["rep_decision"], decision["action"]) == ("allow", "download")
        assert decision["reason"] == "no-matching-rule"
        assert decision["group"] == "user-agent: * (line 1)"
        policy = rep["policy"]
        assert (policy["status"], policy["http_status"], policy["digest"]) == ("ok", 200, digest)
        assert policy["fetched_at"] <= rep["fetched_at"]
        assert policy["archived"] == str(archive / f"{digest}.txt")
        assert Path(policy["archived"]).read_bytes() == ROBOTS
    by_url = {item["url"]: item["_rep"] for item in items}
    # robots.txt says yes for train-ai; the page's own header says no, and wins
    assert by_url[origin.url_for("/")]["uses"] == {
        "train-ai": {
            "answer": "allowed",
            "source": "robots.txt line 3 in group user-agent: * (line 1): "
            "Content-Usage: train-ai=y",
        }
    }
    assert by_url[origin.url_for("/open")]["uses"]["train-ai"] == {
        "answer": "refused",
        "source": "header Content-Usage: train-ai=n",
    }
    # the worked example of docs/uses.md: this item, as the feed holds it
    (example,) = [i for i in items if i.get("kind") == "dict" and i["url"].endswith("/open")]
    for part in (example["_rep"], example["_rep"]["policy"]):
        part["fetched_at"] = 1796117400.0  # the example's clock
    text = json.dumps(example, indent=2, ensure_ascii=False) + "\n"
    port = str(origin.port)
    doc_examples.check(
        "provenance-item.json",
        doc_examples.stable(text, **{"8000": port, "/srv/crawl/archive": str(archive)}),
    )


def test_an_item_type_without_the_field_is_logged_once_and_yielded_unchanged(
    origin: Any, tmp_path: Path
) -> None:
    where = project(tmp_path, REP_ITEM_PROVENANCE="_rep")
    out = tmp_path / "out.jsonl"
    start = f"url={origin.url_for('/open')}"
    done = scrapy(where, "crawl", "bare", "-a", start, "-O", str(out))
    assert done.returncode == 0, done.stderr
    said = done.stderr
    line = "ERROR: scrapy-rep: Bare has no field '_rep' for REP_ITEM_PROVENANCE"
    assert said.count(line) == 1, said  # once per item type, however many items
    items = feed(out)
    # the dict still gets its provenance; the Bare items leave unchanged
    assert {item.get("kind") for item in items} == {None, "dict"}
    bare = [item for item in items if "kind" not in item]
    assert bare == [{"url": origin.url_for("/open")}] * 2
    assert all(item["_rep"]["url"] == origin.url_for("/open") for item in items if "kind" in item)


def test_off_by_default_nothing_changes(origin: Any, tmp_path: Path) -> None:
    where = project(tmp_path)
    out = tmp_path / "out.jsonl"
    done = scrapy(where, "crawl", "kinds", "-a", f"url={origin.url_for('/open')}", "-O", str(out))
    assert done.returncode == 0, done.stderr
    assert "ItemProvenanceMiddleware" not in done.stderr  # not enabled, nothing said
    assert all(item.get("_rep") is None for item in feed(out))


FILE_SPIDER = """\
import scrapy


class FilesSpider(scrapy.Spider):
    name = "files"

    def __init__(self, url, files, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]
        self.files = files.split(",")

    def parse(self, response):
        yield {"url": response.url, "file_urls": self.files}
"""


def test_each_file_a_media_pipeline_stores_carries_its_provenance(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    a.page("/doc.pdf", Reply(body=b"%PDF-1.4 ...", headers={"X-Robots-Tag": "noai"}))
    a.page("/private/x.pdf", Reply(body=b"%PDF-1.4 ..."))
    where = project(
        tmp_path,
        REP_ITEM_PROVENANCE="_rep",
        REP_USES=["train-ai"],
        ITEM_PIPELINES={"scrapy_rep.FilesPipeline": 1},
        FILES_STORE=str(tmp_path / "files"),
    )
    (where / "oneshot_spiders.py").write_text(FILE_SPIDER)
    files = f"{a.url_for('/doc.pdf')},{a.url_for('/private/x.pdf')}"
    out = tmp_path / "out.jsonl"
    done = scrapy(
        where,
        "crawl",
        "files",
        "-a",
        f"url={a.url_for('/')}",
        "-a",
        f"files={files}",
        "-O",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    (item,) = feed(out)
    assert a.hits("/private/x.pdf") == 0
    (stored,) = item["files"]  # the disallowed file was not fetched, nor stored
    assert stored["url"] == a.url_for("/doc.pdf")
    rep = stored["_rep"]
    assert rep["url"] == a.url_for("/doc.pdf")
    assert (rep["decision"]["action"], rep["decision"]["reason"]) == (
        "download",
        "no-matching-rule",
    )
    assert rep["policy"]["digest"] == digest_of(b"User-agent: *\nDisallow: /private\n")
    assert rep["uses"]["train-ai"] == {"answer": "refused", "source": "X-Robots-Tag noai"}
    assert item["_rep"]["url"] == a.url_for("/")  # the item's own, from its page


@pytest_twisted.ensureDeferred
async def test_a_page_served_from_the_http_cache_says_so_and_when_it_was_fetched(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    a.page("/page", Reply(body=b"<html><body>page</body></html>"))
    settings = {
        "REP_ITEM_PROVENANCE": "_rep",
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "httpcache"),
        "HTTPCACHE_EXPIRATION_SECS": 0,  # never expires: the second crawl reads the cache
    }
    url = a.url_for("/page")
    first = await crawl([url], settings, spider=ItemSpider)
    second = await crawl([url], settings, spider=ItemSpider)

    assert a.hits("/page") == 1  # the second crawl's page came from the cache
    (fresh,) = [item["_rep"] for item in first.items]
    (cached,) = [item["_rep"] for item in second.items]
    assert fresh["served_from"] == "network" and isinstance(fresh["fetched_at"], float)
    # from the cache: said so, and fetched when the site served it (the stored Date header,
    # whole seconds), not now and not null
    assert cached["served_from"] == "http-cache"
    assert cached["fetched_at"] == float(int(fresh["fetched_at"])) or (
        abs(cached["fetched_at"] - fresh["fetched_at"]) <= 1.0
    ), (cached["fetched_at"], fresh["fetched_at"])
    assert cached["fetched_at_iso"] is not None
    # the decision is this crawl's (the request was judged now), against the policy it holds:
    # the first crawl's robots.txt when the two crawls share it (kept up to 24 h), or a newer
    # one; never an older one
    assert cached["decision"]["action"] == "download"
    assert cached["policy"]["fetched_at"] >= fresh["policy"]["fetched_at"]
