"""Two crawls writing at once: each one's numbers are its own.

Two spiders in one ``CrawlerProcess`` (a real process, as a script author runs
it: different tokens, origins and ``REP_REPORT``, one audit log) share one
resolver, since their settings are equal; two scrapyd-style jobs (two processes
at once, ``_job`` given) share one audit log. Neither may count, report or
explain the other's origins.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.support import processes
from tests.support.audit import records
from tests.support.fakesite import FakeSite, Reply

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = b"User-agent: *\nDisallow: /private\n"

SCRIPT = """\
import json, sys

import scrapy
from scrapy.crawler import CrawlerProcess

CONFIG = json.loads(sys.argv[1])
STATS = {}


class Pages(scrapy.Spider):
    def __init__(self, urls=(), **kwargs):
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url, errback=lambda failure: None)

    def parse(self, response):
        return None

    def closed(self, reason):
        STATS[self.name] = {
            k: v for k, v in self.crawler.stats.get_stats().items() if k.startswith("rep/")
        }


settings = {
    "ADDONS": {"scrapy_rep.Addon": 100},
    "TELNETCONSOLE_ENABLED": False,
    "RETRY_ENABLED": False,
    "LOG_LEVEL": "INFO",
    **CONFIG["settings"],
}
process = CrawlerProcess(settings)
for spider in CONFIG["spiders"]:
    cls = type(spider["name"], (Pages,), {
        "name": spider["name"], "custom_settings": spider.get("custom_settings", {}),
    })
    process.crawl(cls, urls=spider["urls"], **spider.get("kwargs", {}))
process.start()
with open(CONFIG["out"], "w") as f:
    json.dump(STATS, f)
