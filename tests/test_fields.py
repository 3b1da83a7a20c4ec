"""One bound for every response header scrapy-rep reads (``core/fields.py``).

A site may send megabytes of a header (32 MB of ``X-Robots-Tag`` lines, 3,000
parameters in a ``Content-Usage``): each header is read up to the same bound of
lines and octets, and what lies past it says nothing. No timing is asserted here
(``benchmarks/bench_headers.py`` measures the cost per octet); the bound is shown
by what a line past it no longer changes, and the reader's steps are counted.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from scrapy_rep.core import structured
from scrapy_rep.core.directives import page_directives
from scrapy_rep.core.fields import FIELD_LINES, FIELD_OCTETS, field_lines
from scrapy_rep.core.policy import retry_after
from scrapy_rep.core.structured import parse_dictionary, parse_list
from scrapy_rep.core.use_signals import response_signals

TOKEN, NOW = "testbot", 1_000_000.0


def test_field_lines_keeps_lines_up_to_the_bound_of_octets_and_of_lines() -> None:
    line = b"x" * 1000
    assert field_lines([line] * 20) == [line] * (FIELD_OCTETS // 1000)
    assert field_lines([b"a"] * (FIELD_LINES + 5)) == [b"a"] * FIELD_LINES
    # the line that crosses the bound is not read, nor any after it; or kept cut
    big = "y" * (FIELD_OCTETS + 1)
    assert field_lines(["a", big, "b"]) == ["a"]
    assert field_lines(["a", big, "b"], cut=True) == ["a", "y" * (FIELD_OCTETS - 1)]


def _full(line: bytes) -> list[list[bytes]]:
    """Field lines that fill the bound, of lines and of octets: whatever follows is past it."""
    padded = line + b" " * (FIELD_OCTETS - len(line))  # trailing whitespace: the same value
    return [[line] * FIELD_LINES, [padded]]


def test_x_robots_tag_past_the_bound_is_not_read() -> None:
    assert page_directives(TOKEN, NOW, headers=[b"nofollow"]).nofollow
    for full in _full(b"otherbot: noindex"):
        assert not page_directives(TOKEN, NOW, headers=[*full, b"nofollow"]).nofollow
    # one line of 32 MB: not read at all, instead of parsed whole
    assert not page_directives(TOKEN, NOW, headers=[b"nofollow, " * 3_300_000]).nofollow


@pytest.mark.parametrize(
    ("header", "filler", "late"),
    [
        ("content_usage", b"search=y", b"train-ai=n"),
        ("content_signal", b"search=yes", b"ai-train=no"),
        ("x_robots_tag", b"otherbot: noai", b"noai"),
        ("robots_tag", b"otherbot;noai", b"noai"),
        ("tdm_reservation", b"0", b"1"),
    ],
)
def test_a_use_signal_past_the_bound_is_not_read(header: str, filler: bytes, late: bytes) -> None:
    def train_ai(lines: list[bytes]) -> str | None:
        signals = response_signals(TOKEN, **{header: lines})
        said = [a.answer for a in signals.answers if a.use == "train-ai"]
        if signals.tdm is not None:
            said.append(signals.tdm.answer)
        return said[-1] if said else None

    assert train_ai([filler, late]) == "refused"
    for full in _full(filler):
        assert train_ai([*full, late]) != "refused"


def test_a_retry_after_longer_than_the_bound_is_not_read() -> None:
    assert retry_after({"retry-after": "120"}, NOW) == 120.0
    assert retry_after({"retry-after": "9" * (FIELD_OCTETS + 1)}, NOW) is None


def _steps(parse: Callable[[bytes], Any], value: bytes) -> int:
    """Python function calls made while ``parse`` reads ``value``: the parser's steps. The
    collector is off meanwhile: a collection run then would count the finalizers of other
    tests' objects as steps (the fast suite failed here twice in nine runs)."""
    calls = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(count)
    try:
        parse(value)
    except structured.StructuredFieldError:
        pass
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return calls


#: shapes of an RFC 9651 field that grow with n (parameters, members, inner lists), as a
#: Dictionary and as a List
SHAPES: dict[str, Callable[[int], bytes]] = {
    "parameters": lambda n: b"train-ai=n" + b"".join(b";p%d=1" % i for i in range(n)),
    "bare parameters": lambda n: b"a" + b";p" * n,
    "members": lambda n: b", ".join(b"k%d=?1" % i for i in range(n)),
    "inner list": lambda n: b"a=(" + b" ".join(b"1" for _ in range(n)) + b")",
    "inner lists": lambda n: b", ".join(b"a%d=(x;q y)" % i for i in range(n)),
    "item parameters": lambda n: b"a=(" + b" ".join(b"x;p;q=2" for _ in range(n)) + b")",
    "strings": lambda n: b"a=(" + b" ".join(b'"s\\"t"' for _ in range(n)) + b")",
    "unclosed inner list": lambda n: b"a=(" + b" x" * n,
}
LIST_SHAPES: dict[str, Callable[[int], bytes]] = {
    "parameters": lambda n: b"a" + b"".join(b";p%d=1" % i for i in range(n)),
    "members": lambda n: b", ".join(b"k%d;noai" % i for i in range(n)),
    "inner list": lambda n: b"(" + b" ".join(b"1" for _ in range(n)) + b")",
    "inner lists": lambda n: b", ".join(b"(x;q y);p" for _ in range(n)),
    "strings": lambda n: b", ".join(b'"s\\"t";q=:aGk=:' for _ in range(n)),
    "unclosed inner list": lambda n: b"(" + b" x" * n,
}


@pytest.mark.parametrize(
    ("parse", "shape"),
    [(parse_dictionary, shape) for shape in SHAPES]
    + [(parse_list, shape) for shape in LIST_SHAPES],
    ids=[f"dictionary-{s}" for s in SHAPES] + [f"list-{s}" for s in LIST_SHAPES],
)
def test_the_structured_field_reader_is_linear_in_every_shape(
    parse: Callable[[bytes], Any], shape: str
) -> None:
    grow = (SHAPES if parse is parse_dictionary else LIST_SHAPES)[shape]
    small, large = grow(500), grow(2000)
    steps_small, steps_large = _steps(parse, small), _steps(parse, large)
    # a bounded number of steps per octet, the same at 4x the input
    assert steps_small > len(small)  # it was read, not refused at its start
    assert steps_large <= 16 * len(large), (steps_large, len(large))
    assert steps_large / steps_small <= 1.1 * len(large) / len(small), (steps_small, steps_large)
