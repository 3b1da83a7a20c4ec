"""Remake docs/_static/report.png: the demo crawl's HTML report, in Debian's Chromium.

    .venv/bin/python docs/report_screenshot.py

Runs the demo (``make demo``'s crawl, on loopback), writes its audit log as a
report with ``scrapy-rep report``, and photographs the top of the page.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_project"))

import run_demo  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "docs" / "_static" / "report.png"


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        demo = run_demo.run("rep", Path(work) / "demo")
        page_path = Path(work) / "report.html"
        command = ["-m", "scrapy_rep.cli", "report", str(demo.audit_path), "-o", str(page_path)]
        subprocess.run([sys.executable, *command], check=True, cwd=ROOT)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(page_path.as_uri())
            heading = page.locator("#t-origins th", has_text="dropped").first
            heading.click()
            heading.click()  # the most dropped first
            page.screenshot(path=str(OUT), clip={"x": 0, "y": 0, "width": 1280, "height": 1000})
            browser.close()
    print(OUT)


if __name__ == "__main__":
    main()