"""


def run_script(tmp_path: Path, config: dict[str, Any], name: str = "two") -> Any:
    """The script as its own process; (its stats by spider, its log)."""
    (tmp_path / "two_crawls.py").write_text(SCRIPT)
    out = tmp_path / f"{name}.json"
    config = {**config, "out": str(out)}
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    return processes.start(
        "two_crawls",
        [json.dumps(config)],
        cwd=tmp_path,
        env=env,
        stdout=tmp_path / f"{name}.log",
    ), out


def finish(started: Any, out: Path, log: Path) -> tuple[dict[str, Any], str]:
    code = started.wait(90)
    text = log.read_text()
    assert code == 0, text[-3000:]
    return json.loads(out.read_text()), text


def two_origins(site: FakeSite) -> tuple[str, str]:
    fast = site.add("fast").robots(Reply(body=ROBOTS))
    # the slow spider's pages answer late: its crawl is still open when the fast one's
    # robots.txt is fetched and its policy adopted
    slow = site.add("slow").robots(Reply(body=ROBOTS, delay=0.5))
    slow.page("/a", Reply(body=b"<html>a</html>", delay=1.0))
    return fast.url, slow.url


def test_two_spiders_of_one_process_each_count_report_and_audit_their_own(
    site: FakeSite, tmp_path: Path
) -> None:
    fast, slow = two_origins(site)
    log = tmp_path / "audit.jsonl"
    config = {
        "settings": {"REP_DECISION_LOG": str(log)},
        "spiders": [
            {
                "name": "alpha",
                "urls": [f"{fast}/", f"{fast}/b", f"{fast}/private/x"],
                "custom_settings": {
                    "USER_AGENT": "alphabot/1.0",
                    "REP_REPORT": str(tmp_path / "alpha.html"),
                },
            },
            {
                "name": "beta",
                "urls": [f"{slow}/a"],
                "custom_settings": {
                    "USER_AGENT": "betabot/1.0",
                    "REP_REPORT": str(tmp_path / "beta.html"),
                },
            },
        ],
    }
    started, out = run_script(tmp_path, config)
    stats, text = finish(started, out, tmp_path / "two.log")

    # stats: each its own fetch, nothing "reused" of the other's origin
    assert stats["alpha"]["rep/fetch/count"] == 1 and stats["beta"]["rep/fetch/count"] == 1
    assert "rep/fetch/reused" not in stats["alpha"], stats["alpha"]
    assert "rep/fetch/reused" not in stats["beta"], stats["beta"]
    # close reports: one origin each, none reused
    reports = [line for line in text.splitlines() if "scrapy-rep report:" in line]
    assert len(reports) == 2, reports
    for line in reports:
        assert " 1 origins," in line and "1 robots.txt fetches, 0 reused" in line, line
    # the audit log: every record says its crawl, each crawl its own origin
    found = records(log)
    crawls: dict[str, set[str]] = {}
    for record in found:
        assert record.get("crawl"), record
        if record.get("origin"):
            crawls.setdefault(record["crawl"], set()).add(record["origin"])
    assert len(crawls) == 2 and all(len(origins) == 1 for origins in crawls.values()), crawls
    # the HTML reports: each of its own crawl, token and origin
    alpha = (tmp_path / "alpha.html").read_text()
    beta = (tmp_path / "beta.html").read_text()
    assert "alphabot" in alpha and "betabot" not in alpha
    assert "betabot" in beta and "alphabot" not in beta
    assert names(alpha, fast) and not names(alpha, slow)
    assert names(beta, slow) and not names(beta, fast)


def names(text: str, origin: str) -> bool:
    """Whether ``text`` names ``origin`` (not merely a longer port that begins alike)."""
    return re.search(re.escape(origin) + r"(?!\d)", text) is not None


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return processes.python("-m", "scrapy_rep.cli", *args, timeout=60)


def test_two_scrapyd_jobs_at_once_sharing_one_audit_log_are_kept_apart(
    site: FakeSite, tmp_path: Path
) -> None:
    fast, slow = two_origins(site)
    log = tmp_path / "audit.jsonl"
    jobs = []
    for job, origin, path in (("job-1", slow, "/a"), ("job-2", fast, "/b")):
        config = {
            "settings": {"REP_DECISION_LOG": str(log), "USER_AGENT": "scrapydbot/1.0"},
            "spiders": [{"name": "pages", "urls": [origin + path], "kwargs": {"_job": job}}],
        }
        jobs.append(run_script(tmp_path, config, name=job))
    for (started, out), job in zip(jobs, ("job-1", "job-2"), strict=True):
        finish(started, out, tmp_path / f"{job}.log")
    found = records(log)
    assert {r["crawl"] for r in found} == {"job-1", "job-2"}
    assert {r["origin"] for r in found if r["crawl"] == "job-1" and "origin" in r} == {slow}
    assert {r["origin"] for r in found if r["crawl"] == "job-2" and "origin" in r} == {fast}
    # the report of the shared log: one job's page, saying there are two
    page = tmp_path / "report.html"
    done = cli("report", str(log), "-o", str(page), "--crawl", "job-2")
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert names(html, fast) and not names(html, slow)
    done = cli("report", str(log), "-o", str(page))
    assert done.returncode == 0 and "holds 2 crawls" in done.stderr, done.stderr
    # explain: the URL of job-1 is told from job-1's records only
    done = cli("explain", str(log), f"{slow}/a")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "job-2" not in done.stdout


def test_explain_tells_the_last_crawl_that_recorded_the_url_and_names_the_others(
    tmp_path: Path,
) -> None:
    url = "http://h.example/a"
    base = {"type": "decision", "origin": "http://h.example:80", "url": url}
    base |= {"product_token": "bot", "policy_status": "ok", "policy_fetched_at": 1.0}
    lines = [
        {**base, "crawl": "a", "at": 1.0, "rep_decision": "allow", "action": "download"},
        {**base, "crawl": "b", "at": 2.0, "rep_decision": "disallow", "action": "drop"},
        {**base, "crawl": "a", "at": 3.0, "rep_decision": "allow", "action": "download"},
    ]
    log = tmp_path / "audit.jsonl"
    log.write_text("".join(json.dumps({"reason": "r", **line}) + "\n" for line in lines))
    done = cli("explain", str(log), url)
    assert done.returncode == 0, done.stdout + done.stderr  # crawl a downloaded it last
    assert "crawl     a (also recorded by b: --crawl)" in done.stdout
    assert "disallow" not in done.stdout
    done = cli("explain", str(log), url, "--crawl", "b")
    assert done.returncode == 1 and "DISALLOW -> drop" in done.stdout, done.stdout
