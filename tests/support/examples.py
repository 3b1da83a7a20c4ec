"""How many examples a property test draws: all of them, or a few in ``make test-fast``.

``make test`` runs every property at its full count; the quick loop a developer
runs while editing (``REP_FAST_TESTS=1``) draws a twenty-fifth, at least 10.
"""

from __future__ import annotations

import os


def examples(full: int) -> int:
    if os.environ.get("REP_FAST_TESTS"):
        return max(10, full // 25)
    return full
