"""Run ``scrapy <command>`` as a user runs it: a real process, in a project with the add-on.

The process is forked with Scrapy imported already (``tests/support/processes.py``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import processes

ROOT = Path(__file__).resolve().parent.parent.parent
#: a project's spider module with one spider, ``pages``: it crawls the comma-separated
#: ``urls`` argument and yields one item a page (its URL, and a title to see it survive)
PAGES_SPIDER = """\
import scrapy


class PagesSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, urls, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = urls.split(",")

    def parse(self, response):
        yield {"url": response.url, "title": "page"}
"""
#: the example project the README's commands run in
PROJECT = ROOT / "example_project"
#: seconds a command may take before the test fails (a held request would take ~15 minutes)
TIMEOUT = 60

SETTINGS = """\
BOT_NAME = "oneshot"
SPIDER_MODULES = ["oneshot_spiders"]
ADDONS = {"scrapy_rep.Addon": 100}
USER_AGENT = "testbot/1.0 (+http://127.0.0.1/)"
TELNETCONSOLE_ENABLED = False
RETRY_ENABLED = False
"""

SPIDERS = """\
import scrapy


class PagesSpider(scrapy.Spider):
    name = "pages"

    def parse(self, response):
        yield {"url": response.url, "status": response.status}
"""


def make_project(where: Path) -> Path:
    """A Scrapy project with the add-on and one spider (``pages``)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "scrapy.cfg").write_text("[settings]\ndefault = oneshot_settings\n")
    (where / "oneshot_settings.py").write_text(SETTINGS)
    (where / "oneshot_spiders.py").write_text(SPIDERS)
    return where


def scrapy(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in ``project``, this checkout's scrapy_rep first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(ROOT)])
    env["BROWSER"] = "true"  # scrapy view opens a browser: a command that does nothing
    return processes.run("scrapy", args, cwd=project, env=env, timeout=TIMEOUT)


def scrapy_robots(*args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy robots ARGS`` in the example project, as a user runs it."""
    return processes.run(
        "scrapy",
        ["robots", *args],
        cwd=PROJECT,
        # the project, and this checkout's scrapy_rep (not another one installed)
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(PROJECT), str(PROJECT.parent)))},
        timeout=120,
    )
