"""``scrapy-rep describe``: what a crawl's operator can publish for site owners.

Run inside a Scrapy project (``scrapy.cfg``, or ``SCRAPY_SETTINGS_MODULE``),
it reads the project's settings as ``scrapy`` does (``--spider NAME`` adds
that spider's ``custom_settings``) and prints, as Markdown (default) or JSON
(``--json``): the product token and User-Agent, the declared uses and their
policy tokens, what scrapy-rep honours (the robots.txt status table with the
project's overrides, Crawl-delay, the use signals, the page directives), how
to block the crawler, and how to reach its operator (``--contact``, else the
``+https://...`` URL in the User-Agent).

Every line comes from the settings and scrapy-rep's own tables
(:data:`~scrapy_rep.core.policy.DEFAULT_ACTIONS`, the uses and directives
vocabularies): nothing is written per row by hand, so the page says what
the installed version does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from scrapy_rep import __version__
from scrapy_rep.cli.subcommand import subcommand
from scrapy_rep.core.directives import DIRECTIVES, USE_DIRECTIVES
from scrapy_rep.core.policy import Action
from scrapy_rep.core.tdmrep import USE as TDM_USE
from scrapy_rep.core.use_signals import NOAI_USES, SIGNAL_KEYS
from scrapy_rep.core.uses import AIPREF_LABELS, USES
from scrapy_rep.reference.status import RFC_BEHAVIOUR
from scrapy_rep.runtime.settings import RepSettings, SettingError, is_enabled

EXIT_OK, EXIT_ERROR = 0, 2

#: what each status-table action means for a site owner (one sentence per action, not per row)
ACTION_MEANS: dict[Action, str] = {
    Action.RULES: "its rules are obeyed",
    Action.ALLOW: "taken as no robots.txt: the site may be crawled",
    Action.DISALLOW: "nothing on the site is crawled",
    Action.PAUSE: "nothing on the site is crawled; robots.txt is fetched again with back-off",
}
#: an ``(+https://...)`` information URL in a User-Agent
_INFO_URL = re.compile(r"\+(https?://[^\s;)]+)")


def add_parser(subparsers: Any) -> None:
    """Register ``describe`` on the ``scrapy-rep`` command's subparsers."""
    describe = subcommand(
        subparsers,
        "describe",
        "print what this project's crawler obeys and how to block it (Markdown or JSON)",
        __doc__,
    )
    describe.add_argument("--json", action="store_true", help="print JSON, not Markdown")
    describe.add_argument("--spider", metavar="NAME", help="take this spider's custom_settings too")
    describe.add_argument(
        "--contact",
        metavar="TEXT",
        help="how site owners reach the operator (a URL or an e-mail address); "
        "default: the +https://... URL in USER_AGENT",
    )
    describe.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = project_settings(args.spider)
        found = describe(settings.get, contact=args.contact)
    except (SettingError, _NoProject) as exc:
        print(f"scrapy-rep: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
    else:
        print(markdown(found), end="")
    return EXIT_OK


class _NoProject(Exception):
    """Not in a Scrapy project, or no such spider."""


def project_settings(spider: str | None = None) -> Any:
    """The project's settings as ``scrapy`` reads them; a spider's ``custom_settings`` too."""
    from scrapy.spiderloader import get_spider_loader
    from scrapy.utils.project import get_project_settings, inside_project

    if not inside_project():
        raise _NoProject("not inside a Scrapy project (no scrapy.cfg, no SCRAPY_SETTINGS_MODULE)")
    settings = get_project_settings()
    if spider:
        loader = get_spider_loader(settings)
        try:
            spidercls = loader.load(spider)
        except KeyError:
            known = ", ".join(sorted(loader.list())) or "none"
            raise _NoProject(f"no spider named {spider!r}; spiders: {known}") from None
        spidercls.update_settings(settings)
    return settings


def describe(get: Any, contact: str | None = None) -> dict[str, Any]:
    """The description, as data: from the settings (``get``) and scrapy-rep's tables.

    ``contact`` is the ``--contact`` option; without it, the information URL a
    User-Agent carries (``mybot/1.0 (+https://example.org/bot)``), if any.
    """
    config = RepSettings.from_settings(get)
    token = config.token
    user_agent = _user_agent_header(get)
    info = _INFO_URL.search(user_agent)
    declared = list(config.uses)
    policy_tokens = {use: config.use_tokens[use] for use in declared if use in config.use_tokens}
    status = [
        {
            "outcome": outcome,
            "rfc9309": RFC_BEHAVIOUR.get(outcome, ""),
            "action": action.value,
            "means": ACTION_MEANS[action],
        }
        for outcome, action in config.status_actions.items()
    ]
    return {
        "scrapy_rep": __version__,
        "enabled": is_enabled(get) and _addon_enabled(get),
        "product_token": token,
        "user_agent": user_agent,
        "contact": contact or (info.group(1) if info else None),
        "uses": {
            "declared": declared,
            "action": config.use_action if declared else None,
            "policy_tokens": policy_tokens,
            "signals": _use_signals(declared),
        },
        "robots_txt": {
            "standard": "RFC 9309",
            "status": status,
            "cache_hours": config.cache_ttl / 3600,
            "crawl_delay": {
                "honoured": config.crawl_delay_enabled,
                "max_seconds": config.crawl_delay_max if config.crawl_delay_enabled else None,
            },
            "retry_after_max_seconds": config.policy.retry_after_max,
        },
        "page_directives": {
            "honoured": config.page_directives,
            "headers": ["X-Robots-Tag", "Robots-Tag"] if config.page_directives else [],
            "meta": ["robots", token] if config.page_directives else [],
            "directives": list(DIRECTIVES) if config.page_directives else [],
            "noindex_items": config.page_noindex_action if config.page_directives else None,
            "rel_nofollow": config.rel_nofollow,
        },
        "excluded_sites": len(config.exclude) if config.exclude is not None else 0,
        "licence_walls": {
            "statuses": ["402", "401 WWW-Authenticate: License"],
            "walled_after": config.block_after,
        },
        "block": _block(token, policy_tokens, declared),
    }


def _user_agent_header(get: Any) -> str:
    """The ``User-Agent`` header requests leave with, as Scrapy's middlewares set it.

    ``DEFAULT_REQUEST_HEADERS`` (set first, by DefaultHeadersMiddleware) wins over
    ``USER_AGENT``; ``ROBOTSTXT_USER_AGENT`` is only the token matched in robots.txt.
    """
    headers = get("DEFAULT_REQUEST_HEADERS") or {}
    for name in headers:
        if str(name).lower() == "user-agent":
            return str(headers[name])
    return str(get("USER_AGENT") or "")


def _addon_enabled(get: Any) -> bool:
    """The add-on is listed in ``ADDONS`` and not switched off there (a ``None`` priority)."""
    from scrapy_rep.addon import Addon
    from scrapy_rep.cli.recheck_crawl import is_component

    addons = get("ADDONS") or {}
    listed = addons.items() if hasattr(addons, "items") else ((name, 0) for name in addons)
    return any(on is not None and is_component(name, Addon) for name, on in listed)


def _use_signals(declared: list[str]) -> list[dict[str, str]]:
    """Where the site's use preferences are read, for the declared uses (each from the code)."""
    found: list[dict[str, str]] = []
    if not declared:
        return found
    labels = [label for label in AIPREF_LABELS if label in declared]
    keys = [SIGNAL_KEYS[use] for use in declared if use in SIGNAL_KEYS]
    if labels:
        found.append({"where": "robots.txt", "signal": "Content-Usage", "says": ", ".join(labels)})
        found.append({"where": "header", "signal": "Content-Usage", "says": ", ".join(labels)})
    if keys:
        found.append({"where": "robots.txt", "signal": "Content-Signal", "says": ", ".join(keys)})
        found.append({"where": "header", "signal": "Content-Signal", "says": ", ".join(keys)})
    if TDM_USE in declared:
        for where, signal in (
            ("/.well-known/tdmrep.json", "TDMRep"),
            ("header", "tdm-reservation"),
            ('<meta name="tdm-reservation">', "TDMRep"),
        ):
            found.append({"where": where, "signal": signal, "says": TDM_USE})
    noai = [use for use in NOAI_USES if use in declared]
    if noai:
        for directive in sorted(USE_DIRECTIVES):
            found.append(
                {
                    "where": "X-Robots-Tag, Robots-Tag, robots meta tags",
                    "signal": directive,
                    "says": ", ".join(noai) + (" (images)" if directive == "noimageai" else ""),
                }
            )
    return found


def _block(token: str, policy_tokens: dict[str, str], declared: list[str]) -> dict[str, Any]:
    """robots.txt lines that stop the crawler, whole or for one use."""
    whole = f"User-agent: {token}\nDisallow: /\n"
    per_use = {use: f"User-agent: {name}\nDisallow: /\n" for use, name in policy_tokens.items()}
    preference = {
        use: f"User-agent: {token}\nContent-Usage: {use}=n\n"
        for use in declared
        if use in AIPREF_LABELS
    }
    return {"robots_txt": whole, "per_use": per_use, "preference": preference}


def markdown(found: dict[str, Any]) -> str:
    """The description as a Markdown page."""
    token = found["product_token"]
    out = [f"# The `{token}` crawler", ""]
    if not found["enabled"]:
        out += ["> scrapy-rep is not enabled in this project: nothing below is enforced.", ""]
    out += [
        f"- Product token (matched against robots.txt `User-agent` lines): `{token}`",
        f"- User-Agent header: `{found['user_agent']}`",
        f"- Contact: {found['contact'] or 'not given (--contact, or a +URL in USER_AGENT)'}",
        f"- Enforced by scrapy-rep {found['scrapy_rep']}",
        "",
        "## What it collects for",
        "",
    ]
    uses = found["uses"]
    if uses["declared"]:
        action = "not collected" if uses["action"] == "drop" else "recorded"
        out.append(f"Declared uses: {', '.join(f'`{u}`' for u in uses['declared'])}.")
        out.append(f"What a site refuses for a declared use is {action}.")
        for use, name in uses["policy_tokens"].items():
            out.append(f"- `{use}`: robots.txt group `User-agent: {name}` gives the rule")
        out.append("")
        out += ["| where | signal | for |", "|---|---|---|"]
        out += [f"| {s['where']} | `{s['signal']}` | {s['says']} |" for s in uses["signals"]]
    else:
        out.append(f"No use is declared (any of {', '.join(f'`{u}`' for u in USES)}).")
    robots = found["robots_txt"]
    out += [
        "",
        "## robots.txt",
        "",
        f"Obeyed per {robots['standard']}, re-read at least every "
        f"{robots['cache_hours']:g} h. When fetching robots.txt gives:",
        "",
        "| outcome | RFC 9309 | this crawler |",
        "|---|---|---|",
    ]
    out += [f"| `{r['outcome']}` | {r['rfc9309']} | {r['means']} |" for r in robots["status"]]
    delay = robots["crawl_delay"]
    out.append("")
    if delay["honoured"]:
        out.append(f"`Crawl-delay` is honoured, up to {delay['max_seconds']:g} s between requests.")
    else:
        out.append("`Crawl-delay` is not honoured.")
    out.append(
        f"A `429`'s `Retry-After` is honoured up to {robots['retry_after_max_seconds']:g} s."
    )
    page = found["page_directives"]
    out += ["", "## Page directives", ""]
    if page["honoured"]:
        headers = ", ".join(f"`{h}`" for h in page["headers"])
        metas = ", ".join(f'`<meta name="{m}">`' for m in page["meta"])
        out.append(f"Read from {headers} and {metas}: {', '.join(page['directives'])}.")
        kept = "kept" if page["noindex_items"] == "keep" else "not collected"
        out.append(
            f"What a `noindex` page yields is {kept}; a `nofollow` page's links are not followed."
        )
        if page["rel_nofollow"]:
            out.append('Links marked `rel="nofollow"` are not followed.')
    else:
        out.append("Page directives are not read.")
    walls = found["licence_walls"]
    after = walls["walled_after"]
    out += [
        "",
        "## Licence and payment walls",
        "",
        f"A page answering {' or '.join(f'`{s}`' for s in walls['statuses'])} is not retried, "
        "nor retried around (no other identity or route), and nothing of it is collected"
        + (
            f"; after {after} refusals in a row (such answers, 401, 403) a site is not "
            "crawled for a while."
            if after
            else "."
        ),
    ]
    if found["excluded_sites"]:
        out += ["", f"{found['excluded_sites']} sites are excluded and never requested."]
    block = found["block"]
    out += ["", "## How to block it", "", "```text", block["robots_txt"].rstrip("\n"), "```"]
    for use, lines in block["per_use"].items():
        out += ["", f"Only for `{use}`:", "", "```text", lines.rstrip("\n"), "```"]
    for use, lines in block["preference"].items():
        out += ["", f"Or refuse `{use}` as a use preference:", "", "```text"]
        out += [lines.rstrip("\n"), "```"]
    return "\n".join(out) + "\n"
