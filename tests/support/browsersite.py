"""A loopback site whose page, once rendered, asks for allowed and disallowed resources.

Four origins on ``FakeSite`` (one port each): ``main`` serves the page,
``cdn`` and ``static`` serve resources, ``down`` answers 503 for robots.txt.
``main``, ``cdn`` and ``static`` disallow ``/private/``. The page loads,
from each kind a browser knows: images, scripts, stylesheets, a CSS
background image, fonts, iframes, fetch and XHR calls from a script, and
redirects from an allowed path to a disallowed one (and to an allowed one).

:data:`DISALLOWED` and :data:`ALLOWED` list (origin name, path) pairs: what a
guarded render must never ask for, and what it must load.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy_playwright.page import PageMethod

from tests.support.fakesite import FakeSite, Origin, Reply

HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
CHROMIUM = "/usr/bin/chromium"

#: scrapy-playwright with Debian's Chromium, headless, talking to nothing but loopback
PLAYWRIGHT_SETTINGS: dict[str, Any] = {
    "DOWNLOAD_HANDLERS": {"http": HANDLER, "https": HANDLER},
    "PLAYWRIGHT_BROWSER_TYPE": "chromium",
    "PLAYWRIGHT_LAUNCH_OPTIONS": {
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            # a document the guard fulfilled has no IP address space of its own, so
            # Chromium's Local Network Access checks would block its WebSockets to loopback
            "--disable-features=LocalNetworkAccessChecks",
        ],
    },
    "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": 20_000,
    "DOWNLOAD_TIMEOUT": 30,
}

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
PAGE = "/page.html"

#: what a guarded render must never request: (origin, path)
DISALLOWED = [
    ("main", "/private/img.png"),  # <img>
    ("main", "/private/style.css"),  # <link rel=stylesheet>
    ("cdn", "/private/tracker.js"),  # <script>, another origin
    ("static", "/private/bg.png"),  # CSS background-image
    ("static", "/private/font.woff"),  # @font-face
    ("cdn", "/private/api"),  # fetch()
    ("main", "/private/xhr"),  # XMLHttpRequest
    ("main", "/private/redirected.png"),  # <img> of an allowed path redirecting here
    ("main", "/private/fetched"),  # fetch() of an allowed path redirecting here
    ("cdn", "/private/in-frame.png"),  # <img> inside an allowed iframe
    ("down", "/frame.html"),  # <iframe> of an origin whose robots.txt answers 503
]
#: what a guarded render must still load
ALLOWED = [
    ("main", "/img/ok.png"),
    ("main", "/js/app.js"),
    ("static", "/css/site.css"),
    ("static", "/img/bg-ok.png"),
    ("static", "/fonts/ok.woff"),
    ("cdn", "/img/cdn-ok.png"),
    ("cdn", "/api/ok"),
    ("main", "/api/xhr-ok"),
    ("main", "/go/redirect"),
    ("main", "/go/redirect-ok"),
    ("cdn", "/img/after-redirect.png"),
    ("cdn", "/frame-ok.html"),
    ("cdn", "/img/in-frame-ok.png"),
]


def _typed(body: str | bytes, content_type: str) -> Reply:
    data = body.encode() if isinstance(body, str) else body
    return Reply(body=data, headers={"Content-Type": content_type})


def build(site: FakeSite) -> dict[str, Origin]:
    """Add the four origins to ``site`` and program them; returns them by name."""
    main, cdn, static, down = (site.add(n) for n in ("main", "cdn", "static", "down"))
    for origin in (main, cdn, static):
        origin.robots(Reply(body=ROBOTS))
    down.robots(Reply(status=503))
    m, c, s, d = main.url, cdn.url, static.url, down.url
    page = f"""<!doctype html>
<html><head>
<link rel="stylesheet" href="{s}/css/site.css">
<link rel="stylesheet" href="{m}/private/style.css">
<script src="{m}/js/app.js"></script>
<script src="{c}/private/tracker.js"></script>
</head><body>
<img src="{m}/img/ok.png"><img src="{m}/private/img.png"><img src="{c}/img/cdn-ok.png">
<img src="{m}/go/redirect"><img src="{m}/go/redirect-ok">
<p class="bg">background</p>
<p style="font-family: okfont">a font</p><p style="font-family: badfont">another font</p>
<iframe src="{d}/frame.html"></iframe>
<iframe src="{c}/frame-ok.html"></iframe>
</body></html>"""
    script = f"""
function xhr(url) {{
  return new Promise(function (done) {{
    var x = new XMLHttpRequest();
    x.onloadend = done;
    x.open("GET", url);
    x.send();
  }});
}}
window.__done = false;
Promise.allSettled([
  fetch("{c}/api/ok", {{mode: "no-cors"}}),
  fetch("{c}/private/api", {{mode: "no-cors"}}),
  fetch("{m}/go/fetch-redirect", {{mode: "no-cors"}}),
  xhr("{m}/api/xhr-ok"),
  xhr("{m}/private/xhr"),
]).then(function () {{ window.__done = true; }});
"""
    css = """
