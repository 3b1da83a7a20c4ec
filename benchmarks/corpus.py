"""Corpora for ``bench_engine.py``: real robots.txt files and a generated, seeded set.

Real files: the ~4,200 robots.txt files of popular sites that Protego's sdist
ships under ``tests/test_data``. They are downloaded once with pip into
``benchmarks/.cache/`` (which ignores itself) and never committed.

Generated files: deterministic (one seeded :class:`random.Random`), from a few
dozen bytes to ~500 KB, 1-40 groups, about a quarter wildcard rules, ``$``
anchors, percent-encoded and raw non-ASCII paths, comments, CRLF files.

Every file comes with the URLs to check (:func:`urls_for`): most are built
from the file's own rule patterns, so matching is really exercised, the rest
are random paths. URLs are absolute and percent-encoded, as Scrapy sends them.
"""

from __future__ import annotations

import math
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

HOST = "https://example.com"
CACHE = Path(__file__).resolve().parent / ".cache"
PROTEGO_SDIST = "protego==0.7.0"
#: where the unpacked ``tests/test_data`` of the sdist is kept
REAL_DIR = CACHE / "protego-0.7.0-test_data"
#: upper bound of a generated file: under scrapy-rep's 500 KiB cut, so every
#: engine reads the whole file
MAX_GENERATED = 500_000


@dataclass(frozen=True, slots=True)
class Case:
    """One robots.txt body and the URLs every engine is asked about."""

    name: str
    body: bytes
    urls: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.body)


# --------------------------------------------------------------------------- URLs

_RULE_VALUE = re.compile(
    rb"^[ \t]*(?:dis)?allow[ \t]*:[ \t]*([^\s#]+)", re.IGNORECASE | re.MULTILINE
)
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
# What stays as written in a URL path+query; everything else (spaces,
# non-ASCII, ...) is percent-encoded as UTF-8, as Scrapy's safe_url_string does.
_URL_SAFE = "/%?=&;:@!$'()*+,~-._"
_FILLERS = ("", "x", "abc", "a/b", "index.html", "2024/05", "~user", "caf%C3%A9", "q=1&r=2", "é")
_SUFFIXES = ("", "", "", "/", "x", ".html", "/page.html", "?id=42", "/sub/dir/", ".pdf", "&s=1")

_WORDS = (
    "admin", "search", "cart", "checkout", "login", "account", "api", "static", "img",
    "images", "css", "js", "private", "tmp", "cgi-bin", "wp-admin", "wp-content", "tag",
    "category", "user", "profile", "print", "feed", "comments", "share", "download",
    "archive", "page", "news", "blog", "products", "p", "en", "de", "fr", "ja", "m",
    "help", "ajax", "includes", "plugins", "themes", "uploads", "catalog", "review",
)  # fmt: skip
_NON_ASCII = ("café", "über", "niño", "中文", "日本語", "привет", "ελληνικά", "smörgåsbord", "ação")
_EXTS = (".pdf", ".php", ".html", ".json", ".xml", ".jpg", ".gif", ".js", ".css", ".asp")


def rule_patterns(body: bytes) -> list[str]:
    """The values of the allow/disallow lines of a body (a quick regex, not a parser)."""
    return [value.decode("utf-8", "replace") for value in _RULE_VALUE.findall(body)]


def _instantiate(pattern: str, rng: random.Random) -> str:
    """A path that the pattern matches, or nearly does."""
    if not pattern.startswith(("/", "*")):
        pattern = "/" + pattern
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    if "*" in pattern:
        pattern = "".join(
            part if i == 0 else rng.choice(_FILLERS) + part
            for i, part in enumerate(pattern.split("*"))
        )
    if not pattern.startswith("/"):
        pattern = "/" + pattern
    roll = rng.random()
    if roll < 0.12 and len(pattern) > 2:  # near miss: cut short
        pattern = pattern[: rng.randrange(1, len(pattern))]
    elif roll < 0.2 and len(pattern) > 2:  # near miss: one character changed
        at = rng.randrange(1, len(pattern))
        pattern = pattern[:at] + rng.choice("xyz_9") + pattern[at + 1 :]
    if not anchored or rng.random() < 0.3:
        pattern += rng.choice(_SUFFIXES)
    return pattern


