"""`make dist`: build the sdist and wheel, check them, and use the wheel as a user would.

1. ``python -m build`` into ``dist/``, then ``twine check``;
2. the wheel carries ``py.typed`` and no tests; the sdist carries the tests, the docs,
   the licence and the changelog (what a packager needs to build and test it);
3. a fresh virtualenv gets the wheel and nothing else (pip resolves its dependencies);
4. ``scrapy startproject``, the ``ADDONS`` line put into the template's dict, and a crawl
   of a loopback site: the disallowed page is never asked for, the allowed ones are;
5. ``scrapy robots --help`` and ``scrapy-rep --version`` from the installed wheel.

Everything runs outside the checkout, so nothing is imported from it by accident.
Exits non-zero, saying what failed, on the first problem.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
TIMEOUT = 600

SPIDER = """\
import scrapy


class ShopSpider(scrapy.Spider):
    name = "shop"
    custom_settings = {"REP_PRODUCT_TOKEN": "shopbot", "USER_AGENT": "shopbot/1.0"}

    def __init__(self, base, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [base + "/"]

    def parse(self, response):
        yield {"url": response.url}
        yield from response.follow_all(css="a")
"""

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
PAGES = {
    "/": b'<a href="/a">a</a> <a href="/private/x">x</a> <a href="/b">b</a>',
    "/a": b"<p>a</p>",
    "/b": b"<p>b</p>",
}


class Failed(Exception):
    pass


def run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    print("+", " ".join(map(str, args)), flush=True)
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise Failed(f"{args[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def build() -> tuple[Path, Path]:
    shutil.rmtree(DIST, ignore_errors=True)
    run(sys.executable, "-m", "build", "--outdir", DIST, ROOT)
    wheels, sdists = sorted(DIST.glob("*.whl")), sorted(DIST.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise Failed(f"expected one wheel and one sdist in {DIST}, found {wheels + sdists}")
    run(sys.executable, "-m", "twine", "check", "--strict", *wheels, *sdists)
    return wheels[0], sdists[0]


def check_contents(wheel: Path, sdist: Path) -> None:
    # pyproject takes the version from here ([tool.hatch.version])
    init = (ROOT / "scrapy_rep" / "__init__.py").read_text()
    expected = re.search(r'__version__ = "([^"]+)"', init)
    assert expected is not None
    if f"-{expected[1]}-" not in wheel.name:
        raise Failed(f"{wheel.name} is not version {expected[1]}")
    names = zipfile.ZipFile(wheel).namelist()
    if "scrapy_rep/py.typed" not in names:
        raise Failed("the wheel has no scrapy_rep/py.typed")
    if strays := [n for n in names if n.startswith(("tests/", "docs/", "benchmarks/"))]:
        raise Failed(f"the wheel carries what is not the package: {strays[:5]}")
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    for line in ("Classifier: Framework :: Scrapy", "Classifier: Typing :: Typed", "Project-URL"):
        if line not in text:
            raise Failed(f"the wheel's METADATA lacks {line!r}")
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    for needed in (
        "pyproject.toml",
        "LICENSE",
        "CHANGES.md",
        "README.md",
        "scrapy_rep/py.typed",
        "tests/conftest.py",
        "tests/support/fakesite.py",
        "docs/conf.py",
        "docs/index.md",
    ):
        if needed not in members:
            raise Failed(f"the sdist lacks {needed}")
    if strays := [m for m in members if m.startswith(("docs/_build/", "fuzz/", ".venv"))]:
        raise Failed(f"the sdist carries build or cache files: {strays[:5]}")


class _Site(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = ROBOTS if self.path == "/robots.txt" else PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        robots = self.path == "/robots.txt"
        self.send_header("Content-Type", "text/plain" if robots else "text/html")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: object) -> None:
        pass


def crawl_with_the_wheel(wheel: Path, work: Path) -> None:
    venv = work / "venv"
    run(sys.executable, "-m", "venv", venv)
    bin_ = venv / "bin"
    # the wheel and nothing else: pip resolves what the wheel declares
    run(bin_ / "python", "-m", "pip", "install", "-q", wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_}{os.pathsep}{env.get('PATH', '')}"

    run(bin_ / "scrapy", "startproject", "shop", cwd=work, env=env)
    project = work / "shop"
    settings = project / "shop" / "settings.py"
    text = settings.read_text()
    if "ADDONS = {}" not in text:
        raise Failed("scrapy startproject wrote no `ADDONS = {}` to put the entry into")
    settings.write_text(text.replace("ADDONS = {}", 'ADDONS = {"scrapy_rep.Addon": 100}'))
    (project / "shop" / "spiders" / "shop.py").write_text(SPIDER)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        items = project / "items.jsonl"
        log = run(
            bin_ / "scrapy", "crawl", "shop", "-a", f"base={base}", "-o", items,
            "-s", "LOG_LEVEL=INFO", cwd=project, env=env,
        )  # fmt: skip
    finally:
        server.shutdown()
    got = sorted(json.loads(line)["url"] for line in items.read_text().splitlines())
    if got != [f"{base}/", f"{base}/a", f"{base}/b"]:
        raise Failed(f"the crawl scraped {got}\n{log}")
    if "/private/x" in _Site.seen or _Site.seen.count("/robots.txt") != 1:
        raise Failed(f"the site saw {_Site.seen}")
    for said in ("obeying robots.txt as 'shopbot'", "'rep/dropped/disallow-rule': 1"):
        if said not in log:
            raise Failed(f"the crawl's log does not say {said!r}:\n{log}")

    help_ = run(bin_ / "scrapy", "robots", "--help", cwd=project, env=env)
    if "Usage" not in help_ or "robots" not in help_:
        raise Failed(f"`scrapy robots --help` printed:\n{help_}")
    version = run(bin_ / "scrapy-rep", "--version", cwd=work, env=env).strip()
    where = run(bin_ / "python", "-c", "import scrapy_rep; print(scrapy_rep.__file__)", cwd=work)
    if not where.startswith(str(venv)):
        raise Failed(f"scrapy_rep was imported from {where}, not the wheel")
    print(f"make dist: {wheel.name} installs, crawls and answers: {version}")


def main() -> int:
    try:
        wheel, sdist = build()
        check_contents(wheel, sdist)
        with tempfile.TemporaryDirectory(prefix="scrapy-rep-dist-") as work:
            crawl_with_the_wheel(wheel, Path(work))
    except Failed as exc:
        print(f"make dist: FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
