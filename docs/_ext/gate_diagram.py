"""The gate's state diagram as Graphviz, drawn from ``core/gate.py``'s own table.

Apart from the Sphinx extension (``repdocs.py``) so a test can draw it
without Sphinx installed.
"""

from __future__ import annotations

from collections import defaultdict


def gate_dot() -> str:
    """``TRANSITIONS`` as Graphviz: a node per state, an edge per (next state, effect)."""
    from scrapy_rep.core.gate import RESUME, STAY, TRANSITIONS

    lines = [
        "digraph gate {",
        '  rankdir=TB; bgcolor="transparent"; nodesep=0.6; ranksep=0.7;',
        '  node [shape=box, style="rounded,filled", fillcolor="#f4f6f8", fontname="sans-serif",',
        "        fontsize=16];",
        '  edge [fontname="sans-serif", fontsize=13];',
    ]
    lines += [f'  "{state}";' for state in TRANSITIONS]
    colour = {STAY: "#b35c00", RESUME: "#1a7f37"}
    for state, row in TRANSITIONS.items():
        edges: dict[tuple[str, str], list[str]] = defaultdict(list)
        for status, move in row.items():
            edges[move].append(status.value)
        for (after, effect), statuses in edges.items():
            label = " | ".join(statuses) + (" (resumes)" if effect == RESUME else "")
            style = "dashed" if effect == STAY else "solid"
            c = colour.get(effect, "#333333")
            lines.append(
                f'  "{state}" -> "{after}" [label="{label}", style={style}, color="{c}", '
                f'fontcolor="{c}"];'
            )
    lines.append("}")
    return "\n".join(lines)