@font-face { font-family: okfont; src: url("/fonts/ok.woff"); }
@font-face { font-family: badfont; src: url("/private/font.woff"); }
body { background-image: url("/private/bg.png"); }
.bg { background-image: url("/img/bg-ok.png"); }
"""
    png = _typed(b"\x89PNG\r\n\x1a\n", "image/png")
    main.page(PAGE, _typed(page, "text/html; charset=utf-8"))
    main.page("/js/app.js", _typed(script, "application/javascript"))
    main.page("/go/redirect", Reply(status=302, redirect_to=f"{m}/private/redirected.png"))
    main.page("/go/redirect-ok", Reply(status=302, redirect_to=f"{c}/img/after-redirect.png"))
    main.page("/go/fetch-redirect", Reply(status=302, redirect_to="/private/fetched"))
    for origin, path in (*ALLOWED, *DISALLOWED):
        target = site[origin]
        if path.endswith(".png"):
            target.page(path, png)
        elif path.endswith(".js") and path != "/js/app.js":
            target.page(path, _typed("window.__tracked = true;", "application/javascript"))
        elif path.endswith(".woff"):
            target.page(path, _typed(b"wOFF", "font/woff"))
    static.page("/css/site.css", _typed(css, "text/css"))
    main.page("/private/style.css", _typed("p { color: red }", "text/css"))
    cdn.page(
        "/frame-ok.html",
        _typed(
            f'<img src="{c}/private/in-frame.png"><img src="{c}/img/in-frame-ok.png">',
            "text/html",
        ),
    )
    return {"main": main, "cdn": cdn, "static": static, "down": down}


def hits(site: FakeSite, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """How often each (origin, path) was asked for."""
    return {(name, path): site[name].hits(path) for name, path in pairs}


class SharedChromium:
    """One Chromium for a whole test module, which each crawl connects to over CDP.

    Launching Chromium costs each crawl more than a second; a crawl that
    connects to a running one (``PLAYWRIGHT_CDP_URL``) gets a new browser
    context of its own, as a launched browser would give it, and closing the
    crawl closes only that context. Started with the launch options above.
    """

    def __init__(self, profile: Path) -> None:
        options = PLAYWRIGHT_SETTINGS["PLAYWRIGHT_LAUNCH_OPTIONS"]
        self.process = subprocess.Popen(
            [
                options["executable_path"],
                "--headless",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                # what Playwright's own launch adds: popups open, timers run at full speed
                "--disable-popup-blocking",
                "--disable-background-timer-throttling",
                "--disable-backgrounding-occluded-windows",
                "--disable-renderer-backgrounding",
                "--disable-extensions",
                "--enable-automation",
                *options["args"],
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = self._devtools_url()

    def _devtools_url(self) -> str:
        """The ``ws://`` address Chromium prints once it listens (bounded wait)."""
        assert self.process.stderr is not None
        deadline = time.monotonic() + 30
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            seen.append(line)
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                # the rest of its stderr is not read: let it go nowhere rather than fill a pipe
                threading.Thread(target=self.process.stderr.read, daemon=True).start()
                return found.group(1)
        self.stop()
        raise RuntimeError("Chromium did not start its DevTools server:\n" + "".join(seen[-20:]))

    def settings(self) -> dict[str, Any]:
        """PLAYWRIGHT_SETTINGS for a crawl that connects to this Chromium."""
        settings = {
            k: v for k, v in PLAYWRIGHT_SETTINGS.items() if k != "PLAYWRIGHT_LAUNCH_OPTIONS"
        }
        return {**settings, "PLAYWRIGHT_CDP_URL": self.url}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


#: a page's own script has run (it sets ``window.__done``)
WAIT_FOR_SCRIPT = PageMethod("wait_for_function", "window.__done === true", timeout=15_000)


def page_request(url: str, wait: bool = True, **meta: Any) -> scrapy.Request:
    methods = [WAIT_FOR_SCRIPT] if wait else []
    return scrapy.Request(
        url, meta={"playwright": True, "playwright_page_methods": methods, **meta}
    )


def chromium_for(settings: dict[str, Any]) -> Any:
    """A module's autouse fixture: one Chromium for the module, its crawl settings put in
    ``settings`` while the module runs; each crawl gets a new context of it, not a new
    browser. Use as ``chromium = chromium_for(BROWSER)``."""

    @pytest.fixture(scope="module", autouse=True)
    def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
        shared = SharedChromium(tmp_path_factory.mktemp("chromium"))
        settings.update(shared.settings())
        try:
            yield
        finally:
            settings.clear()
            shared.stop()

    return chromium
