"""The audit log as one HTML page for a person: what was fetched, from whom, and why.

One self-contained file: the CSS and the script are inline, nothing is loaded
from anywhere (a Content-Security-Policy says so to the browser, and allows
only this file's own script, by its hash). Everything quoted from the log is
HTML-escaped: URLs, rules and reasons come from sites, some of them hostile.
The tables sort by a click on a column's heading and filter as one types in
the box above them, without a server.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from scrapy_rep.report.story import EXAMPLES, PAUSE_EXAMPLES, AuditStory, dropped_by, story_of
from scrapy_rep.runtime.audit import Skipped, read_records

#: rows shown at most per table; the rest are counted in a note under it
MAX_ROWS = 5_000
#: origins drawn at most on the timeline (the busiest)
MAX_TIMELINE = 200

STATUS_COLOURS = {
    "ok": "#2e9d4c",
    "unavailable": "#8a94a0",
    "unreachable": "#7a1f1f",
    "paused": "#e08a00",
    "unresolved": "#c62828",
}


@dataclass
class Read:
    records: list[dict[str, Any]]
    #: lines that are no JSON object (a torn last line, another program's output)
    bad_lines: int


def read_audit_log(path: str, start: int = 0, crawl: str | None = None) -> Read:
    """The records of ``path`` from byte ``start`` on, in a list; unreadable lines counted.

    ``crawl``: only that crawl's records (a log shared by crawls at once interleaves them).
    """
    skipped = Skipped()
    records = list(read_records(path, start, crawl, skipped))
    return Read(records, skipped.total)


def write_report(
    log: str,
    out: str,
    *,
    start: int = 0,
    crawl: str | None = None,
    skipped: Skipped | None = None,
) -> AuditStory:
    """Read ``log`` (from byte ``start``; ``crawl``'s records only, if given) as a stream,
    write the page to ``out`` whole; return the story. ``skipped`` hears what was left out."""
    skipped = skipped if skipped is not None else Skipped()
    story = story_of(read_records(log, start, crawl, skipped))
    page = render(story, source=log, bad_lines=skipped.total)
    folder = os.path.dirname(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    partial = f"{out}.{os.getpid()}.part"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(partial, out)  # a reader never sees half a page
    return story


# -- rendering ----------------------------------------------------------------------


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def when(at: Any) -> str:
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + "Z"
    except (OverflowError, OSError, ValueError):
        return ""


class Cell:
    """A table cell: its text, and the value it sorts by when that is not the text."""

    def __init__(self, text: Any, sort: float | None = None, cls: str = "") -> None:
        self.text, self.sort, self.cls = text, sort, cls

    def html(self) -> str:
        sort = f' data-sort="{self.sort!r}"' if self.sort is not None else ""
        cls = f' class="{_e(self.cls)}"' if self.cls else ""
        return f"<td{sort}{cls}>{_e(self.text)}</td>"


def _time_cell(at: Any) -> Cell:
    number = at if isinstance(at, (int, float)) and not isinstance(at, bool) else None
    return Cell(when(at), sort=float(number) if number is not None else -1.0)


def _num(n: int) -> Cell:
    return Cell(n, sort=float(n))


def table(
    key: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    note: str = "",
    left_out: str = "",
) -> str:
    """``rows`` as a table that sorts and filters; ``left_out``: what the story did not keep
    of them, said under the table."""
    body = []
    total = 0
    for row in rows:
        total += 1
        if total <= MAX_ROWS:
            body.append("<tr>" + "".join(cell.html() for cell in row) + "</tr>")
    head = "".join(f'<th scope="col" title="sort">{_e(h)}</th>' for h in headers)
    more = (
        f'<p class="note">{MAX_ROWS:,} of {total:,} rows shown; the audit log has them all.</p>'
        if total > MAX_ROWS
        else ""
    )
    if left_out:
        more += f'<p class="note">{_e(left_out)}</p>'
    if not total:
        return f'<p class="empty" id="{key}-none">None.{_e(note)}</p>{more}'
    return (
        f'<div class="filter"><input type="search" placeholder="filter these rows" '
        f'data-table="{key}" aria-label="filter"> <span class="shown" data-for="{key}">'
        f"{min(total, MAX_ROWS):,} rows</span></div>"
        f'<table class="sortable" id="{key}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{more}"
    )


def timeline(story: AuditStory) -> str:
    """One row per origin: its policy's status from each fetch to the next, fetches as dots."""
    if story.first_at is None or story.last_at is None:
        return '<p class="empty">No records with times.</p>'
    start, end = story.first_at, max(story.last_at, story.first_at + 1)
    origins = sorted(
        (o for o in story.origins.values() if o.fetches or o.pauses),
        key=lambda o: -(o.downloaded + sum(o.dropped.values()) + o.parked),
    )[:MAX_TIMELINE]
    if not origins:
        return '<p class="empty">No robots.txt fetch in the log.</p>'
    label_w, width, row_h = 260, 1000, 22
    span = width - label_w - 20

    def x(at: float) -> float:
        return label_w + span * (min(max(at, start), end) - start) / (end - start)

    parts = []
    for i, origin in enumerate(sorted(origins, key=lambda o: o.origin)):
        y = 24 + i * row_h
        parts.append(
            f'<g class="tl-row" data-origin="{_e(origin.origin)}">'
            f'<text x="4" y="{y + 14}" class="tl-label">{_e(origin.origin[:40])}</text>'
        )
        fetches = [f for f in origin.fetches if isinstance(f.get("at"), (int, float))]
        for n, fetch in enumerate(fetches):
            begin = float(fetch["at"])
            until = float(fetches[n + 1]["at"]) if n + 1 < len(fetches) else end
            status = str(fetch.get("status") or "")
            colour = STATUS_COLOURS.get(status, "#5b6770")
            resumed = n > 0 and fetches[n - 1].get("status") in ("paused", "unresolved")
            event = (
                "paused"
                if status == "paused"
                else ("resumed" if resumed and status != "unresolved" else status)
            )
            tip = (
                f"{origin.origin}: {event} at {when(begin)}, robots.txt "
                f"{fetch.get('http_status') or fetch.get('outcome') or ''}; "
                f"digest {fetch.get('digest') or '-'}; {fetch.get('reason') or ''}"
            )
            parts.append(
                f'<rect class="tl-seg tl-{_e(status)}" x="{x(begin):.1f}" y="{y + 4}" '
                f'width="{max(x(until) - x(begin), 1.5):.1f}" height="12" fill="{colour}">'
                f"<title>{_e(tip)}</title></rect>"
                f'<circle class="tl-fetch tl-{_e(event)}" cx="{x(begin):.1f}" cy="{y + 10}" '
                f'r="4"><title>{_e(tip)}</title></circle>'
            )
        for pause in origin.pauses:  # what its pages said: a hatched band over the row
            started, ended = _number(pause.get("started")), _number(pause.get("until"))
            if started is None or ended is None:
                continue
            begin, until = started, ended
            cause = str(pause.get("cause") or "")
            hint = pause.get("retry_after")
            tip = (
                f"{origin.origin}: {cause} from {when(begin)} to {when(until)}: HTTP "
                f"{pause.get('status')} to {pause.get('url')} (Retry-After: "
                f"{'none' if hint is None else hint})"
            )
            parts.append(
                f'<rect class="tl-pause tl-{_e(cause)}" x="{x(begin):.1f}" y="{y + 1}" '
                f'width="{max(x(until) - x(begin), 1.5):.1f}" height="18" fill="none" '
                f'stroke="{PAUSE_COLOUR}" stroke-width="2" stroke-dasharray="4 2">'
                f"<title>{_e(tip)}</title></rect>"
            )
        parts.append("</g>")
    height = 40 + len(origins) * row_h
    axis = (
        f'<text x="{label_w}" y="14" class="tl-axis">{_e(when(start))}</text>'
        f'<text x="{width - 20}" y="14" class="tl-axis" text-anchor="end">{_e(when(end))}</text>'
    )
    legend = " ".join(
        f'<span class="key" style="background:{c}"></span>{_e(s)}'
        for s, c in STATUS_COLOURS.items()
    )
    more = len([o for o in story.origins.values() if o.fetches]) - len(origins)
    note = f'<p class="note">{more:,} quieter origins are not drawn.</p>' if more > 0 else ""
    return (
        f'<p class="legend">{legend}; a dot is a robots.txt fetch (hover for its status, '
        f"digest and why); a dashed frame is a pause its pages asked for (429, 503, a wall "
        f"of 403s).</p>"
        f'<svg id="timeline" role="img" aria-label="policy timeline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">{axis}{"".join(parts)}</svg>{note}'
    )


def _left_out(n: int, what: str, kept: str) -> str:
    """The note under a table of examples, when some were left out."""
    if not n:
        return ""
    return (
        f"{n:,} more {what} are counted above but not listed: the first and the last "
        f"{kept} are; the audit log has them all."
    )


def _reasons(counts: Any) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in counts.most_common())


