"""Origin keys: robots.txt is scoped to scheme, host and port (RFC 9309 §2.3)."""

from __future__ import annotations

import pytest

from scrapy_rep.core.origin import NotAnOrigin, origin_of, robots_url


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Example.com/x", "https://example.com:443"),
        ("https://example.com:443", "https://example.com:443"),
        ("HTTPS://EXAMPLE.COM", "https://example.com:443"),
        ("http://example.com", "http://example.com:80"),
        ("http://example.com:8080/a?b#c", "http://example.com:8080"),
        ("http://example.com./", "http://example.com:80"),
        ("http://user:secret@example.com/", "http://example.com:80"),
        ("http://Bücher.example/", "http://xn--bcher-kva.example:80"),
        ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example:80"),
        ("http://[::1]:8080/a", "http://[::1]:8080"),
        ("http://[::1]/", "http://[::1]:80"),
        ("https://[2001:DB8::1]/", "https://[2001:db8::1]:443"),
        ("http://127.0.0.1:5000/", "http://127.0.0.1:5000"),
        # RFC 9309 §2.3 names ftp://host/robots.txt too
        ("ftp://Example.com/pub/a.txt", "ftp://example.com:21"),
        ("ftp://user:pw@example.com:2121/", "ftp://example.com:2121"),
    ],
)
def test_origin_of(url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_default_port_written_or_not_is_one_origin() -> None:
    assert origin_of("https://Example.com") == origin_of("https://example.com:443/")


def test_scheme_and_port_make_different_origins() -> None:
    origins = {
        origin_of("https://example.com/"),
        origin_of("http://example.com/"),
        origin_of("http://example.com:443/"),
        origin_of("https://example.com:8443/"),
        origin_of("https://www.example.com/"),
    }
    assert len(origins) == 5


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "sftp://example.com/",
        "data:,hello",
        "mailto:someone@example.com",
        "http:///no-host",
        "http://example.com:99999/",
        "//example.com/relative",
        "/just/a/path",
    ],
)
def test_not_an_origin(url: str) -> None:
    with pytest.raises(NotAnOrigin, match=r"robots\.txt governs|bad port"):
        origin_of(url)


@pytest.mark.parametrize(
    ("origin", "url"),
    [
        ("https://example.com:443", "https://example.com/robots.txt"),
        ("http://example.com:80", "http://example.com/robots.txt"),
        ("ftp://example.com:21", "ftp://example.com/robots.txt"),
        ("ftp://example.com:2121", "ftp://example.com:2121/robots.txt"),
        ("http://example.com:443", "http://example.com:443/robots.txt"),
        ("https://example.com:8443", "https://example.com:8443/robots.txt"),
        ("http://[::1]:80", "http://[::1]/robots.txt"),
        ("http://[::1]:8080", "http://[::1]:8080/robots.txt"),
        ("http://xn--bcher-kva.example:80", "http://xn--bcher-kva.example/robots.txt"),
    ],
)
def test_robots_url(origin: str, url: str) -> None:
    assert robots_url(origin) == url


def test_robots_url_of_an_origin_is_in_that_origin() -> None:
    for url in ("https://Example.com:443/a", "http://[::1]:81/", "http://Bücher.example/x"):
        origin = origin_of(url)
        assert origin_of(robots_url(origin)) == origin
