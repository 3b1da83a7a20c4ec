"""A parsed file compacted answers exactly as the compiled one.

The policy cache keeps only the files asked for lately compiled
(:meth:`RobotsTxt.compact` for the rest); a compacted file selects and
compiles again on its next question. Every answer a crawl reads must be the
same: the decision record (verdict, rule, line, group, reason, use answers),
``allowed``, Crawl-delay, the groups and diagnostics.
"""

from __future__ import annotations

import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep.core.decision import judge_record
from scrapy_rep.core.policy import FetchResult, PolicyConfig, next_policy
from scrapy_rep.core.uses import USES, Declared
from scrapy_rep.robotstxt import RobotsTxt, parse
from tests.support.examples import examples

ORIGIN = "https://example.com:443"
TOKENS = ("mybot", "MyBot", "otherbot", "examplebot")
DECLARED = (
    Declared(),
    Declared(uses=USES),
    Declared(uses=("train-ai",), tokens={"train-ai": "examplebot-ai"}),
)

FILE = """\
User-agent: *
Disallow: /private/
Allow: /private/ok/
Disallow: /*.pdf$
Allow: /shop/index.html
Disallow: /shop/
Disallow: /search?
Content-Usage: train-ai=n
Content-Usage: /open/ train-ai=y
Crawl-delay: 2

User-agent: mybot
User-agent: examplebot
Disallow: /x%7Ey
Disallow: /a*b*c
Allow: /a*b*c$
Request-rate: 1/5
Content-Signal: search=yes, ai-train=no

User-agent: examplebot-ai
Disallow: /never/
Sitemap: https://example.com/sitemap.xml
Bogus-line: here
"""

PATHS = (
    "/",
    "/robots.txt",
    "/private/x",
    "/private/ok/x",
    "/doc.pdf",
    "/doc.pdf?x",
    "/shop/",
    "/shop/index.html",
    "/shop/cart",
    "/search?q=1",
    "/x~y",
    "/x%7ey",
    "/aXbYc",
    "/aXbYcZ",
    "/open/page",
    "/never/x",
    "/caf%C3%A9",
)


def policy_for(body: str):  # type: ignore[no-untyped-def]
    url = f"{ORIGIN}/robots.txt"
    return next_policy(None, FetchResult(url, url, 200, body.encode()), 0.0, PolicyConfig())


def everything(robots: RobotsTxt, body: str, paths: tuple[str, ...]) -> list[object]:
    """What a crawl reads of a file, in one comparable list."""
    policy = policy_for(body)
    seen: list[object] = []
    for token in TOKENS:
        seen.append(robots.crawl_delay(token))
        for path in paths:
            url = "https://example.com" + path
            seen.append(robots.allowed(token, url))
            verdict = robots.decide(token, url)
            seen.append((verdict.allowed, verdict.rule, verdict.reason, verdict.group_label))
            seen.append(verdict.groups)
            for declared in DECLARED:
                seen.append(judge_record(ORIGIN, token, url, policy, robots, declared=declared))
    seen.append((robots.groups, robots.diagnostics, robots.sitemaps, robots.signals))
    return seen


def test_a_compacted_file_answers_as_it_did_compiled() -> None:
    robots = parse(FILE)
    robots.packed()  # as the policy cache keeps it
    compiled = everything(robots, FILE, PATHS)
    assert robots.compiled
    robots.compact()
    assert not robots.compiled
    assert everything(robots, FILE, PATHS) == compiled
    # compacted between every question, in the other order
    fresh = parse(FILE)
    for token in reversed(TOKENS):
        for path in PATHS:
            url = "https://example.com" + path
            want = fresh.decide(token, url)
            robots.compact()
            got = robots.decide(token, url)
            assert (got.allowed, got.rule, got.reason, got.group_label) == (
                want.allowed,
                want.rule,
                want.reason,
                want.group_label,
            )
            robots.compact()
            assert robots.allowed(token, url) is want.allowed
        robots.compact()
        assert robots.crawl_delay(token) == fresh.crawl_delay(token)


def test_a_small_body_compacted_is_kept_as_it_is() -> None:
    body = "User-agent: *\nDisallow: /x\n"
    robots = parse(body)
    assert robots.allowed("mybot", "/y") and not robots.allowed("mybot", "/x")
    robots.compact()
    assert not robots.compiled
    assert not robots.allowed("mybot", "/x") and robots.decide("mybot", "/x").rule is not None


def test_a_large_body_is_compressed_when_compacted_not_when_judged() -> None:
    # Compressing costs ~20 µs whatever the size, as much as compiling a median
    # file: the first question does not pay it; the compact form does.
    body = FILE + "".join(f"Disallow: /filler/{n}/\n" for n in range(60))
    assert len(body) > 1024
    robots = parse(body)
    assert not robots.allowed("examplebot-ai", "/filler/7/x")
    kept = robots._body
    assert kept._packed is None
    robots.compact()
    assert kept._packed is not None and zlib.decompress(kept._packed) == body.encode()
    assert not robots.allowed("examplebot-ai", "/filler/7/x")
    assert robots.allowed("examplebot-ai", "/filler/")


LINES = [
    "User-agent: *",
    "User-agent: mybot",
    "User-agent: examplebot",
    "Disallow: /",
    "Disallow: /a",
    "Allow: /a/b",
    "Disallow: /*.pdf$",
    "Allow: /a*b$",
    "Allow: /d/index.html",
    "Disallow: /%7e",
    "Crawl-delay: 3",
    "Request-rate: 2/10",
    "Content-Usage: train-ai=n",
    "Content-Usage: /a/ train-ai=y",
    "Content-Signal: ai-train=no",
    "# comment",
    "",
]
files = st.lists(st.sampled_from(LINES), max_size=14).map("\n".join)
paths = st.lists(
    st.text("ab/.d~%7ef", max_size=10).map(lambda p: "/" + p), min_size=1, max_size=4
).map(tuple)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=files, asked=paths)
def test_compacted_and_compiled_answers_are_the_same(body: str, asked: tuple[str, ...]) -> None:
    robots = parse(body)
    compiled = everything(robots, body, asked)
    robots.compact()
    assert everything(robots, body, asked) == compiled
