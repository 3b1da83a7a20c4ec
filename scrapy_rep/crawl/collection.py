"""The application's own scope check (``REP_COLLECTION_POLICY``), asked safely.

The hook may be a plain function or a coroutine function. Whatever it does
wrong (raises, or answers something other than ``approved``, ``rejected`` or
``unresolved``) becomes the answer ``error``, with a sentence that names the
setting: the request is dropped with reason ``collection-error`` and
recorded like any other drop, and a bad answer is logged once, not once per
request.

The hook is imported once, when the crawler's robots service is made
(:func:`load_collection_policy`): what cannot be imported stops the crawl
with a one-line :class:`~scrapy_rep.runtime.settings.SettingError`.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

from scrapy_rep.core.decision import COLLECTION_ANSWERS
from scrapy_rep.runtime.settings import COLLECTION_POLICY_ACCEPTS, SettingError

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


def load_collection_policy(path: Any) -> Callable[..., Any] | None:
    """The callable ``REP_COLLECTION_POLICY`` names, imported; ``None`` when unset.

    ``path`` is the setting's value: an import path (``'pkg.module.func'``) or
    the callable itself. Anything that cannot be imported or called is a
    :class:`SettingError` naming the setting, the value and what is accepted.
    """
    if path is None or path == "":
        return None
    if callable(path):
        return path  # type: ignore[no-any-return]
    name = "REP_COLLECTION_POLICY"
    if not isinstance(path, str):
        raise SettingError(f"{name} must be {COLLECTION_POLICY_ACCEPTS}, not {path!r}")
    module_name, _, attribute = path.strip().rpartition(".")
    if not module_name or not attribute:
        raise SettingError(
            f"{name} = {path!r}: not a full import path; expected {COLLECTION_POLICY_ACCEPTS}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingError(
            f"{name} = {path!r}: cannot import {module_name!r} ({exc}); "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        ) from exc
    except Exception as exc:  # the module itself failed: keep its error as the cause
        raise SettingError(
            f"{name} = {path!r}: importing {module_name!r} failed with {type(exc).__name__}: {exc}"
        ) from exc
    try:
        found = getattr(module, attribute)
    except AttributeError:
        raise SettingError(
            f"{name} = {path!r}: module {module_name!r} has no {attribute!r}; "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        ) from None
    if not callable(found):
        raise SettingError(
            f"{name} = {path!r}: that is a {type(found).__name__}, not a callable; "
            f"expected {COLLECTION_POLICY_ACCEPTS}"
        )
    return found  # type: ignore[no-any-return]
