"""One-shot commands (``scrapy fetch``, ``view``, ``parse``, ``shell``) answer at once.

A crawl holds the requests of an origin whose robots.txt answers 503, 429,
403 or refuses connections, and retries for ~15 minutes; a one-shot command
does not download the URL and says why on stderr, in one line, even with
``--nolog``. Real ``scrapy`` processes against loopback servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fakesite import FakeSite, Reply
from tests.support.redis_fixture import free_port
from tests.support.scrapy_command import make_project, scrapy

RULES = b"User-agent: *\nDisallow: /private\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def said(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("scrapy-rep: ")]


@pytest.mark.parametrize("status", [503, 429, 403, None])
def test_fetch_answers_at_once_when_robots_txt_cannot_be_read(
    site: FakeSite, project: Path, status: int | None
) -> None:
    if status is None:  # nothing listens on the port: the connection is refused
        url, origin = f"http://127.0.0.1:{free_port()}/page", None
    else:
        origin = site.add("a").robots(Reply(status=status))
        url = origin.url_for("/page")
    done = scrapy(project, "fetch", "--nolog", url)
    assert done.stdout == ""
    (line,) = said(done.stderr)
    assert line.startswith(f"scrapy-rep: not downloaded: {url}: origin-paused (")
    assert "scrapy fetch does not wait for robots.txt to be retried" in line
    if origin is not None:
        assert f"robots.txt {status}" in line
        assert origin.hits("/page") == 0
        assert origin.hits("/robots.txt") == 1
    else:
        assert "network" in line or "refused" in line.lower()


@pytest.mark.parametrize(
    "command",
    [
        ["view", "--nolog"],
        ["parse", "--nolog", "--spider", "pages"],
        ["shell", "--nolog", "-c", "response"],
    ],
)
def test_other_one_shot_commands_answer_at_once(
    site: FakeSite, project: Path, command: list[str]
) -> None:
    origin = site.add("a").robots(Reply(status=503))
    url = origin.url_for("/page")
    done = scrapy(project, *command, url)
    (line,) = said(done.stderr)
    assert line.startswith(f"scrapy-rep: not downloaded: {url}: origin-paused (robots.txt 503")
    assert f"scrapy {command[0] if command[0] != 'view' else 'fetch'} does not wait" in line
    assert origin.hits("/page") == 0


def test_fetch_says_why_a_disallowed_url_is_not_downloaded(site: FakeSite, project: Path) -> None:
    origin = site.add("a").robots(Reply(body=RULES))
    allowed = scrapy(project, "fetch", "--nolog", origin.url_for("/open"))
    assert said(allowed.stderr) == []
    assert allowed.stdout != ""
    assert origin.hits("/open") == 1
    done = scrapy(project, "fetch", "--nolog", origin.url_for("/private/x"))
    (line,) = said(done.stderr)
    assert line.startswith(f"scrapy-rep: not downloaded: {origin.url_for('/private/x')}: ")
    assert "disallow" in line
    assert origin.hits("/private/x") == 0


@pytest.mark.parametrize("status", [429, 503])
def test_fetch_drops_a_page_that_pushes_back_and_says_why(
    site: FakeSite, project: Path, status: int
) -> None:
    origin = site.add("a").robots(Reply(body=RULES))
    url = origin.url_for("/page")
    origin.page("/page", Reply(status=status, headers={"Retry-After": "5"}))
    done = scrapy(project, "fetch", "--nolog", url)
    assert done.stdout == ""
    (line,) = said(done.stderr)
    cause = "rate-limited" if status == 429 else "service-unavailable"
    assert line.startswith(f"scrapy-rep: not downloaded: {url}: {cause} ("), line
    assert f"the origin answered {status} to {url} (Retry-After: 5s)" in line
    assert "scrapy fetch does not wait for the pause a page asked for" in line
    assert origin.hits("/page") == 1  # asked once, not again after Retry-After
