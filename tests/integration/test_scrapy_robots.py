"""``scrapy robots URL``: the crawl's answer from the shell, run as a user runs it."""

from __future__ import annotations

from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import scrapy_robots

RULES = b"User-agent: *\nDisallow: /private\n"


def test_scrapy_robots_gives_the_crawls_answer(site: FakeSite) -> None:
    a = site.add("a").robots(
        Reply(
            body=b"User-agent: demobot\nDisallow: /private\nAllow: /private/open\n\n"
            b"User-agent: *\nDisallow: /\n"
        )
    )
    closed = site.add("closed").robots(Reply(status=503))
    done = scrapy_robots(
        a.url_for("/private/x"), a.url_for("/private/open/y"), closed.url_for("/z")
    )
    out = done.stdout
    assert done.returncode == 1, done.stderr
    assert "product token: demobot" in out  # from the project's USER_AGENT
    assert f"DISALLOW  {a.url_for('/private/x')}" in out
    assert "rule    disallow: /private (line 2)" in out
    assert "group   user-agent: demobot (line 1)" in out
    assert f"ALLOW     {a.url_for('/private/open/y')}" in out
    assert "rule    allow: /private/open (line 3)" in out
    assert f"policy  ok (robots.txt 200 from {a.robots_url}" in out
    assert f"HELD      {closed.url_for('/z')}" in out
    assert "policy  paused (robots.txt 503" in out
    # fetched through the project's settings: its User-Agent, once per origin
    assert a.hits("/robots.txt") == 1
    assert a.requests("/robots.txt")[0].headers["User-Agent"].startswith("demobot/1.0")
    assert a.hits() == 1  # nothing but robots.txt was downloaded


def test_scrapy_robots_takes_a_spiders_token(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: politebot\nDisallow: /\n"))
    mine = scrapy_robots(a.url_for("/x"))
    polite = scrapy_robots("--spider", "polite", a.url_for("/x"))
    assert mine.returncode == 0 and "ALLOW     " in mine.stdout, mine.stderr
    assert polite.returncode == 1, polite.stderr
    assert "product token: politebot" in polite.stdout
    assert "rule    disallow: / (line 2)" in polite.stdout
    assert a.requests("/robots.txt")[-1].headers["User-Agent"].startswith("politebot/")


def test_scrapy_robots_rejects_a_relative_url() -> None:
    done = scrapy_robots("/just/a/path")
    assert done.returncode == 2
    assert "absolute http(s) URLs" in done.stderr


def test_scrapy_robots_prints_the_sites_rules_escaped(site: FakeSite) -> None:
    """ESC, BEL, NEL, U+2028 and a bidi override in a rule never reach the terminal raw."""
    hostile = "/x\x1b]0;pwned\x07\x1b[31m\u0085\u2028\u202eevil"
    a = site.add("a").robots(Reply(body=f"User-agent: *\nDisallow: {hostile}\n".encode()))
    done = scrapy_robots(a.url_for(hostile))
    assert done.returncode == 1, done.stderr
    assert all(line.isprintable() for line in done.stdout.splitlines()), done.stdout
    assert "rule    disallow: /x\\x1b]0;pwned\\x07\\x1b[31m\\x85\\u2028\\u202eevil (line 2)" in (
        done.stdout
    )
