"""The reference tables, generated from the code's own tables into the Markdown pages.

Each table sits in its page between two markers, so the page reads the same
in an editor, on a forge and in the built site (``make docs``)::

    <!-- rep-table settings -->
    | setting | default | meaning |
    ...
    <!-- end rep-table -->

``python docs/_ext/reptables.py`` rewrites every table from the code;
``--check`` only lists the stale ones (exit 1), as ``tests/test_docs.py``
does. Pure: the standard library and scrapy_rep, no Sphinx.

==============  ===============================================================
``settings``    ``scrapy_rep.runtime.settings.SETTINGS`` and ``reference.settings.MEANINGS``
``status``      ``core.policy.DEFAULT_ACTIONS``, ``reference.status.RFC_BEHAVIOUR``
``page-status`` ``core.pushback.DEFAULT_PAGE_ACTIONS``, ``reference.status.PAGE_BEHAVIOUR``
``meta``        the ``#:`` comments of ``scrapy_rep.crawl.meta``
``stats``       ``scrapy_rep.crawl.stats.STATS``
``signals``     the ``#:`` comments of ``scrapy_rep.signals``
``decision``    the ``#:`` comments of ``scrapy_rep.core.decision.DecisionRecord``
``reasons``     ``scrapy_rep.reference.reasons.REASONS``
``audit``       ``scrapy_rep.reference.records.RECORDS``
==============  ===============================================================
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
#: ``<!-- rep-table NAME -->`` ... ``<!-- end rep-table -->``, the generated table between
MARKED = re.compile(r"(<!-- rep-table ([\w-]+) -->\n)(.*?)(<!-- end rep-table -->)", re.DOTALL)

Table = tuple[Sequence[str], list[Sequence[str]]]


def code(text: str) -> str:
    return f"`{text}`"


def value(found: Any) -> str:
    if isinstance(found, float) and found.is_integer():
        found = int(found)
    return code(repr(found))


def comments(module: str, owner: str = "") -> list[tuple[str, str]]:
    """(attribute, its ``#:`` comment) in source order, for ``owner`` ('' the module).

    The ``#:`` lines right above an assignment, joined by spaces (as Sphinx's
    autodoc reads them).
    """
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    text = Path(spec.origin).read_text(encoding="utf-8")
    lines = text.splitlines()
    body = ast.parse(text).body
    if owner:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    found: list[tuple[str, str]] = []
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        else:
            continue
        said: list[str] = []
        at = node.lineno - 2
        while at >= 0 and lines[at].strip().startswith("#:"):
            said.insert(0, lines[at].strip()[2:].strip())
            at -= 1
        if said:
            found.append((name, " ".join(said).strip()))
    return found


def _settings() -> Table:
    from scrapy_rep.reference.settings import MEANINGS
    from scrapy_rep.runtime.settings import SETTINGS

    rows = [(code(s.name), value(s.default), MEANINGS[s.name]) for s in SETTINGS]
    return ["setting", "default", "meaning"], rows


def _status() -> Table:
    from scrapy_rep.core.policy import DEFAULT_ACTIONS
    from scrapy_rep.reference.status import RFC_BEHAVIOUR

    rows = [(code(o), RFC_BEHAVIOUR[o], code(a.value)) for o, a in DEFAULT_ACTIONS.items()]
    return ["outcome", "RFC 9309", "scrapy-rep default"], rows


def _page_status() -> Table:
    from scrapy_rep.core.pushback import DEFAULT_PAGE_ACTIONS
    from scrapy_rep.reference.status import PAGE_BEHAVIOUR

    rows = [(code(s), PAGE_BEHAVIOUR[s], code(a)) for s, a in DEFAULT_PAGE_ACTIONS.items()]
    return ["page status", "what happens", "scrapy-rep default"], rows


def _meta() -> Table:
    module = importlib.import_module("scrapy_rep.crawl.meta")
    rows: list[Sequence[str]] = []
    for attr, text in comments(module.__name__):
        who, _, meaning = text.partition(": ")
        rows.append((code(getattr(module, attr)), who.removeprefix("Set by ").lower(), meaning))
    return ["key", "set by", "meaning"], rows


def _stats() -> Table:
    from scrapy_rep.crawl.stats import STATS

    return ["key", "counts"], [(code(k), v) for k, v in STATS.items()]


def _signals() -> Table:
    return ["signal", "sent when"], [(code(a), t) for a, t in comments("scrapy_rep.signals")]


def _decision() -> Table:
    rows = [(code(a), text) for a, text in comments("scrapy_rep.core.decision", "DecisionRecord")]
    return ["field", "meaning"], rows


def _reasons() -> Table:
    from scrapy_rep.reference.reasons import REASONS

    rows = [(code(reason), who, means) for reason, (who, means) in REASONS.items()]
    return ["reason", "given by", "meaning"], rows


def _audit() -> Table:
    from scrapy_rep.reference.records import RECORDS

    rows = [(code(k), one, fields) for k, (one, fields) in RECORDS.items()]
    return ["`type`", "one per", "fields besides `type`, `at`, `crawl`"], rows


TABLES: dict[str, Callable[[], Table]] = {
    "settings": _settings,
    "status": _status,
    "page-status": _page_status,
    "meta": _meta,
    "stats": _stats,
    "signals": _signals,
    "decision": _decision,
    "reasons": _reasons,
    "audit": _audit,
}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def markdown(name: str) -> str:
    """Table ``name`` as a Markdown (GitHub-flavoured) table, its lines ending in newlines."""
    headers, rows = TABLES[name]()
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def refreshed(text: str) -> str:
    """A page's text with every marked table generated anew."""

    def one(found: re.Match[str]) -> str:
        name = found.group(2)
        if name not in TABLES:
            raise ValueError(f"rep-table: no table {name!r}; known: {', '.join(TABLES)}")
        return f"{found.group(1)}{markdown(name)}{found.group(4)}"

    return MARKED.sub(one, text)


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def stale() -> list[str]:
    """The pages whose marked tables differ from what the code says now."""
    return [
        str(p.relative_to(ROOT))
        for p in pages()
        if refreshed(text := p.read_text(encoding="utf-8")) != text
    ]


def main(argv: Sequence[str]) -> int:
    if "--check" in argv:
        found = stale()
        for page in found:
            print(f"{page}: stale tables; run python docs/_ext/reptables.py", file=sys.stderr)
        return 1 if found else 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if (new := refreshed(text)) != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
