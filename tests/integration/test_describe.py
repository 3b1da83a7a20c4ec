"""``scrapy-rep describe`` in a generated project, run as an operator runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from scrapy_rep.core.policy import DEFAULT_ACTIONS
from scrapy_rep.reference.status import RFC_BEHAVIOUR
from tests.support import processes
from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import PAGES_SPIDER, ROOT, make_project, scrapy

SETTINGS = """\
USER_AGENT = "mybot/2.1 (+https://example.org/bot)"
REP_USES = ["train-ai", "search"]
REP_USE_ACTION = "drop"
REP_USE_TOKENS = {"train-ai": "mybot-training"}
REP_STATUS_ACTIONS = {"403": "allow"}
REP_EXCLUDE = ["infringing.example", "other.example"]
"""

SPIDER = """

class ShySpider(PagesSpider):
    name = "shy"
    custom_settings = {"REP_CRAWL_DELAY_MAX": 0, "REP_PAGE_DIRECTIVES": False}
"""


def describe(
    project: Path | None, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (project, ROOT) if p is not None)
    return processes.run(
        "scrapy_rep.cli", ["describe", *args], cwd=cwd or project, env=env, timeout=60
    )


def project(tmp_path: Path) -> Path:
    where = make_project(tmp_path / "project")
    with open(where / "oneshot_settings.py", "a") as f:
        f.write(SETTINGS)
    with open(where / "oneshot_spiders.py", "a") as f:
        f.write(SPIDER)
    return where


def test_markdown_says_what_the_project_obeys_and_how_to_block_it(tmp_path: Path) -> None:
    done = describe(project(tmp_path), "--contact", "crawl-team@example.org")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("# The `mybot` crawler\n")
    assert "- User-Agent header: `mybot/2.1 (+https://example.org/bot)`" in page
    assert "- Contact: crawl-team@example.org" in page
    assert "Declared uses: `train-ai`, `search`." in page
    assert "What a site refuses for a declared use is not collected." in page
    # one row per row of the status table, the project's override applied
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert len(rows) == len(DEFAULT_ACTIONS)
    for outcome in DEFAULT_ACTIONS:
        assert any(r.startswith(f"| `{outcome}` | {RFC_BEHAVIOUR[outcome]} |") for r in rows)
    assert "| `403` | unavailable: may crawl anything (§2.3.1.3) | taken as no robots.txt" in page
    assert "| `401` | unavailable: may crawl anything (§2.3.1.3) | nothing on the site" in page
    assert "`Crawl-delay` is honoured, up to 30 s between requests." in page
    assert "`X-Robots-Tag`, `Robots-Tag`" in page
    assert "2 sites are excluded and never requested." in page
    assert "after 3 refusals in a row (such answers, 401, 403) a site is not crawled" in page
    assert "```text\nUser-agent: mybot\nDisallow: /\n```" in page
    assert "Only for `train-ai`:\n\n```text\nUser-agent: mybot-training\nDisallow: /\n```" in page
    assert "User-agent: mybot\nContent-Usage: train-ai=n" in page


def test_json_and_a_spiders_custom_settings(tmp_path: Path) -> None:
    where = project(tmp_path)
    done = describe(where, "--json", "--spider", "shy")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["product_token"] == "mybot"
    assert found["enabled"] is True
    # no --contact: the information URL the User-Agent carries
    assert found["contact"] == "https://example.org/bot"
    assert found["uses"]["policy_tokens"] == {"train-ai": "mybot-training"}
    assert {r["outcome"]: r["action"] for r in found["robots_txt"]["status"]}["403"] == "allow"
    assert found["robots_txt"]["crawl_delay"] == {"honoured": False, "max_seconds": None}
    assert found["page_directives"]["honoured"] is False
    assert found["block"]["robots_txt"] == "User-agent: mybot\nDisallow: /\n"


def test_outside_a_project_or_a_bad_setting_is_a_one_line_error(tmp_path: Path) -> None:
    done = describe(None, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("scrapy-rep: error: not inside a Scrapy project")
    where = project(tmp_path)
    with open(where / "oneshot_settings.py", "a") as f:
        f.write('REP_EXCLUDE = ["https://bad.example/"]\n')
    done = describe(where)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "scrapy-rep: error: REP_EXCLUDE: 'https://bad.example/' is not a domain "
        "(write the host only, e.g. 'example.com', not a URL) (item 1)"
    ]


BROWSER_STYLE = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "compatible; databot/1.0; +https://data.example/bot"
)


def test_the_header_and_contact_are_those_the_sites_receive(site: FakeSite, tmp_path: Path) -> None:
    """A browser-style USER_AGENT beside ROBOTSTXT_USER_AGENT: describe prints the header a
    site really receives (not the robots.txt token) and the contact URL found in it."""
    where = make_project(tmp_path / "project")
    (where / "oneshot_spiders.py").write_text(PAGES_SPIDER)
    with open(where / "oneshot_settings.py", "a") as f:
        f.write(f'ROBOTSTXT_USER_AGENT = "databot"\nUSER_AGENT = {BROWSER_STYLE!r}\n')
    origin = site.add("seen").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    done = scrapy(where, "crawl", "pages", "-a", f"urls={origin.url_for('/a')}")
    assert done.returncode == 0, done.stderr
    received = {hit.headers.get("User-Agent") for hit in origin.requests("/a")}
    assert received == {BROWSER_STYLE}
    done = describe(where, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["product_token"], found["user_agent"]) == ("databot", BROWSER_STYLE)
    assert found["contact"] == "https://data.example/bot"
    page = describe(where).stdout
    assert f"- User-Agent header: `{BROWSER_STYLE}`" in page
    assert "- Contact: https://data.example/bot" in page


def test_an_addon_switched_off_with_none_is_described_as_off(tmp_path: Path) -> None:
    where = project(tmp_path)
    with open(where / "oneshot_settings.py", "a") as f:
        f.write('ADDONS = {"scrapy_rep.Addon": None}\n')
    done = describe(where, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["enabled"] is False
    assert "scrapy-rep is not enabled in this project" in describe(where).stdout
