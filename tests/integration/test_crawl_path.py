"""The crawl path holds the crawl: a default crawl (``ADDONS`` only) imports none of the
after-crawl tools and none of the optional integrations or components.

Run in a fresh interpreter (the test session has imported everything): a real crawl of
a loopback site, then the package's modules in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CRAWL = textwrap.dedent(
    """
    import http.server, json, socketserver, sys, threading

    class Site(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/robots.txt":
                body = b"User-agent: *\\nDisallow: /private\\n"
            else:
                body = b"<a href='/a'>a</a><a href='/private/x'>x</a>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class Spider(scrapy.Spider):
        name = "s"
        start_urls = [f"http://127.0.0.1:{server.server_address[1]}/"]

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse)

    settings = {"ADDONS": {"scrapy_rep.Addon": 100}, "LOG_LEVEL": "ERROR",
                "TELNETCONSOLE_ENABLED": False}
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(Spider)
    process.crawl(crawler)
    process.start()
    server.shutdown()
    print(json.dumps({
        "modules": sorted(m for m in sys.modules if m.startswith("scrapy_rep")),
        "forbidden": crawler.stats.get_value("robotstxt/forbidden"),
    }))
    """
)

#: what a default crawl never imports: the after-crawl tools, the optional integrations,
#: and the components the add-on installs only when their setting asks for them
NOT_ON_THE_CRAWL_PATH = (
    "scrapy_rep.cli",
    "scrapy_rep.report",
    "scrapy_rep.reference",
    "scrapy_rep.integrations.browser",
    "scrapy_rep.integrations.monitors",
    "scrapy_rep.components.command",
    "scrapy_rep.components.html_report",
    # the audit log and the policy archive: only with REP_DECISION_LOG or REP_POLICY_ARCHIVE
    "scrapy_rep.components.audit_log",
    "scrapy_rep.runtime.audit",
    "scrapy_rep.crawl.job",
    "scrapy_rep.components.media",
    "scrapy_rep.components.media_provenance",
    "scrapy_rep.components.provenance",
    # the use machinery past robots.txt's own lines: only with REP_USES
    "scrapy_rep.components.page_uses",
    "scrapy_rep.core.use_signals",
    "scrapy_rep.core.tdmrep",
    "scrapy_rep.crawl.tdmrep",
    "scrapy_rep.runtime.tdmrep",
    # held requests handed over at close: only with a JOBDIR or a shared scheduler
    "scrapy_rep.components.handover",
    "scrapy_rep.crawl.handover",
    "scrapy_rep.crawl.held_records",
    "scrapy_rep.crawl.jobdir",
    # the application's scope hook: only with REP_COLLECTION_POLICY
    "scrapy_rep.components.collection",
    "scrapy_rep.crawl.collection",
    # a page's pause shared through the store: only with REP_STORE beyond memory
    "scrapy_rep.components.shared_pauses",
    "scrapy_rep.crawl.shared_pauses",
)


def test_a_default_crawl_imports_no_after_crawl_tool_nor_optional_integration() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRAWL], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["forbidden"] == 1  # the crawl ran, and scrapy-rep judged it
    assert "scrapy_rep.crawl.graph" in found["modules"]
    assert [
        name
        for name in found["modules"]
        if any(name == gone or name.startswith(gone + ".") for gone in NOT_ON_THE_CRAWL_PATH)
    ] == []
