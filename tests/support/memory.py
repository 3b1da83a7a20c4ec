"""What code keeps, or needs at its peak, traced with tracemalloc.

Tracing makes the code traced many times slower: a test that traces more than a
few milliseconds of work lives in tests/integration, out of ``make test-fast``.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retained(build: Callable[[], T]) -> tuple[int, T]:
    """The bytes still allocated after ``build()``, its result kept alive, after gc; and
    that result.

    What exists before is frozen, so each collection walks only what ``build``
    made, not the whole test session's heap.
    """
    gc.collect()
    gc.freeze()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, kept
    finally:
        tracemalloc.stop()
        gc.unfreeze()


def peak(run: Callable[[], T]) -> tuple[int, T]:
    """The most bytes allocated at once while ``run()`` ran (from its start), and its result."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        done = run()
        return tracemalloc.get_traced_memory()[1] - before, done
    finally:
        tracemalloc.stop()
