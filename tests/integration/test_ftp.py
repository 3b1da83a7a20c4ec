"""``ftp://`` origins are governed like ``http(s)`` ones (RFC 9309 §2.3 names
``ftp://host/robots.txt``): their robots.txt is fetched through Scrapy's FTP download
handler and obeyed. The server is Twisted's own (``twisted.protocols.ftp``), anonymous,
over a temporary folder, on loopback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from twisted.cred.checkers import AllowAnonymousAccess, InMemoryUsernamePasswordDatabaseDontUse
from twisted.cred.portal import Portal
from twisted.internet import reactor
from twisted.protocols.ftp import BaseFTPRealm, FTPFactory
from twisted.python.filepath import FilePath

from scrapy_rep.runtime.settings import TUNE
from tests.support.audit import records
from tests.support.crawl import crawl


class OneFolder(BaseFTPRealm):
    """Every user, anonymous or not, sees the one folder."""

    def getHomeDirectory(self, avatarId: object) -> FilePath[str]:
        return self.anonymousRoot  # type: ignore[no-any-return]


class FtpServer:
    def __init__(self, root: Path, anonymous: bool = True) -> None:
        users = InMemoryUsernamePasswordDatabaseDontUse()
        users.addUser("someone", "secret")  # type: ignore[arg-type]  # str, as Twisted FTP asks
        checkers: list[Any] = [users, AllowAnonymousAccess()] if anonymous else [users]
        factory = FTPFactory(Portal(OneFolder(str(root)), checkers))
        factory.allowAnonymous = anonymous
        self.port = reactor.listenTCP(0, factory, interface="127.0.0.1")  # type: ignore[attr-defined]
        self.url = f"ftp://127.0.0.1:{self.port.getHost().port}"


@pytest.fixture
def ftp_root(tmp_path: Path) -> Path:
    root = tmp_path / "ftp"
    (root / "private").mkdir(parents=True)
    (root / "public").mkdir()
    (root / "private" / "b.txt").write_text("secret b\n")
    (root / "public" / "a.txt").write_text("public a\n")
    return root


@pytest.fixture
def ftp(ftp_root: Path) -> Iterator[FtpServer]:
    server = FtpServer(ftp_root)
    yield server
    server.port.stopListening()


@pytest_twisted.ensureDeferred
async def test_a_disallowed_ftp_file_is_not_downloaded_the_allowed_one_is(
    ftp: FtpServer, ftp_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (ftp_root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    log = tmp_path / "audit.jsonl"
    with caplog.at_level(logging.INFO):
        result = await crawl(
            [f"{ftp.url}/public/a.txt", f"{ftp.url}/private/b.txt"],
            {"REP_DECISION_LOG": str(log)},
        )
    assert result.downloaded == [f"{ftp.url}/public/a.txt"]
    assert result.dropped == {f"{ftp.url}/private/b.txt": "disallow-rule"}
    assert result.stat("rep/fetch/count") == 1
    (fetch,) = records(log, "fetch")
    assert fetch["url"] == f"{ftp.url}/robots.txt" and fetch["status"] == "ok"
    assert fetch["origin"] == ftp.url
    report = next(r.getMessage() for r in caplog.records if "scrapy-rep report:" in r.getMessage())
    assert report.startswith("scrapy-rep report: 1 origins, 2 requests"), report
    assert ftp.url in report


@pytest_twisted.ensureDeferred
async def test_no_robots_txt_on_the_ftp_server_allows_everything(
    ftp: FtpServer, tmp_path: Path
) -> None:
    log = tmp_path / "audit.jsonl"
    result = await crawl(
        [f"{ftp.url}/public/a.txt", f"{ftp.url}/private/b.txt"], {"REP_DECISION_LOG": str(log)}
    )
    assert sorted(result.downloaded) == [f"{ftp.url}/private/b.txt", f"{ftp.url}/public/a.txt"]
    (fetch,) = records(log, "fetch")
    # 550 file not found: Scrapy's handler answers 404, robots.txt is unavailable
    assert (fetch["status"], fetch["http_status"]) == ("unavailable", 404)


@pytest_twisted.ensureDeferred
async def test_the_robots_txt_of_an_ftp_origin_is_read_with_the_requests_login(
    ftp_root: Path, tmp_path: Path
) -> None:
    (ftp_root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    server = FtpServer(ftp_root, anonymous=False)
    login = {"ftp_user": "someone", "ftp_password": "secret"}
    try:
        result = await crawl(
            [
                Request(f"{server.url}/public/a.txt", meta=login),
                Request(f"{server.url}/private/b.txt", meta=login),
            ],
            {
                "REP_DECISION_LOG": str(tmp_path / "audit.jsonl"),
                TUNE: {"policy.pause_max_tries": 1},
            },
        )
    finally:
        server.port.stopListening()
    assert result.downloaded == [f"{server.url}/public/a.txt"]
    assert result.dropped == {f"{server.url}/private/b.txt": "disallow-rule"}


@pytest_twisted.ensureDeferred
async def test_a_refused_login_is_a_network_error(ftp_root: Path, tmp_path: Path) -> None:
    (ftp_root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    server = FtpServer(ftp_root, anonymous=False)  # the default anonymous login is refused
    log = tmp_path / "audit.jsonl"
    settings = {"REP_DECISION_LOG": str(log), TUNE: {"policy.pause_max_tries": 1}}
    try:
        result = await crawl([f"{server.url}/public/a.txt"], settings)
    finally:
        server.port.stopListening()
    assert result.dropped == {f"{server.url}/public/a.txt": "policy-unresolved"}
    (fetch,) = records(log, "fetch")
    assert (fetch["outcome"], fetch["http_status"]) == ("network", None)
    assert "ConnectionLost" in fetch["reason"]
