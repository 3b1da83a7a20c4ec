"""REP_EXCLUDE: the domain list read, normalised and matched (core/exclusion.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scrapy_rep.core.decision import EXCLUDED, EXCLUDED_SITE, excluded_site
from scrapy_rep.core.exclusion import ExcludedSites, ExclusionError, normalise
from scrapy_rep.core.origin import origin_of
from scrapy_rep.runtime.settings import RepSettings, SettingError


def sites(*entries: str) -> ExcludedSites:
    return ExcludedSites.parse(list(entries))


def host(url: str) -> str:
    return origin_of(url).partition("://")[2].rpartition(":")[0]


def test_an_entry_covers_the_domain_and_every_subdomain() -> None:
    excluded = sites("example.com")
    for url in (
        "https://example.com/",
        "http://www.example.com/a",
        "https://a.b.example.com:8443/",
    ):
        found = excluded.match(host(url))
        assert found is not None and found.entry == "example.com", url


def test_a_suffix_that_is_not_a_label_boundary_does_not_match() -> None:
    excluded = sites("example.com")
    assert excluded.match("badexample.com") is None
    assert excluded.match("example.com.evil.org") is None
    assert excluded.match("com") is None


def test_the_most_specific_entry_a_host_meets_is_named() -> None:
    excluded = sites("example.com", "news.example.com")
    assert excluded.match("a.news.example.com").entry == "news.example.com"  # type: ignore[union-attr]
    assert excluded.match("shop.example.com").entry == "example.com"  # type: ignore[union-attr]


def test_hosts_and_entries_meet_idna_encoded_and_lower_cased() -> None:
    excluded = sites("Bücher.Example", "*.Shop.EXAMPLE.org.", ".cdn.example")
    assert excluded.match(host("https://www.BÜCHER.example/")).entry == "Bücher.Example"  # type: ignore[union-attr]
    assert excluded.match("xn--bcher-kva.example") is not None
    assert excluded.match(host("http://shop.example.org/")).entry == "*.Shop.EXAMPLE.org."  # type: ignore[union-attr]
    assert excluded.match("img.cdn.example") is not None
    assert normalise("Bücher.Example") == "xn--bcher-kva.example"


def test_ip_literals_match_as_written() -> None:
    excluded = sites("127.0.0.2", "[::1]")
    assert excluded.match(host("http://127.0.0.2:8080/")) is not None
    assert excluded.match(host("http://[::1]:8080/")) is not None
    assert excluded.match(host("http://127.0.0.1/")) is None


def test_a_file_has_comments_blank_lines_and_line_numbers(tmp_path: Path) -> None:
    text = "# infringing sites, 2026-11\n\nexample.com  # since March\n  other.example\n"
    found = ExcludedSites.parse(text.splitlines(), source="list.txt")
    assert len(found) == 2
    match = found.match("www.other.example")
    assert match is not None and (match.entry, match.line) == ("other.example", 4)
    assert match.where() == "list.txt, line 4"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("https://example.com/", "not a URL"),
        ("example.com/path", "not a URL"),
        ("exa mple.com", "is not a domain"),
        ("example..com", "is not a domain"),
        ("-bad.example", "is not a domain"),
    ],
)
def test_a_bad_entry_is_named_with_its_line(entry: str, said: str) -> None:
    with pytest.raises(ExclusionError, match=said) as raised:
        ExcludedSites.parse(["ok.example", entry], source="list.txt")
    assert "list.txt, line 2" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_large_list_is_a_set_probe_per_label() -> None:
    """100,000 entries: a lookup probes the host's suffixes, never the list."""
    entries = [f"site{n}.example" for n in range(100_000)]
    excluded = ExcludedSites.parse(entries)
    probes: list[str] = []

    class Counting(dict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            probes.append(key)
            return super().get(key, default)

    excluded._entries = Counting(excluded._entries)  # the one seam: count the probes
    assert excluded.match("a.b.site99999.example") is not None
    assert probes == ["a.b.site99999.example", "b.site99999.example", "site99999.example"]
    probes.clear()
    assert excluded.match("a.b.c.example.org") is None
    assert len(probes) == 5


def read(**values: object) -> RepSettings:
    return RepSettings.from_settings({"REP_PRODUCT_TOKEN": "mybot", **values}.get)


def test_the_setting_takes_a_list_or_a_file(tmp_path: Path) -> None:
    listed = read(REP_EXCLUDE=["example.com"]).exclude
    assert listed is not None and listed.match("www.example.com") is not None
    path = tmp_path / "excluded.txt"
    path.write_text("# ours\nexample.org\n", encoding="utf-8")
    from_file = read(REP_EXCLUDE=str(path)).exclude
    assert from_file is not None and from_file.match("example.org").line == 2  # type: ignore[union-attr]
    cmdline = read(REP_EXCLUDE='["a.example"]').exclude
    assert cmdline is not None and cmdline.match("a.example") is not None
    assert read().exclude is None  # off by default


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (["https://example.com/x"], r"REP_EXCLUDE: 'https://example.com/x' is not a domain"),
        ("/no/such/file.txt", "REP_EXCLUDE = '/no/such/file.txt': cannot read"),
        (42, "REP_EXCLUDE must be a list of domains or a file path"),
        ([3], "REP_EXCLUDE: 3 \\(item 1\\) is not a domain"),
    ],
)
def test_a_bad_setting_is_one_line(value: object, said: str) -> None:
    with pytest.raises(SettingError, match=said) as raised:
        read(REP_EXCLUDE=value)
    assert "\n" not in str(raised.value)


def test_the_record_names_the_entry_and_its_line() -> None:
    record = excluded_site(
        "https://example.com:443",
        "mybot",
        "https://example.com/a",
        "example.com",
        3,
        "l.txt, line 3",
    )
    assert (record["reason"], record["action"], record["policy_status"]) == (
        EXCLUDED_SITE,
        "drop",
        EXCLUDED,
    )
    assert (record["matched_rule"], record["matched_line"]) == ("exclude: example.com", 3)
    assert "l.txt, line 3" in record["detail"]
    assert record["policy_fetched_at"] is None
