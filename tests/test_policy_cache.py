"""PolicyCache: parsed files live as long as their policies, bodies kept compressed."""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest

from scrapy_rep import robotstxt
from scrapy_rep.core.policy import FetchResult, Policy, PolicyConfig, next_policy
from scrapy_rep.core.uses import USES, Declared, robots_record
from scrapy_rep.robotstxt import body as kept_body
from scrapy_rep.robotstxt import parse
from scrapy_rep.runtime.store.memory import PolicyCache


def fetched(origin: str, body: bytes, now: float = 0.0):  # type: ignore[no-untyped-def]
    url = f"{origin}/robots.txt"
    return next_policy(None, FetchResult(url, url, 200, body), now, PolicyConfig())


def test_no_file_is_parsed_again_while_its_origin_is_cached() -> None:
    """Round-robin over more origins than any parse cache would hold: each parse survives."""
    cache = PolicyCache(max_origins=10_000)
    origins = [f"http://o{n}:80" for n in range(3_000)]
    first = {}
    for n, origin in enumerate(origins):
        cache.put(origin, fetched(origin, f"User-agent: *\nDisallow: /{n}\n".encode()))
    for origin in origins:
        policy = cache.get(origin)
        assert policy is not None
        first[origin] = cache.robots(policy)
    gc.collect()
    for _ in range(2):
        for origin in origins:
            policy = cache.get(origin)
            assert policy is not None
            assert cache.robots(policy) is first[origin]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The body of every parse from now on (``parse_records`` counted): the first, and
    those of the body kept."""
    seen: list[bytes] = []
    parse_records = robotstxt.parse_records
    for module in (robotstxt, kept_body):
        monkeypatch.setattr(
            module, "parse_records", lambda data: seen.append(data) or parse_records(data)
        )
    return seen


def test_what_a_crawl_asks_of_a_file_stating_no_delay_nor_use_parses_it_once(
    parses: list[bytes],
) -> None:
    # Judging compiles the rules and lets the parse go; Crawl-delay and the use
    # answers are asked after that. A file with no Crawl-delay, Request-rate,
    # Content-Usage or Content-Signal line (most) answers them without a parse.
    body = b"User-agent: *\nDisallow: /x\nAllow: /x/ok\n"
    declared = Declared(uses=USES)
    before = parse(body)  # asked before judging, while the parse is held
    expected = (before.crawl_delay("bot"), robots_record(before, "bot", "/y", True, declared))
    parses.clear()
    robots = parse(body)
    assert not robots.decide("bot", "/x").allowed
    assert (
        robots.crawl_delay("bot"),
        robots_record(robots, "bot", "/y", True, declared),
    ) == expected
    assert len(parses) == 1
    paced = parse(body + b"Crawl-delay: 3\n")  # one that asks for a delay is parsed again
    assert not paced.decide("bot", "/x").allowed
    assert paced.crawl_delay("bot") == 3.0
    assert len(parses) == 3


def test_the_use_answers_of_a_file_stating_preferences_come_from_one_parse(
    parses: list[bytes],
) -> None:
    # The token's groups (Content-Usage) and the lines before the first group
    # (Content-Signal) are read from the same parse.
    body = (
        b"Content-Signal: search=yes, ai-input=no\n"
        b"User-agent: *\nDisallow: /x\nContent-Usage: /y train-ai=n\n"
    )
    declared = Declared(uses=USES)
    expected = robots_record(parse(body), "bot", "/y", True, declared)
    parses.clear()
    robots = parse(body)
    assert not robots.decide("bot", "/x").allowed
    assert len(parses) == 1
    assert robots_record(robots, "bot", "/y", True, declared) == expected
    assert len(parses) == 2


def test_origins_serving_one_file_share_one_parse() -> None:
    cache = PolicyCache()
    body = b"User-agent: *\nDisallow: /x\n"
    a, b = fetched("http://a:80", body), fetched("http://b:80", body)
    cache.put("http://a:80", a)
    cache.put("http://b:80", b)
    assert cache.robots(a) is cache.robots(b)


def test_origins_sharing_one_file_in_turn_do_not_rebuild_it_each_turn() -> None:
    # A broad crawl asks its hosts in turn: a file shared by two origins is asked
    # a, b, a, b... The compiled rule set's bounds start with one origin (the URLs
    # of others are judged by their paths); they are rebuilt for another origin
    # only once its URLs keep coming, not at every turn.
    cache = PolicyCache()
    body = b"User-agent: *\nDisallow: /x\nDisallow: /*.pdf$\n"
    for origin in ("http://a:80", "http://b:80"):
        cache.put(origin, fetched(origin, body))
    policy = cache.get("http://a:80")
    assert policy is not None
    robots = cache.robots(policy)
    answers, bases = [], []
    for n in range(40):
        for origin in ("http://a:80", "http://b:80"):
            answers.append(robots.allowed("bot", f"{origin}/x{n % 2}/{n}.pdf"))
            base = robots._matcher("bot").rules.prefix  # the origin the bounds start with
            if not bases or bases[-1] != base:
                bases.append(base)
    assert answers == [False] * 80
    assert len(bases) <= 2  # as compiled, and perhaps rebased once


def test_the_cached_policy_has_no_body_but_can_give_it_back() -> None:
    cache = PolicyCache()
    body = b"User-agent: *\nDisallow: /x\n" * 20
    policy = fetched("http://a:80", body)
    cache.put("http://a:80", policy)
    cached = cache.get("http://a:80")
    assert cached is not None and cached.body is None and cached.digest == policy.digest
    assert cache.with_body("http://a:80") == policy
    # a policy for the same body without one (a stale copy's bookkeeping) keeps the parse
    cache.put("http://a:80", replace(cached, reason="again"))
    again = cache.get("http://a:80")
    assert again is not None and cache.robots(again) is not None
    assert cache.with_body("http://a:80") == replace(policy, reason="again")


def test_least_recently_used_origins_go_first() -> None:
    cache = PolicyCache(max_origins=2)
    for name in ("a", "b"):
        cache.put(name, fetched(name, b""))
    cache.get("a")
    cache.put("c", fetched("c", b""))
    assert cache.get("b") is None and cache.get("a") is not None and len(cache) == 2
    assert cache.evictions == 1
    cache.forget("a")
    assert cache.get("a") is None
    cache.forget()
    assert len(cache) == 0


def test_only_the_files_asked_lately_stay_compiled() -> None:
    """A cache of 300 origins with a window of 50 files' bytes (each ~2.1 KB compiled): at
    most 50 compiled files, the latest."""
    cache = PolicyCache(max_origins=1_000, compiled_bytes=50 * 2_131 + 1_000)
    origins = [f"http://o{n}:80" for n in range(300)]
    for n, origin in enumerate(origins):
        cache.put(origin, fetched(origin, f"User-agent: *\nDisallow: /{n}/\n".encode()))
    files = {}
    for _ in range(2):
        for n, origin in enumerate(origins):
            policy = cache.get(origin)
            assert policy is not None
            robots = files[origin] = cache.robots(policy)
            assert robots is not None
            assert not robots.allowed("mybot", f"http://o{n}/{n}/x")  # compiled again if released
            assert robots.allowed("mybot", f"http://o{n}/{n + 1}/x")
            assert cache.compiled <= 51  # and the file asked last, weighed before it compiled
    assert cache.compiled == 50
    assert [files[o].compiled for o in origins] == [False] * 250 + [True] * 50
    assert len(cache) == 300  # released, not evicted: the same parse, no refetch
    gc.collect()
    for origin in origins:
        policy = cache.get(origin)
        assert policy is not None and cache.robots(policy) is files[origin]


# --- bounded by bytes, not counts ------------------------------------------------------


def test_the_compiled_window_counts_bytes() -> None:
    # Files of 55,000-rule size would take ~10 MiB each compiled: a 12 MiB window keeps
    # the last one or two, not 10,000 of them.
    cache = PolicyCache(compiled_bytes=12 * 2**20)
    kept = []
    for n in range(6):
        origin = f"http://p{n}.example"
        body = (
            "User-agent: *\n" + "".join(f"Disallow: /{n}q{k}\n" for k in range(30_000))
        ).encode()
        cache.put(origin, fetched(origin, body))
        policy = cache.get(origin)
        assert policy is not None
        robots = cache.robots(policy)
        assert robots is not None
        assert not robots.allowed("mybot", f"{origin}/{n}q7/x")
        kept.append(robots)
    assert 1 <= cache.compiled <= 3
    assert kept[-1].compiled and not kept[0].compiled
    assert kept[0].allowed("mybot", "http://p0.example/zz")  # compiled again when asked


def test_the_settings_bound_the_compiled_window_by_bytes_not_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from scrapy_rep.runtime.settings import RepSettings

    with caplog.at_level("WARNING"):
        config = RepSettings.from_settings({"REP_PRODUCT_TOKEN": "mybot"}.get)
    assert config.cache_compiled_bytes == 256 * 2**20
    assert not caplog.records


def test_the_compact_form_is_bounded_too() -> None:
    cache = PolicyCache(2, evicted_max=3)
    for n in range(10):
        origin = f"http://o{n}:80"
        url = f"{origin}/robots.txt"
        cache.put(origin, _ok(url))
    assert (len(cache), cache.evicted) == (2, 3)
    assert cache.get("http://o4:80") is None  # beyond both bounds: gone
    assert cache.get("http://o5:80") is not None  # compact: back, parsed again
    cache.forget()
    assert (len(cache), cache.evicted) == (0, 0)


def _ok(url: str) -> Policy:
    return next_policy(None, FetchResult(url, url, 200, b"Disallow: /x\n"), 0.0, PolicyConfig())
