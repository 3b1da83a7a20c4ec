"""RFC 9651 Dictionary parsing: the RFC's examples, and agreement with ``http-sf``."""

from __future__ import annotations

from decimal import Decimal

import http_sf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep.core.structured import StructuredFieldError, Token, parse_dictionary, parse_list
from tests.support.examples import examples


def test_members_keep_their_values_and_drop_parameters() -> None:
    parsed = parse_dictionary(b'en="Applepie", da=:w4ZibGV0w6ZydGUK:, t=tok;p=1, f=?0, i=-12')
    assert parsed == {
        "en": "Applepie",
        "da": b"\xc3\x86blet\xc3\xa6rte\n",
        "t": "tok",
        "f": False,
        "i": -12,
    }
    assert isinstance(parsed["t"], Token)


def test_a_bare_key_is_true_and_an_inner_list_a_list() -> None:
    assert parse_dictionary(b"a=?0, b, c;foo=bar") == {"a": False, "b": True, "c": True}
    assert parse_dictionary(b"rating=1.5, feelings=(joy sadness)") == {
        "rating": 1.5,
        "feelings": ["joy", "sadness"],
    }


def test_the_last_of_duplicate_keys_wins() -> None:
    assert parse_dictionary(b"train-ai=y, train-ai=n") == {"train-ai": "n"}


def test_empty_and_surrounding_whitespace() -> None:
    assert parse_dictionary(b"") == {}
    assert parse_dictionary(b"  a=1 \t,\tb=2  ") == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    "value",
    [
        b"Train-ai=n",  # an upper-case key
        b"a=1,",  # a trailing comma
        b"a=1,,b=2",
        b"a=",  # no value after '='
        b'a="unterminated',
        b'a="bad \\x escape"',
        b"a=1.2345",  # four fractional digits
        b"a=1234567890123456",  # sixteen integer digits
        b"a=?2",
        b"a=(1 2",
        b"a=:not base64!:",
        b"a=y b=n",  # a space is not a separator
        "a=\u00e9".encode(),  # not ASCII
        b"\ta=1",  # only SP is discarded before the first member
    ],
)
def test_what_is_not_a_dictionary_raises(value: bytes) -> None:
    with pytest.raises(StructuredFieldError):
        parse_dictionary(value)
    with pytest.raises(http_sf.StructuredFieldError):  # http-sf agrees
        http_sf.parse(value, tltype="dictionary")


def _plain(value: object) -> object:
    """http-sf's value in this parser's shape (no parameters, tokens as str)."""
    if isinstance(value, tuple):
        value = value[0]
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, http_sf.DisplayString):
        return str(value)
    if isinstance(value, http_sf.Token):
        return Token(str(value))
    if isinstance(value, Decimal):  # http-sf keeps decimals exact; this parser reads floats
        return float(value)
    if hasattr(value, "timestamp") and not isinstance(value, (int, float)):
        return int(value.timestamp())
    return value


_ALPHABET = st.sampled_from(
    [*'abcxyzAZ019-_.*=,;:() \t"\\?@%+/!#', "y", "n", "train-ai", "search", "=y", "=n"]
)
_NOISE = st.lists(_ALPHABET, max_size=24).map("".join)
_KEYS = st.sampled_from(["train-ai", "search", "ai-input", "a", "*x", "Train-ai", "9a", ""])
_ITEMS = st.sampled_from(
    [
        "y",
        "n",
        "?1",
        "?0",
        "-7",
        "1.5",
        "1.",
        "12345678901234.5",
        '"s"',
        '"\\""',
        ":aGk=:",
        ":aGk:",
        "@-1",
        "@1.5",
        '%"h%c3%a9"',
        '%"%C3"',
        "(y n)",
        "( )",
        "(y;a=1 n)",
        "tok/x:y",
        "y;p",
        "n;p=?1",
        "y;P=1",
        "",
    ]
)
_MEMBERS = st.tuples(_KEYS, st.sampled_from(["=", "", ";q=1"]), _ITEMS).map("".join)
_SEPARATORS = st.sampled_from([", ", ",", " ,\t", "  ,  ", " ", ",,"])
_BUILT = (
    st.lists(st.tuples(_MEMBERS, _SEPARATORS), max_size=4)
    .map(lambda parts: "".join(member + sep for member, sep in parts))
    .flatmap(lambda text: st.sampled_from([text, text.rstrip(" ,\t"), " " + text.rstrip(", ")]))
)
_NEAR_DICTIONARIES = st.one_of(_NOISE, _BUILT)


@settings(max_examples=examples(2000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NEAR_DICTIONARIES)
def test_agrees_with_http_sf_on_generated_input(text: str) -> None:
    data = text.encode()
    try:
        parsed = http_sf.parse(data, tltype="dictionary")
    except http_sf.StructuredFieldError:
        expected = None
    else:
        expected = {key: _plain(value) for key, value in parsed.items()}
    try:
        got: dict[str, object] | None = parse_dictionary(data)
    except StructuredFieldError:
        got = None
    assert got == expected


def test_a_list_keeps_members_and_their_parameters() -> None:
    """The Robots-Tag draft's example: members keyed by product token, rules as parameters."""
    members = parse_list(b"*;noindex;nosnippet, ExampleBot")
    assert members == [(Token("*"), [("noindex", True), ("nosnippet", True)]), ("ExampleBot", [])]
    assert parse_list(b'mybot;unavailable_after="2025-01-01";max-snippet=20') == [
        ("mybot", [("unavailable_after", "2025-01-01"), ("max-snippet", 20)])
    ]
    with pytest.raises(StructuredFieldError):
        parse_list(b"mybot: nofollow")  # X-Robots-Tag's syntax is no List


_LIST_MEMBERS = st.tuples(
    st.sampled_from(["*", "mybot", "ExampleBot", '"s"', "(a b)", "7", "noindex", ""]),
    st.sampled_from(["", ";noindex", ";nofollow;noai", ";a=?0", ';u="x"', ";X", "; none", ";"]),
).map("".join)
_NEAR_LISTS = st.one_of(
    _NOISE,
    st.lists(st.tuples(_LIST_MEMBERS, _SEPARATORS), max_size=4).map(
        lambda parts: "".join(member + sep for member, sep in parts).rstrip(" ,\t")
    ),
)


@settings(max_examples=examples(2000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NEAR_LISTS)
def test_lists_agree_with_http_sf_on_generated_input(text: str) -> None:
    data = text.encode()
    try:
        parsed = http_sf.parse(data, tltype="list")
    except http_sf.StructuredFieldError:
        expected = None
    else:
        expected = [
            (_plain(value), {k: _plain(v) for k, v in params.items()}) for value, params in parsed
        ]
    try:
        got: list[tuple[object, dict[str, object]]] | None = [
            (value, dict(params)) for value, params in parse_list(data)
        ]
    except StructuredFieldError:
        got = None
    assert got == expected


@pytest.mark.parametrize("content", ["=", "==", "====", "a===", "aa=a", "=aa"])
def test_padding_alone_or_misplaced_is_no_byte_sequence(content: str) -> None:
    # hypothesis found ``a=:=:`` read as ``{'a': b''}``: http-sf refuses it, as RFC 9651 does
    data = f"a=:{content}:".encode()
    with pytest.raises(http_sf.StructuredFieldError):
        http_sf.parse(data, tltype="dictionary")
    with pytest.raises(StructuredFieldError):
        parse_dictionary(data)