def random_path(rng: random.Random) -> str:
    """A plausible path that no particular rule was built for."""
    segments = [_segment(rng) for _ in range(rng.randint(0, 4))]
    path = "/" + "/".join(segments)
    roll = rng.random()
    if roll < 0.2:
        path += rng.choice(_EXTS)
    elif roll < 0.35:
        path += f"?{rng.choice(_WORDS)}={rng.randint(0, 999)}"
    elif roll < 0.45 and segments:
        path += "/"
    return path


def _encode(path: str, rng: random.Random) -> str:
    url = HOST + quote(path, safe=_URL_SAFE)
    if "%" in url and rng.random() < 0.15:  # lower-case escapes: same URL, other spelling
        url = _ESCAPE.sub(lambda m: m[0].lower(), url)
    return url


def urls_for(body: bytes, rng: random.Random, count: int) -> tuple[str, ...]:
    """``count`` URLs: ~3/4 derived from the body's own rules, the rest random."""
    patterns = rule_patterns(body)
    derived = count * 3 // 4 if patterns else 0
    paths = [_instantiate(rng.choice(patterns), rng) for _ in range(derived)]
    paths += [random_path(rng) for _ in range(count - derived)]
    rng.shuffle(paths)
    return tuple(_encode(path, rng) for path in paths)


# --------------------------------------------------------------------------- generated