def _by_action_and_reason(table_id: str, counts: Any) -> str:
    """A table of records counted by (action, reason), most first."""
    rows = ((Cell(action), Cell(reason), _num(n)) for (action, reason), n in counts.most_common())
    return table(table_id, ["action", "reason", "records"], rows)


#: the frame of a pause a page asked for, on the timeline
PAUSE_COLOUR = "#b5179e"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _sections(story: AuditStory) -> Iterator[tuple[str, str, str]]:
    """(id, heading, HTML) of each section."""
    yield (
        "counts",
        "Decisions, by action and reason",
        _by_action_and_reason("t-counts", story.decisions),
    )
    yield "timeline", "Each origin's robots.txt over time", timeline(story)

    def refused(o: Any) -> str:
        return "; ".join(
            f"{use} ({', '.join(sorted(src))})" for use, src in sorted(o.refused.items())
        )

    origins = (
        (
            Cell(o.origin),
            Cell(o.status, cls=f"st-{o.status}"),
            _num(len(o.fetches)),
            _num(o.downloaded),
            _num(sum(o.dropped.values())),
            Cell(_reasons(o.dropped)),
            _num(o.parked),
            _num(o.released),
            Cell(refused(o)),
        )
        for o in sorted(story.origins.values(), key=lambda o: o.origin)
    )
    yield (
        "origins",
        "Origins",
        table(
            "t-origins",
            [
                "origin",
                "status now",
                "robots.txt fetches",
                "downloaded",
                "dropped",
                "dropped by reason",
                "held",
                "released",
                "uses refused",
            ],
            origins,
        ),
    )
    history = (
        (
            Cell(o.origin),
            _time_cell(f.get("at")),
            Cell(f.get("status"), cls=f"st-{f.get('status')}"),
            Cell(f.get("http_status") if f.get("http_status") is not None else ""),
            Cell(f.get("outcome")),
            Cell(f.get("digest") or ""),
            _time_cell(f.get("expires_at")),
            Cell(f.get("final_url") if f.get("final_url") != f.get("url") else ""),
            Cell(f.get("reason")),
        )
        for o in sorted(story.origins.values(), key=lambda o: o.origin)
        for f in o.fetches
    )
    yield (
        "history",
        "Policy history: every robots.txt fetch",
        table(
            "t-history",
            [
                "origin",
                "fetched",
                "status",
                "HTTP",
                "outcome",
                "digest (version)",
                "good until",
                "redirected to",
                "why",
            ],
            history,
        ),
    )
    pauses = (
        (
            Cell(o.origin),
            Cell(p.get("cause"), cls=f"st-{p.get('cause')}"),
            Cell(p.get("status")),
            Cell(p.get("url")),
            Cell("" if p.get("retry_after") is None else p.get("retry_after")),
            _time_cell(p.get("started")),
            _time_cell(p.get("until")),
            Cell(f"{p.get('first_url')} .. {p.get('last_url')}" if p.get("first_url") else ""),
            Cell("another worker" if p.get("shared") else ""),
        )
        for o in sorted(story.origins.values(), key=lambda o: o.origin)
        for p in o.pauses
    )
    pauses_left = sum(o.pauses.left_out for o in story.origins.values())
    yield (
        "pauses",
        "Pauses its pages asked for: 429, 503, a wall of 403s",
        table(
            "t-pauses",
            [
                "origin",
                "cause",
                "HTTP",
                "page that said it",
                "Retry-After (s)",
                "from",
                "until",
                "refused (a block)",
                "seen by",
            ],
            pauses,
            left_out=_left_out(pauses_left, "pauses", f"{PAUSE_EXAMPLES} of each origin"),
        ),
    )
    tdm = (
        (
            Cell(o.origin),
            _time_cell(f.get("at")),
            Cell(f.get("http_status") if f.get("http_status") is not None else ""),
            Cell(f.get("outcome")),
            Cell(f.get("rules") if f.get("rules") is not None else "unknown"),
            Cell("; ".join(str(d) for d in f.get("diagnostics") or ())),
            Cell(f.get("reason")),
        )
        for o in sorted(story.origins.values(), key=lambda o: o.origin)
        for f in o.tdmrep
    )
    if any(o.tdmrep for o in story.origins.values()):
        yield (
            "tdmrep",
            "tdmrep.json fetches (TDMRep, with train-ai declared)",
            table(
                "t-tdmrep",
                ["origin", "fetched", "HTTP", "outcome", "entries", "not understood", "why"],
                tdm,
            ),
        )

    def dropped_row(d: dict[str, Any]) -> tuple[Cell, ...]:
        rule, line, group = dropped_by(d)
        return (
            Cell(d.get("url")),
            Cell(d.get("origin")),
            Cell(d.get("reason")),
            Cell(rule),
            Cell(line if line is not None else "", sort=float(line) if line is not None else -1.0),
            Cell(group),
            Cell(d.get("detail") or ""),
            Cell(d.get("policy_digest") or ""),
            _time_cell(d.get("at")),
        )

    yield (
        "dropped",
        "Dropped: what was not fetched, and by which rule",
        table(
            "t-dropped",
            ["URL", "origin", "reason", "rule", "line", "group", "why", "policy digest", "when"],
            (dropped_row(d) for d in story.drops),
            left_out=_left_out(story.drops.left_out, "drops", f"{EXAMPLES} of each reason"),
        ),
    )
    pages = (
        (
            Cell(p.url),
            Cell(p.origin),
            Cell(p.use),
            Cell(p.source),
            _num(p.items_dropped),
            Cell("failed" if p.media_failed else ""),
            _time_cell(p.at),
        )
        for p in story.page_refusals.values()
    )
    yield (
        "pages",
        "Refused by the page itself: what a response said about use, and what was dropped",
        table(
            "t-pages",
            ["URL", "origin", "use", "where it says so", "items dropped", "media file", "when"],
            pages,
            note=" (no response refused a declared use)",
            left_out=(
                f"{story.page_refusals_left_out:,} more refusals of pages not kept past "
                f"the first {len(story.page_refusals):,}; the audit log has them all."
                if story.page_refusals_left_out
                else ""
            ),
        ),
    )
    held = (
        (
            Cell(h.url),
            Cell(h.origin),
            Cell(h.reason),
            _time_cell(h.held_at),
            _time_cell(h.released_at),
            Cell(h.fate or "still held when the log ends", cls="fate-open" if not h.fate else ""),
            _time_cell(h.fate_at),
        )
        for h in story.holds
    )
    yield (
        "held",
        "Held requests and their fate",
        table(
            "t-held",
            ["URL", "origin", "held because", "held at", "released at", "fate", "decided at"],
            held,
            left_out=_left_out(story.holds.left_out, "held requests", f"{EXAMPLES} of each reason"),
        ),
    )
    uses = (
        (Cell(o.origin), Cell(use), Cell(source))
        for o in sorted(story.origins.values(), key=lambda o: o.origin)
        for use, sources in sorted(o.refused.items())
        for source in sorted(sources)
    )
    yield (
        "uses",
        "Uses each site refused",
        table(
            "t-uses",
            ["origin", "use", "where it says so"],
            uses,
            note=" (no decision record carries a refused use)",
        ),
    )
    walled = [o for o in sorted(story.origins.values(), key=lambda o: o.origin) if o.walls]
    if walled:
        walls = (
            (
                Cell(o.origin),
                _num(o.walls),
                Cell(str(o.last_wall.get("said") or "")),
                Cell(str(o.last_wall.get("url") or "")),
                Cell("yes" if o.walled else "no"),
                Cell(", ".join(str(u) for u in o.last_wall.get("licenses") or ())),
            )
            for o in walled
        )
        yield (
            "walls",
            "Origins behind licence and payment walls",
            table(
                "t-walls",
                ["origin", "walls", "the last asked", "its URL", "blocked", "RSL licences"],
                walls,
            ),
        )
    if story.subrequests:
        yield (
            "browser",
            "Browser sub-requests, by action and reason",
            _by_action_and_reason("t-browser", story.subrequests),
        )


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d9dee3}
.summary{color:#3a444e}.summary b{color:#1d232a}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border:1px solid #d9dee3;padding:3px 6px;text-align:left;
  vertical-align:top;word-break:break-all}
