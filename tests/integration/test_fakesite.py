"""The fake server is what every other test trusts, so each of its tricks is checked here."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.support.fakesite import STREAM_PATTERN, FakeSite, Origin, Reply

TIMEOUT = 5.0


def get(url: str) -> tuple[int, bytes]:
    """Status and body, with HTTP errors returned instead of raised."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def raw_request(origin: Origin, path: str) -> socket.socket:
    """Send a bare GET and return the socket, for behaviour urllib would hide."""
    sock = socket.create_connection((origin.host, origin.port), timeout=TIMEOUT)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {origin.host}\r\n\r\n".encode())
    return sock


def test_successive_replies_then_last_repeats(site: FakeSite) -> None:
    a = site.add("a").robots(
        Reply(body=b"User-agent: *\nDisallow: /a\n"),
        Reply(status=503),
        Reply(body=b"User-agent: *\nDisallow: /c\n"),
    )
    got = [get(a.robots_url) for _ in range(4)]
    assert got == [
        (200, b"User-agent: *\nDisallow: /a\n"),
        (503, b""),
        (200, b"User-agent: *\nDisallow: /c\n"),
        (200, b"User-agent: *\nDisallow: /c\n"),
    ]
    a.robots()  # unprogram: back to the default 404
    assert get(a.robots_url) == (404, b"")


def test_defaults_and_links(site: FakeSite) -> None:
    a = site.add("a")
    assert get(a.robots_url) == (404, b"")
    assert get(a.url_for("/plain")) == (200, b"<html><body>/plain</body></html>")
    a.links("/", ["/one", "http://example.invalid/two"])
    status, body = get(a.url_for("/"))
    assert status == 200
    assert b'<a href="/one">' in body
    assert b'<a href="http://example.invalid/two">' in body
    a.page("/p", Reply(body=b"custom", headers={"Content-Type": "text/x-mine"}))
    with urllib.request.urlopen(a.url_for("/p?q=1"), timeout=TIMEOUT) as resp:
        assert resp.read() == b"custom"  # bare path program also matches with a query
        assert resp.headers["Content-Type"] == "text/x-mine"


