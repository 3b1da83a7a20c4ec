"""The application's own scope check (``REP_COLLECTION_POLICY``), asked safely.

The hook may be a plain function or a coroutine function. Whatever it does
wrong (raises, or answers something other than ``approved``, ``rejected`` or
``unresolved``) becomes the answer ``error``, with a sentence that names the
setting: the request is dropped with reason ``collection-error`` and
recorded like any other drop, and a bad answer is logged once, not once per
request.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from scrapy_rep.core.decision import COLLECTION_ANSWERS

logger = logging.getLogger(__name__)

ERROR = "error"


class CollectionHook:
    """Calls the hook; returns (answer, what was wrong or None)."""

    def __init__(self, hook: Callable[..., Any]) -> None:
        self.hook = hook
        self._warned = False

    async def __call__(self, request: Any, spider: Any) -> tuple[str, str | None]:
        try:
            answer = self.hook(request, spider)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            return ERROR, f"REP_COLLECTION_POLICY raised {type(exc).__name__}: {exc}"
        if isinstance(answer, str) and answer in COLLECTION_ANSWERS:
            return answer, None
        problem = (
            f"REP_COLLECTION_POLICY returned {answer!r}; it must return one of "
            f"{', '.join(COLLECTION_ANSWERS)}"
        )
        if not self._warned:
            self._warned = True
            logger.error("scrapy-rep: %(problem)s", {"problem": problem})
        return ERROR, problem
