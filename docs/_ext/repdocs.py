"""The reference tables and the gate's diagram, generated from the code's own tables.

``{rep-table} NAME`` in a page renders one table from its single source, so no
copy in the docs can drift from the code:

``settings``    ``scrapy_rep.runtime.settings.SETTINGS`` (each row a ``setting``
                target, for ``{setting}`NAME``` links)
``deprecated``  ``scrapy_rep.runtime.settings.DEPRECATED``: the settings still
                read for one release, and what replaces each
``status``      ``scrapy_rep.core.policy.DEFAULT_ACTIONS`` and ``RFC_BEHAVIOUR``
``meta``        the ``#:`` comments of ``scrapy_rep.adapter.meta``
``stats``       ``scrapy_rep.adapter.stats.STATS``
``signals``     the ``#:`` comments of ``scrapy_rep.signals``
``decision``    the ``#:`` comments of ``scrapy_rep.core.decision.Decision``
``reasons``     ``scrapy_rep.core.decision.REASONS``
``reasons``      ``scrapy_rep.core.decision.REASONS``
``audit``       ``scrapy_rep.runtime.audit.RECORDS``
==============  ===============================================================
=======
===============  ===============================================================
``settings``     ``scrapy_rep.runtime.settings.SETTINGS`` (each row a ``setting``
                 target, for ``{setting}`NAME``` links)
``deprecated``   ``scrapy_rep.runtime.settings.DEPRECATED``: the settings still
                 read for one release, and what replaces each
``status``       ``scrapy_rep.core.policy.DEFAULT_ACTIONS`` and ``RFC_BEHAVIOUR``
``page-status``  ``scrapy_rep.core.pushback.DEFAULT_PAGE_ACTIONS`` and ``PAGE_BEHAVIOUR``
``meta``         the ``#:`` comments of ``scrapy_rep.adapter.meta``
``stats``        ``scrapy_rep.adapter.stats.STATS``
``signals``      the ``#:`` comments of ``scrapy_rep.signals``
``decision``     the ``#:`` comments of ``scrapy_rep.core.decision.Decision``
``reasons``      ``scrapy_rep.core.decision.REASONS``
``audit``        ``scrapy_rep.runtime.audit.RECORDS``
===============  ===============================================================

``{rep-gate-diagram}`` draws ``scrapy_rep.core.gate.TRANSITIONS`` with Graphviz's
``dot``, as h11 draws its state machine from its own table.

It also keeps ``make docs`` working with no network: every intersphinx
inventory gets an empty local fallback, so an unreachable inventory is an
INFO line (and unresolved links into it plain text), never a warning.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from docutils import nodes
from gate_diagram import gate_dot
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_id

Row = Sequence[str | nodes.Node]


def inline(text: str) -> list[nodes.Node]:
    """Text with `code` (or ``code``) spans as literals: the code's own markup."""
    parts = text.replace("``", "`").split("`")
    return [nodes.literal(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def code(text: str) -> str:
    return f"`{text}`"


def _cell(content: str | nodes.Node) -> nodes.entry:
    paragraph = nodes.paragraph()
    if isinstance(content, str):
        paragraph += inline(content)
    else:
        paragraph += content
    return nodes.entry("", paragraph)


def table(name: str, headers: Sequence[str], rows: Iterable[Row]) -> nodes.table:
    node = nodes.table(classes=["rep-table", f"rep-table-{name}"])
    group = nodes.tgroup(cols=len(headers))
    node += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    head += nodes.row("", *(_cell(h) for h in headers))
    body = nodes.tbody()
    for row in rows:
        body += nodes.row("", *(_cell(c) for c in row))
    group += head
    group += body
    return node


def comments(module: str, owner: str = "") -> list[tuple[str, str]]:
    """(attribute, its ``#:`` comment) in source order, for ``owner`` ('' the module)."""
    docs = ModuleAnalyzer.for_module(module).find_attr_docs()
    return [(attr, " ".join(lines).strip()) for (cls, attr), lines in docs.items() if cls == owner]


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return code(repr(value))


class RepTable(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        build = TABLES.get(name)
        if build is None:
            raise self.error(f"rep-table: no table {name!r}; known: {', '.join(TABLES)}")
        return [build(self)]

    def target(self, kind: str, name: str) -> nodes.Node:
        """``name`` as the target of ``{kind}`` links (sphinx-scrapy's ``setting``,
        ``reqmeta``, ``signal`` and ``stat`` types, as in Scrapy's own docs)."""
        node_id = make_id(self.env, self.state.document, f"std-{kind}", name)
        target = nodes.inline("", "", nodes.literal(name, name), ids=[node_id])
        std: Any = self.env.get_domain("std")
        std.note_object(kind, name, node_id, location=target)
        return target


def _settings(d: RepTable) -> nodes.Node:
    from scrapy_rep.runtime.settings import SETTINGS

    rows = [(d.target("setting", s.name), _value(s.default), s.meaning) for s in SETTINGS]
    return table("settings", ["setting", "default", "meaning"], rows)


def _deprecated(d: RepTable) -> nodes.Node:
    from scrapy_rep.runtime.settings import DEPRECATED

    rows = [(code(e.name), _value(e.default), e.instead) for e in DEPRECATED.values()]
    return table("deprecated", ["setting", "default before", "now"], rows)


def _status(d: RepTable) -> nodes.Node:
    from scrapy_rep.core.policy import DEFAULT_ACTIONS, RFC_BEHAVIOUR

    rows = [(code(o), RFC_BEHAVIOUR[o], code(a.value)) for o, a in DEFAULT_ACTIONS.items()]
    return table("status", ["outcome", "RFC 9309", "scrapy-rep default"], rows)


def _page_status(d: RepTable) -> nodes.Node:
    from scrapy_rep.core.pushback import DEFAULT_PAGE_ACTIONS, PAGE_BEHAVIOUR

    rows = [(code(s), PAGE_BEHAVIOUR[s], code(a)) for s, a in DEFAULT_PAGE_ACTIONS.items()]
    return table("page-status", ["page status", "what happens", "scrapy-rep default"], rows)


def _meta(d: RepTable) -> nodes.Node:
    module = importlib.import_module("scrapy_rep.adapter.meta")
    rows: list[Row] = []
    for attr, text in comments(module.__name__):
        who, _, meaning = text.partition(": ")
        rows.append(
            (
                d.target("reqmeta", getattr(module, attr)),
                who.removeprefix("Set by ").lower(),
                meaning,
            )
        )
    return table("meta", ["key", "set by", "meaning"], rows)


def _stats(d: RepTable) -> nodes.Node:
    from scrapy_rep.adapter.stats import STATS

    rows = [(d.target("stat", k), v) for k, v in STATS.items()]
    return table("stats", ["key", "counts"], rows)


def _signals(d: RepTable) -> nodes.Node:
    rows = [(d.target("signal", a), text) for a, text in comments("scrapy_rep.signals")]
    return table("signals", ["signal", "sent when"], rows)


def _decision(d: RepTable) -> nodes.Node:
    rows = [(code(a), text) for a, text in comments("scrapy_rep.core.decision", "Decision")]
    return table("decision", ["field", "meaning"], rows)


def _reasons(d: RepTable) -> nodes.Node:
    from scrapy_rep.core.decision import REASONS

    rows = [(code(reason), who, means) for reason, (who, means) in REASONS.items()]
    return table("reasons", ["reason", "given by", "meaning"], rows)


def _audit(d: RepTable) -> nodes.Node:
    from scrapy_rep.runtime.audit import RECORDS

    rows = [(code(k), one, fields) for k, (one, fields) in RECORDS.items()]
    return table("audit", ["`type`", "one per", "fields besides `type`, `at`, `crawl`"], rows)


TABLES: dict[str, Callable[[RepTable], nodes.Node]] = {
    "settings": _settings,
    "deprecated": _deprecated,
    "status": _status,
    "page-status": _page_status,
    "meta": _meta,
    "stats": _stats,
    "signals": _signals,
    "decision": _decision,
    "reasons": _reasons,
    "audit": _audit,
}


def status_outcomes() -> dict[str, list[str]]:
    """A new policy's status -> the status-table rows that give it by default."""
    from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, Status

    made_by = {Action.RULES: Status.OK, Action.ALLOW: Status.UNAVAILABLE}
    made_by |= {Action.DISALLOW: Status.UNREACHABLE, Action.PAUSE: Status.PAUSED}
    outcomes: dict[str, list[str]] = {status.value: [] for status in Status}
    for outcome, action in DEFAULT_ACTIONS.items():
        outcomes[made_by[action].value].append(f"`{outcome}`")
    outcomes[Status.UNREACHABLE.value] = outcomes[Status.UNREACHABLE.value] or [
        "a `disallow` row of `REP_STATUS_ACTIONS`"
    ]
    paused = ", ".join(outcomes[Status.PAUSED.value])
    outcomes[Status.UNRESOLVED.value].append(f"{paused}, `REP_PAUSE_MAX_TRIES` times in a row")
    return outcomes


class GateDiagram(SphinxDirective):
    """The SVG inline in HTML (no image file, no extension node other builders must know)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        dot = shutil.which("dot")
        if dot is None:
            raise self.error("rep-gate-diagram needs Graphviz's `dot` (apt-get install graphviz)")
        done = subprocess.run(
            [dot, "-Tsvg"], input=gate_dot(), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise self.error(f"dot failed: {done.stderr.strip()}")
        svg = done.stdout[done.stdout.index("<svg") :]
        legend = nodes.bullet_list()
        for status, outcomes in status_outcomes().items():
            item = nodes.paragraph()
            item += inline(f"`{status}`: {', '.join(outcomes)}")
            legend += nodes.list_item("", item)
        intro = nodes.paragraph(
            "", "A new policy's status, and the outcomes that give it by default:"
        )
        diagram = nodes.raw("", f'<div class="rep-gate-diagram">{svg}</div>', format="html")
        return [diagram, intro, legend]


def _empty_inventory(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = b"# Sphinx inventory version 2\n# Project: none\n# Version: 0\n"
    path.write_bytes(header + b"# The remainder of this file is compressed using zlib.\n")
    path.write_bytes(path.read_bytes() + zlib.compress(b""))
    return str(path)


def offline_fallbacks(app: Sphinx, config: Config) -> None:
    """Give each intersphinx inventory an empty local alternative (no network, no warning)."""
    fallback = _empty_inventory(Path(app.doctreedir) / "empty-objects.inv")
    for name, value in list(config.intersphinx_mapping.items()):
        uri, locations = value
        if not isinstance(locations, (tuple, list)):
            locations = (locations,)
        config.intersphinx_mapping[name] = (uri, (*locations, fallback))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("rep-table", RepTable)
    app.add_directive("rep-gate-diagram", GateDiagram)
    # after sphinx-scrapy fills the mapping (500), before intersphinx checks it (800)
    app.connect("config-inited", offline_fallbacks, priority=700)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