def _segment(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.85:
        return rng.choice(_WORDS)
    if roll < 0.93:
        return f"{rng.choice(_WORDS)}-{rng.randint(1, 9999)}"
    word = rng.choice(_NON_ASCII)
    if roll < 0.965:
        return word  # raw UTF-8 in the file
    escaped = quote(word)  # percent-encoded in the file, sometimes in lower case
    return escaped.lower() if rng.random() < 0.3 else escaped


def _pattern(rng: random.Random) -> str:
    path = "/" + "/".join(_segment(rng) for _ in range(rng.randint(1, 4)))
    roll = rng.random()
    if roll < 0.25:  # wildcards
        form = rng.randrange(4)
        if form == 0:
            return "/*" + rng.choice(_EXTS) + ("$" if rng.random() < 0.6 else "")
        if form == 1:
            return f"{path}*{rng.choice(_WORDS)}="
        if form == 2:
            return f"/*/{rng.choice(_WORDS)}/"
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(1, len(path) + 1)
            path = path[:at] + "*" + path[at:]
        return path
    if roll < 0.33:
        return path + rng.choice(_EXTS) + "$"
    if roll < 0.45:
        return path + "/"
    if roll < 0.5:
        return f"{path}?{rng.choice(_WORDS)}="
    return path


_AGENTS = (
    "googlebot", "bingbot", "examplebot", "googlebot-image", "yandex", "baiduspider",
    "duckduckbot", "slurp", "gptbot", "ccbot", "ia_archiver", "mj12bot", "ahrefsbot",
)  # fmt: skip


def generated_body(rng: random.Random, target: int) -> bytes:
    """A robots.txt of about ``target`` bytes."""
    rules: list[str] = []
    size = 0
    while size < target:
        rule = f"{'Allow' if rng.random() < 0.25 else 'Disallow'}: {_pattern(rng)}"
        rules.append(rule)
        size += len(rule) + 1
    n_groups = rng.randint(1, max(1, min(40, len(rules))))
    # The first group (usually "*") gets the lion's share, as on real sites.
    weights = [4.0 * n_groups] + [1.0] * (n_groups - 1)
    owners = rng.choices(range(n_groups), weights, k=len(rules))
    by_group: list[list[str]] = [[] for _ in range(n_groups)]
    for owner, rule in zip(owners, rules, strict=True):
        by_group[owner].append(rule)

    lines = ["# robots.txt for example.com (generated)", ""]
    names = list(_AGENTS)
    rng.shuffle(names)
    for index, group_rules in enumerate(by_group):
        if index == 0 and rng.random() < 0.9:
            agents = ["*"]
        else:
            agents = [names.pop() if names else f"bot{index}" for _ in range(rng.randint(1, 2))]
        lines += [f"User-agent: {agent}" for agent in agents]
        if rng.random() < 0.1:
            lines.append(f"Crawl-delay: {rng.randint(1, 10)}")
        if not group_rules:
            lines.append("Disallow:")
        for rule in group_rules:
            if rng.random() < 0.02:
                lines.append("# " + rng.choice(_WORDS))
            lines.append(rule)
        lines.append("")
    lines.append(f"Sitemap: {HOST}/sitemap.xml")
    newline = "\r\n" if rng.random() < 0.15 else "\n"
    return (newline.join(lines) + newline).encode("utf-8")


def generated(count: int, urls_per_file: int, seed: int = 9309) -> list[Case]:
    """``count`` files, sizes log-spaced (with jitter) from ~40 B to ~500 KB."""
    rng = random.Random(seed)
    low, high = math.log(40), math.log(MAX_GENERATED - 4_000)
    cases = []
    for i in range(count):
        target = int(math.exp(low + (high - low) * (i + rng.random()) / count))
        body = generated_body(rng, target)[:MAX_GENERATED]
        cases.append(Case(f"gen-{i:03d}", body, urls_for(body, rng, urls_per_file)))
    return cases


# --------------------------------------------------------------------------- real


def _download(log: list[str]) -> bool:
    """Fetch Protego's sdist with pip and keep its ``tests/test_data`` in :data:`REAL_DIR`."""
    CACHE.mkdir(parents=True, exist_ok=True)
    ignore = CACHE / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# downloaded benchmark data, never committed\n*\n")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        command += ["--disable-pip-version-check", "-q", PROTEGO_SDIST, "-d", tmp]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            log.append(f"pip download failed: {exc}")
            return False
        archives = list(Path(tmp).glob("*.tar.gz"))
        if done.returncode != 0 or not archives:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no archive"]
            log.append(f"pip download failed (exit {done.returncode}): {tail[0]}")
            return False
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(archives[0]) as archive:
            members = [m for m in archive.getmembers() if "/tests/test_data/" in m.name]
            try:
                archive.extractall(unpacked, members=members, filter="data")
            except TypeError:  # Python without extraction filters
                safe = [m for m in members if m.isfile() and ".." not in m.name]
                archive.extractall(unpacked, members=safe)
        found = next(unpacked.glob("*/tests/test_data"), None)
        if found is None:
            log.append("the Protego sdist has no tests/test_data")
            return False
        shutil.rmtree(REAL_DIR, ignore_errors=True)
        found.rename(REAL_DIR)
    log.append(f"downloaded {PROTEGO_SDIST} sdist; test data cached in {REAL_DIR}")
    return True


def real(urls_per_file: int, sample: int | None = None, seed: int = 9309) -> tuple[list[Case], str]:
    """Protego's real-world files (all, or a seeded sample) and a line saying where from.

    Returns no cases, and the reason, when the files cannot be had.
    """
    log: list[str] = []
    if not (REAL_DIR.is_dir() and any(REAL_DIR.iterdir())) and not _download(log):
        return [], log[-1]
    paths = sorted(p for p in REAL_DIR.iterdir() if p.is_file())
    if sample is not None and sample < len(paths):
        paths = sorted(random.Random(seed).sample(paths, sample))
    cases = []
    for path in paths:
        body = path.read_bytes()
        rng = random.Random(f"{seed}:{path.name}")
        cases.append(Case(path.name, body, urls_for(body, rng, urls_per_file)))
    where = log[-1] if log else f"cached in {REAL_DIR}"
    return cases, f"{len(cases)} real files from Protego's sdist ({where})"