def test_keep_alive_reuses_connection(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\n"))
    conn = http.client.HTTPConnection(a.host, a.port, timeout=TIMEOUT)
    try:
        socks = []
        for path in ["/robots.txt", "/x", "/robots.txt"]:
            conn.request("GET", path)
            resp = conn.getresponse()
            assert resp.getheader("Content-Length") is not None
            resp.read()
            socks.append(conn.sock)
        assert socks[0] is socks[1] is socks[2]  # the server kept the connection open
    finally:
        conn.close()
    assert a.hits() == 3


def test_redirect_sets_location(site: FakeSite) -> None:
    a = site.add("a")
    b = site.add("b")
    a.robots(Reply(redirect_to=b.robots_url), Reply(status=307, redirect_to="/elsewhere"))
    for status, location in [(301, b.robots_url), (307, "/elsewhere")]:
        conn = http.client.HTTPConnection(a.host, a.port, timeout=TIMEOUT)
        conn.request("GET", "/robots.txt")
        resp = conn.getresponse()
        assert (resp.status, resp.getheader("Location")) == (status, location)
        conn.close()


def test_delay_blocks_neither_other_origins_nor_the_same_one() -> None:
    with FakeSite() as site:
        slow = site.add("slow").robots(Reply(delay=30.0, body=b"late"))
        fast = site.add("fast")
        outcome: list[object] = []

        def fetch_slow() -> None:
            try:
                outcome.append(get(slow.robots_url))
            except OSError as err:
                outcome.append(err)

        waiter = threading.Thread(target=fetch_slow, daemon=True)
        waiter.start()
        assert slow.wait_for_hits(1, "/robots.txt")
        assert get(fast.url_for("/"))[0] == 200
        assert get(slow.url_for("/other"))[0] == 200
        assert waiter.is_alive() and not outcome  # the slow one is still pending
        started = time.monotonic()
    # Leaving the block stopped the site, which must cut the 30 s sleep short.
    waiter.join(TIMEOUT)
    assert not waiter.is_alive()
    assert time.monotonic() - started < 3.0
    assert outcome and isinstance(outcome[0], OSError)  # closed without any reply


def test_short_delay_still_answers(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(delay=0.05, body=b"ok"))
    assert get(a.robots_url) == (200, b"ok")


def test_reset_is_a_connection_error(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(reset=True, body=b"User-agent: *\nDisallow: /\n" * 100))
    sock = raw_request(a, "/robots.txt")
    with pytest.raises(ConnectionResetError):
        for _ in range(1000):  # bounded: the reset arrives after at most a few reads
            if not sock.recv(65536):
                break  # a clean EOF would fail the test
    sock.close()
    with pytest.raises((http.client.HTTPException, OSError)):
        get(a.robots_url)
    assert a.hits("/robots.txt") == 2


def test_hang_is_released_by_stop() -> None:
    site = FakeSite()
    try:
        a = site.add("a").robots(Reply(hang=True))
        sock = raw_request(a, "/robots.txt")
        assert a.wait_for_hits(1)  # counted although it is never answered
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        sock.settimeout(TIMEOUT)
        started = time.monotonic()
        site.stop()
        assert time.monotonic() - started < 2.5
        with contextlib.suppress(ConnectionResetError):
            assert sock.recv(1) == b""  # closed without a reply
        sock.close()
    finally:
        site.stop()
    site.stop()  # idempotent
    with pytest.raises(RuntimeError):
        site.add("b")


def test_stream_sends_exact_bytes_chunked(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(stream_bytes=100_003), Reply(stream_bytes=10, body=b"abc"))
    conn = http.client.HTTPConnection(a.host, a.port, timeout=TIMEOUT)
    conn.request("GET", "/robots.txt")
    resp = conn.getresponse()
    assert resp.getheader("Content-Length") is None
    assert resp.getheader("Transfer-Encoding") == "chunked"
    assert resp.getheader("Connection") == "close"
    body = resp.read()
    conn.close()
    assert len(body) == 100_003
    assert body.startswith(STREAM_PATTERN * 3)
    assert get(a.robots_url) == (200, b"abcabcabca")


def test_stream_stops_when_client_leaves(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(stream_bytes=10**10))  # far more than could ever be sent
    sock = raw_request(a, "/robots.txt")
    assert sock.recv(65536)
    sock.close()
    for _ in range(100):  # up to ~2 s
        if a.active_connections() == 0:
            break
        time.sleep(0.02)
    assert a.active_connections() == 0


def test_gzip_bomb(site: FakeSite) -> None:
    size = 10_000_000
    a = site.add("a").robots(Reply(gzip_bomb=size))
    conn = http.client.HTTPConnection(a.host, a.port, timeout=TIMEOUT)
    conn.request("GET", "/robots.txt")
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    assert resp.getheader("Content-Encoding") == "gzip"
    assert int(resp.getheader("Content-Length") or -1) == len(payload)
    assert len(payload) < size // 500
    assert gzip.decompress(payload) == bytes(size)


def test_hit_counting(site: FakeSite) -> None:
    a = site.add("a")
    b = site.add("b").page("/gone", Reply(reset=True))
    get(a.url_for("/x?q=1"))
    get(b.robots_url)
    get(a.robots_url)
    get(a.url_for("/x?q=1"))
    with pytest.raises((http.client.HTTPException, OSError)):
        get(b.url_for("/gone"))
    assert a.hits() == 3
    assert a.hits("/x?q=1") == 2
    assert a.hits("/x") == 0  # exact match, query included
    assert a.hit_paths() == ["/x?q=1", "/robots.txt", "/x?q=1"]
    assert b.hits() == 2
    assert site.hits_log() == [
        ("a", "/x?q=1"),
        ("b", "/robots.txt"),
        ("a", "/robots.txt"),
        ("a", "/x?q=1"),
        ("b", "/gone"),
    ]
    assert site["a"] is a and "b" in site
    assert a.requests("/robots.txt")[0].headers.get("User-Agent", "").startswith("Python-urllib")
