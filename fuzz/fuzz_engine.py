"""atheris target for the robots.txt engine: parser and matcher, arbitrary bytes in.

Usage (``make fuzz`` does all of it)::

    python fuzz/fuzz_engine.py --seed-corpus fuzz/.work     # tests' robots bodies
    python fuzz/fuzz_engine.py fuzz/.work fuzz/corpus -max_total_time=60

The input is the robots.txt body. URLs are derived from the input itself:
every rule's pattern turned into a path that it (nearly) matches, a few
slices of the raw bytes, and ``/robots.txt``. For each, under a few product
tokens (and the first one the file names), the invariants are:

- nothing raises: parsing, deciding, printing verdicts and diagnostics;
- ``allowed()`` is ``decide().allowed``, and the verdict follows its rule;
- ``/robots.txt`` is always allowed (RFC 9309 §2.2.2);
- the answer is the one the brute-force specification gives
  (``scrapy_rep/robotstxt/reference.py``: longest normalised pattern, allow
  wins ties, ``*`` and ``$``, Google's index.html rule);
- normalisation is idempotent; the body as text parses as the bytes do;
- Crawl-delay is None or a finite number >= 0.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["scrapy_rep"]):
    from scrapy_rep.robotstxt import normalise_path, parse
    from scrapy_rep.robotstxt.parser import Rule
    from scrapy_rep.robotstxt.paths import path_of
    from scrapy_rep.robotstxt.reference import reference_match

TOKENS = ("testbot", "googlebot", "Mybot")
_TOKEN = re.compile(r"[a-zA-Z_-]+")
HOST = "http://example.com"
MAX_URLS = 12


def reference(rules: list[Rule], path: str) -> bool:
    """Allowed by the brute-force specification (``robotstxt/reference.py``)."""
    deciding = reference_match(rules, path)
    return deciding is None or deciding.allow


def urls_for(data: bytes, rules: list[Rule]) -> list[str]:
    """Paths the rules (nearly) match, slices of the input, and /robots.txt."""
    filler = data[:3].decode("latin-1") or "x"
    out = ["/robots.txt", HOST + "/robots.txt", "/"]
    for rule in rules[:6]:
        pattern = rule.pattern.replace("*", filler).rstrip("$")
        out.append(pattern if pattern.startswith("/") else "/" + pattern)
        out.append(HOST + out[-1] + "?q=" + filler)
    for start in range(0, min(len(data), 64), 16):
        out.append("/" + data[start : start + 16].decode("latin-1"))
    return out[:MAX_URLS]


def check(data: bytes) -> None:
    robots = parse(data)
    assert robots.size == len(data)
    for diagnostic in robots.diagnostics:
        str(diagnostic).encode("utf-8")

    as_text = parse(data.decode("utf-8", "surrogateescape"))
    assert [(g.agents, g.rules) for g in as_text.groups] == [
        (g.agents, g.rules) for g in robots.groups
    ]

    named = [a for g in robots.groups for a in g.agents if _TOKEN.fullmatch(a)]
    tokens = (*TOKENS, *named[:1])
    every_rule = [rule for group in robots.groups for rule in group.rules]
    for token in tokens:
        selected = [rule for group in robots.groups_for(token) for rule in group.rules]
        delay = robots.crawl_delay(token)
        assert delay is None or (delay >= 0 and math.isfinite(delay)), delay
        for url in urls_for(data, every_rule):
            verdict = robots.decide(token, url)
            assert robots.allowed(token, url) is verdict.allowed, (token, url)
            assert verdict.allowed is (verdict.rule is None or verdict.rule.allow)
            str(verdict)
            path = normalise_path(path_of(url))
            assert normalise_path(path) == path
            if path == "/robots.txt":
                assert verdict.allowed, url
            else:
                assert verdict.allowed is reference(selected, path), (token, url, verdict)


def test_one_input(data: bytes) -> None:
    check(data)


def seed_corpus(out: Path) -> int:
    """Write every bytes/str literal of tests/*.py that looks like a robots.txt into ``out``."""
    root = Path(__file__).resolve().parent.parent
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for source in sorted((root / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, (bytes, str)):
                continue
            value = (
                node.value
                if isinstance(node.value, bytes)
                else node.value.encode("utf-8", "surrogatepass")
            )
            lowered = value.lower()
            if b"\n" not in value or not (b"allow" in lowered or b"user-agent" in lowered):
                continue
            name = hashlib.sha256(value).hexdigest()[:16]
            (out / f"test-{name}").write_bytes(value)
            written += 1
    return written


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seed-corpus":
        print(f"{seed_corpus(Path(sys.argv[2]))} robots.txt bodies from tests/ -> {sys.argv[2]}")
        return
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
