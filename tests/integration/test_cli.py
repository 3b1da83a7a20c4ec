"""The command-line tools, run as a user runs them: real subprocesses, real files.

``scrapy-rep check|lint`` (exit 0/1/2, one-line errors, control bytes escaped),
``scrapy robots --spider`` in a project made by ``scrapy startproject``, and
``scrapy-rep store`` reading the project's Redis settings.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import redis

from scrapy_rep.runtime.store.redis import encode
from tests.support import processes
from tests.support.fakesite import FakeSite, Reply
from tests.support.policies import full_policy
from tests.support.redis_fixture import free_port

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = (
    b"User-agent: *\nDisallow: /private\nAllow: /private/open\n\nUser-agent: shopbot\nDisallow: /\n"
)
TIMEOUT = 60


def env(**extra: str) -> dict[str, str]:
    """This checkout's scrapy_rep first, whatever is installed; no inherited Redis URL."""
    found = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "SCRAPY_SETTINGS_MODULE")
    }
    found["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return {**found, **extra}


def run(
    *args: str, cwd: Path | None = None, stdin: str | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    return processes.python(*args, cwd=cwd, env=env(**extra_env), input=stdin, timeout=TIMEOUT)


def rep(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run("-m", "scrapy_rep.cli", *args, **kwargs)  # type: ignore[arg-type]


def one_line_error(
    done: subprocess.CompletedProcess[str], prefix: str = "scrapy-rep: error: "
) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


@pytest.fixture
def robots(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_bytes(ROBOTS)
    return path


def test_version_is_the_package_version() -> None:
    import scrapy_rep

    done = rep("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"scrapy-rep {scrapy_rep.__version__}"


# -- check --------------------------------------------------------------------------------------


def test_check_all_allowed_exits_0(robots: Path) -> None:
    done = rep(
        "check", str(robots), "--agent", "mybot", "/public", "https://h.example/private/open/1"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ALLOW    /public  ")
    assert lines[1].startswith(
        "ALLOW    https://h.example/private/open/1  allowed by Allow: /private/open (line 3)"
    )


def test_check_any_disallowed_exits_1(robots: Path) -> None:
    done = rep("check", str(robots), "--agent", "mybot", "/public", "/private/x")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[1].startswith(
        "DISALLOW /private/x  disallowed by Disallow: /private (line 2)"
    )
    shop = rep("check", str(robots), "--agent", "shopbot", "/public")
    assert shop.returncode == 1 and "user-agent: shopbot (line 5)" in shop.stdout


def test_check_reads_standard_input() -> None:
    done = rep("check", "-", "--agent", "mybot", "/private/x", stdin=ROBOTS.decode())
    assert done.returncode == 1 and done.stdout.startswith("DISALLOW /private/x")


def test_check_errors_are_one_line(robots: Path, tmp_path: Path) -> None:
    missing = one_line_error(rep("check", str(tmp_path / "nope.txt"), "--agent", "mybot", "/"))
    assert (
        missing
        == f"scrapy-rep: error: cannot read {tmp_path / 'nope.txt'}: No such file or directory"
    )
    bad_token = one_line_error(rep("check", str(robots), "--agent", "My Bot/1.0", "/"))
    assert "invalid product token 'My Bot/1.0'" in bad_token
    directory = one_line_error(rep("check", str(tmp_path), "--agent", "mybot", "/"))
    assert directory.startswith(f"scrapy-rep: error: cannot read {tmp_path}: ")


def test_usage_errors_exit_2(robots: Path) -> None:
    done = rep("check", str(robots), "/x")  # no --agent
    assert done.returncode == 2 and "the following arguments are required: --agent" in done.stderr
    assert rep("nosuch").returncode == 2


# -- a robots.txt URL ---------------------------------------------------------------------------


def test_check_and_lint_read_a_robots_txt_url(site: FakeSite) -> None:
    origin = site.add("owner").robots(Reply(body=ROBOTS + b"Disalow: /typo\n"))
    url = origin.url_for("/robots.txt")
    done = rep("check", url, "--agent", "mybot", "/private/x", "/public")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].startswith("DISALLOW /private/x  disallowed by Disallow:")
    assert origin.hits("/robots.txt") == 1 and origin.hits() == 1  # that URL, nothing else
    (hit,) = origin.requests("/robots.txt")
    user_agent = next(v for k, v in hit.headers.items() if k.lower() == "user-agent")
    assert user_agent.startswith("scrapy-rep/")
    done = rep("lint", url)
    assert done.returncode == 1 and "Disalow" in done.stdout, (done.stdout, done.stderr)


def test_a_robots_txt_url_answering_404_allows_everything_and_5xx_is_an_error(
    site: FakeSite,
) -> None:
    missing = site.add("missing")  # 404 for robots.txt
    done = rep("check", missing.url_for("/robots.txt"), "--agent", "mybot", "/x")
    assert done.returncode == 0, done.stderr
    assert "HTTP 404: no robots.txt, everything allowed" in done.stderr
    broken = site.add("broken").robots(Reply(status=503))
    line = one_line_error(rep("check", broken.url_for("/robots.txt"), "--agent", "mybot", "/x"))
    assert "HTTP 503" in line


# -- lint ---------------------------------------------------------------------------------------


def test_lint_prints_diagnostics_exits_1(tmp_path: Path) -> None:
    """A CI gate fails on a file with problems; ``--exit-zero`` only reports them."""
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisalow: /a\nnonsense\nAllow: /b\n")
    assert rep("lint", str(path), "--exit-zero").returncode == 0
    done = rep("lint", str(path))
    assert done.returncode == 1, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("line 2: ") and "Disalow" in first
    assert second.startswith("line 3: ") and "nonsense" in second
    assert done.stderr.startswith(
        "2 diagnostics; 1 groups, 2 rules, 0 use-preference lines, 0 licences, 0 sitemaps, "
    )


def test_lint_of_a_clean_file_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisallow: /a\n")
    done = rep("lint", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr.startswith("0 diagnostics; 1 groups, 1 rules")


def test_lint_errors_are_one_line(tmp_path: Path) -> None:
    line = one_line_error(rep("lint", str(tmp_path / "nope.txt")))
    assert line.endswith("No such file or directory")


def test_lint_escapes_control_bytes(tmp_path: Path) -> None:
    """ESC, BEL or a bidi override from a robots.txt must not reach the terminal raw."""
    path = tmp_path / "robots.txt"
    path.write_bytes(
        b"User-agent: *\n"
        b"\x1b]0;pwned\x07\x1b[31mred\n"  # OSC (retitle), BEL, SGR (recolour)
        b"x\xe2\x80\xaey: /\n"  # U+202E RIGHT-TO-LEFT OVERRIDE
    )
    done = rep("lint", str(path))
    assert done.returncode == 1, done.stderr
    assert all(ch.isprintable() for line in done.stdout.splitlines() for ch in line), done.stdout
    first, second = done.stdout.splitlines()
    assert first.startswith("line 2: ") and first.endswith("\\x1b]0;pwned\\x07\\x1b[31mred")
    assert second.startswith("line 3: ") and second.endswith("x\\u202ey: /")


def test_check_escapes_control_bytes_in_rules(tmp_path: Path) -> None:
    """The URL and the deciding rule are echoed: an OSC sequence in them must print escaped."""
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisallow: /a\x1b]0;pwned\x07\n")
    done = rep("check", str(path), "--agent", "mybot", "/a\x1b]0;pwned\x07x")
    assert done.returncode == 1, done.stderr
    assert all(ch.isprintable() for line in done.stdout.splitlines() for ch in line), done.stdout
    assert done.stdout.startswith("DISALLOW /a\\x1b]0;pwned\\x07x  disallowed by Disallow: /a")


def test_explain_escapes_control_bytes(tmp_path: Path) -> None:
    """The audit log quotes rules and URLs from the site: printed escaped, as lint prints them."""
    url = "http://127.0.0.1:8000/a\x1b[31m"
    record = {
        "type": "decision",
        "at": 1.0,
        "url": url,
        "origin": "http://127.0.0.1:8000",
        "product_token": "mybot",
        "rep_decision": "disallow",
        "action": "drop",
        "reason": "disallow-rule",
        "policy_status": "ok",
        "policy_fetched_at": 1.0,
        "matched_rule": "disallow: /a\x1b[31m",
        "matched_line": 2,
    }
    log = tmp_path / "rep.jsonl"
    log.write_text(json.dumps(record) + "\n")
    done = rep("explain", str(log), url)
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stdout
    assert "  rule      disallow: /a\\x1b[31m (line 2)\n" in done.stdout
    assert done.stdout.startswith("http://127.0.0.1:8000/a\\x1b[31m\n")


# -- scrapy robots --spider, in a project from `scrapy startproject` ----------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project as `scrapy startproject` makes it, with the add-on line and one spider."""
    made = run("-m", "scrapy", "startproject", "shop", str(tmp_path / "shop"))
    assert made.returncode == 0, made.stderr
    root = tmp_path / "shop"
    settings = root / "shop" / "settings.py"
    text = settings.read_text()
    assert "\nADDONS = {}\n" in text  # the template's: the README says to fill this one in
    settings.write_text(text.replace("\nADDONS = {}\n", '\nADDONS = {"scrapy_rep.Addon": 100}\n'))
    (root / "shop" / "spiders" / "products.py").write_text(
        "import scrapy\n\n\nclass ProductsSpider(scrapy.Spider):\n"
        '    name = "products"\n'
        '    custom_settings = {"REP_PRODUCT_TOKEN": "shopbot"}\n'
    )
    return root


def test_scrapy_robots_unknown_spider_is_one_line_exit_2(project: Path) -> None:
    done = run("-m", "scrapy", "robots", "--spider", "nosuch", "http://127.0.0.1:9/x", cwd=project)
    line = one_line_error(done, prefix="scrapy robots: error: ")
    assert line == (
        "scrapy robots: error: no spider named 'nosuch'; spiders of this project: products"
    )
    assert "KeyError" not in done.stdout + done.stderr


# -- scrapy-rep store reads the project's Redis settings ----------------------------------------


def test_store_reads_the_projects_redis_settings(project: Path, redis_server: str) -> None:
    """Inside a project, `store` uses its REP_STORE URL and prefix, as the crawl does."""
    origin = "https://example.com:443"
    redis.Redis.from_url(redis_server).hset(
        f"shopprefix:v1:policy:{origin}",
        mapping=encode(full_policy(), saved_at=0.0),  # type: ignore[arg-type]
    )
    settings = project / "shop" / "settings.py"
    original = settings.read_text()
    settings.write_text(original + f'\nREP_STORE = "{redis_server}?prefix=shopprefix"\n')
    nobody = f"redis://127.0.0.1:{free_port()}"  # $REDIS_URL, outranked by the project's
    shown = rep("store", "show", "https://example.com/", cwd=project / "shop", REDIS_URL=nobody)
    assert shown.returncode == 0, shown.stderr
    assert '"http_status": "503"' in shown.stdout
    assert shown.stderr == (
        f"scrapy-rep: Redis at {redis_server} (REP_STORE of the project at "
        f"{project / 'scrapy.cfg'}), prefix 'shopprefix'\n"
    )
    # outside the project: $REDIS_URL, and it says so when it cannot connect
    outside = rep("store", "show", "https://example.com/", cwd=project.parent, REDIS_URL=nobody)
    assert outside.returncode == 2
    assert f"scrapy-rep: error: Redis at {nobody} ($REDIS_URL): ConnectionError" in outside.stderr
    # --redis-url and --prefix still win
    flagged = rep(
        "store", "show", origin, "--redis-url", redis_server, "--prefix", "other", cwd=project
    )
    assert flagged.returncode == 1 and flagged.stderr == ""
    # the project's REDIS_URL with REP_STORE = "redis" (the prefix from --prefix)
    settings.write_text(original + f'\nREDIS_URL = "{redis_server}"\nREP_STORE = "redis"\n')
    plain = rep(
        "store",
        "show",
        "https://example.com/",
        "--prefix",
        "shopprefix",
        cwd=project / "shop",
        REDIS_URL=nobody,
    )
    assert plain.returncode == 0, plain.stderr
    assert '"http_status": "503"' in plain.stdout
    assert plain.stderr.endswith(
        f"scrapy-rep: Redis at {redis_server} (REDIS_URL of the project at "
        f"{project / 'scrapy.cfg'}), prefix 'shopprefix'\n"
    )
    # a removed name in the project's settings: one line naming its replacement
    settings.write_text(original + 'REP_REDIS_PREFIX = "shopprefix"\n')
    old = rep("store", "show", "https://example.com/", cwd=project / "shop", REDIS_URL=nobody)
    assert old.returncode == 2 and "Traceback" not in old.stderr
    assert "SettingError: REP_REDIS_PREFIX was removed: use REP_STORE = " in old.stderr