th{background:#f0f3f6;cursor:pointer;user-select:none;white-space:nowrap}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
tbody tr:nth-child(even){background:#fafbfc}
td.st-ok{color:#1f7a3a}td.st-paused{color:#a86400}
td.st-unresolved,td.st-unreachable{color:#b3261e}
td.fate-open{color:#b3261e}
.filter{margin:4px 0}.filter input{width:320px;padding:3px 6px}
.shown,.note,.empty,.legend{color:#5b6770}
.key{display:inline-block;width:12px;height:12px;margin:0 3px 0 10px;vertical-align:middle}
svg text{font:11px system-ui,sans-serif;fill:#1d232a}
circle.tl-fetch{fill:#fff;stroke:#1d232a;stroke-width:1.5}
circle.tl-paused{stroke:#a86400}circle.tl-resumed{fill:#2e9d4c}
nav a{margin-right:12px}
"""

SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = !th.classList.contains('asc');
      t.querySelectorAll('th').forEach(function (h) { h.classList.remove('asc', 'desc'); });
      th.classList.add(asc ? 'asc' : 'desc');
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(r) {
        var c = r.cells[col], s = c.getAttribute('data-sort');
        return s === null ? c.textContent.toLowerCase() : parseFloat(s);
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
document.querySelectorAll('input[data-table]').forEach(function (input) {
  var t = document.getElementById(input.getAttribute('data-table'));
  var shown = document.querySelector('.shown[data-for="' + t.id + '"]');
  input.addEventListener('input', function () {
    var q = input.value.toLowerCase(), n = 0;
    Array.prototype.forEach.call(t.tBodies[0].rows, function (r) {
      var hit = r.textContent.toLowerCase().indexOf(q) !== -1;
      r.hidden = !hit; if (hit) { n += 1; }
    });
    shown.textContent = n + ' of ' + t.tBodies[0].rows.length + ' rows';
  });
});
"""


def render(story: AuditStory, *, source: str = "", bad_lines: int = 0) -> str:
    """The page, as text: self-contained, every quoted value escaped."""
    sections = list(_sections(story))
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    dropped = sum(n for (action, _), n in story.decisions.items() if action == "drop")
    still = story.still_held
    summary = (
        f"From <b>{_e(when(story.first_at))}</b> to <b>{_e(when(story.last_at))}</b> (UTC), "
        f"as <b>{_e(', '.join(sorted(story.tokens)) or '?')}</b>: "
        f"<b>{len(story.origins):,}</b> origins, <b>{story.fetch_count:,}</b> robots.txt fetches, "
        f"<b>{story.downloaded:,}</b> requests downloaded, <b>{dropped:,}</b> dropped, "
        f"<b>{story.holds.total:,}</b> held ({still:,} still held when the log ends"
        + (f", {story.handed_over:,} requeued or kept at close" if story.handed_over else "")
        + ")."
    )
    items = sum(story.items_dropped.values())
    media = sum(story.media_failed.values())
    if items or media or story.page_refusals:
        summary += (
            f" For what pages said: <b>{items:,}</b> items dropped"
            + (f" ({_e(_reasons(story.items_dropped))})" if items else "")
            + f", <b>{media:,}</b> media files failed"
            + (f" ({_e(_reasons(story.media_failed))})" if media else "")
            + f"; <b>{len(story.page_refusals) + story.page_refusals_left_out:,}</b> page "
            "refusals of a use."
        )
    notes = []
    if bad_lines:
        notes.append(f"{bad_lines:,} lines of the log could not be read and are left out.")
    if story.unknown:
        notes.append(
            f"{story.unknown:,} records of a type this version does not know are left out."
        )
    nav = "".join(f'<a href="#s-{key}">{_e(title)}</a>' for key, title, _ in sections)
    body = "".join(
        f'<section id="s-{key}"><h2>{_e(title)}</h2>{part}</section>'
        for key, title, part in sections
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>scrapy-rep crawl report: {_e(os.path.basename(source))}</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>What the crawler fetched, from whom, and why</h1>"
        f'<p class="summary">{summary}</p>'
        + "".join(f'<p class="note">{_e(n)}</p>' for n in notes)
        + f"<nav>{nav}</nav>{body}"
        f'<p class="note">From the audit log {_e(source)}: {story.records:,} records. '
        "Made by scrapy-rep report.</p>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
