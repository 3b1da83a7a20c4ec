"""What a parsed robots.txt or tdmrep.json keeps, traced: linear in the file, and no more
than Protego keeps for typical files.

Adversarial shapes (root wildcards × keys, nested keys) once kept hundreds of MiB;
here memory per octet of the file must not grow with the file. tracemalloc makes
the engine many times slower, so these run in ``make test``, not in the quick loop.
"""

from __future__ import annotations

import json

import pytest
from protego import Protego

from scrapy_rep.core.tdmrep import TdmRules, parse_tdmrep
from scrapy_rep.robotstxt import RobotsTxt, parse
from tests.support.memory import retained

TOKEN = "mybot"


def answered(body: bytes, urls: list[str]) -> int:
    """What ``body`` parsed keeps once it has answered ``urls``."""

    def build() -> RobotsTxt:
        robots = parse(body)
        for url in urls:
            robots.allowed(TOKEN, url)
        return robots

    return retained(build)[0]


def _root_and_keys(count: int) -> bytes:
    lines = ["User-agent: *"]
    for n in range(count):
        lines += [f"Allow: /*abc{n}", f"Allow: /abc{n}*", f"Disallow: /abc{n}"]
    return ("\n".join(lines) + "\n").encode()


def test_root_wildcards_are_not_copied_into_every_key() -> None:
    # The shape that took 711 MiB (9,000 root wildcards × 9,000 keys): memory per
    # octet of the file must not grow with the file. Compiled and every key asked.
    small, large = _root_and_keys(500), _root_and_keys(2000)
    ask = [f"https://example.com/abc{n}/x" for n in range(0, 2000, 7)]
    per_small = answered(small, ask[:72]) / len(small)
    per_large = answered(large, ask) / len(large)
    assert per_large < 2 * per_small + 10, (per_small, per_large)
    assert per_large < 60  # bytes kept per octet of the file (measured ~25-35)


def test_nested_keys_do_not_copy_their_parents_entries() -> None:
    # Keys that are prefixes of each other, each with a wildcard: a frame per key,
    # the entries above reached through the chain, not copied (O(depth²) before).
    lines = ["User-agent: *"]
    for n in range(1, 600):
        lines.append(f"Disallow: /{'a' * n}*z{n}")
    body = ("\n".join(lines) + "\n").encode()
    ask = [f"https://example.com/{'a' * n}/q" for n in range(1, 600, 5)]
    assert answered(body, ask) < 60 * len(body)


def test_a_hostile_tdmrep_json_is_linear_and_within_its_footprint() -> None:
    # The shape that kept 202 MiB per origin: root wildcards × keys in tdmrep.json.
    entries = []
    for n in range(5000):
        entries.append({"location": f"/*abc{n}", "tdm-reservation": n % 2})
        entries.append({"location": f"/abc{n}*", "tdm-reservation": 1})
    body = json.dumps(entries).encode()

    def build() -> TdmRules:
        rules = parse_tdmrep(body)
        for n in range(0, 5000, 13):
            rules.answer(f"https://example.com/abc{n}/x")
        return rules

    kept, rules = retained(build)
    assert len(rules) == 10_000
    assert kept <= rules.footprint, (kept, rules.footprint)
    assert kept < 40 * len(body)  # ~410 KB: a few MiB, not 202


def test_compiled_plain_rules_cost_little_memory() -> None:
    # What a broad crawl keeps per origin. A plain rule (no '*', '$' or '%') is
    # its pattern (the parse's own string) and the end of its interval, one more
    # string, in one sorted tuple, and an answer and a code per interval: no tuple
    # or Rule object per rule.
    body = "User-agent: *\n" + "".join(f"Disallow: /{'p' * (i % 40 + 1)}/{i}\n" for i in range(400))
    parse(body).allowed(TOKEN, "/x")  # the shared (length, bound) pairs exist now
    robots = parse(body)
    per_rule = retained(lambda: robots.allowed(TOKEN, "/x"))[0] / 400
    assert per_rule < 160, per_rule


_WORDS = ["admin", "cart", "checkout", "search", "login", "private", "tmp", "wp-admin", "api"]
_TYPICAL = [
    "User-agent: *\nDisallow: /admin/\n",
    "User-agent: *\n"
    + "".join(f"Disallow: /{w}/\n" for w in _WORDS)
    + "Allow: /wp-admin/admin-ajax.php\nSitemap: https://example.com/sitemap.xml\n",
    "User-agent: Googlebot\n"
    + "".join(f"Disallow: /{w}*?\n" for w in _WORDS[:5])
    + "\nUser-agent: *\n"
    + "".join(f"Disallow: /{w}\nDisallow: /*.{w}$\n" for w in _WORDS)
    + "Crawl-delay: 5\n",
]


@pytest.mark.parametrize("body", _TYPICAL, ids=["one-rule", "ten-rules", "two-groups"])
def test_retained_memory_is_at_most_protegos(body: str) -> None:
    # After parse + first answers for two tokens, a parsed
    # file keeps no more than Protego's parser does (the benchmark compares
    # medians over real files; these are typical shapes).
    url = "https://example.com/products/shoes?id=42"

    def ours() -> object:
        robots = parse(body.encode())
        for token in ("googlebot", "examplebot"):
            robots.allowed(token, url)
        return robots

    def theirs() -> object:
        parser = Protego.parse(body)
        for token in ("googlebot", "examplebot"):
            parser.can_fetch(url, token)
        return parser

    ours(), theirs()  # warm module-level caches outside the measurement
    assert retained(ours)[0] <= retained(theirs)[0]
