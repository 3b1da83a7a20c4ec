"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fakesite import FakeSite
from tests.support.redis_fixture import redis_process, redis_server  # noqa: F401


@pytest.fixture
def site() -> Iterator[FakeSite]:
    """A fresh set of fake origins, stopped (and its threads joined) after the test."""
    with FakeSite() as s:
        yield s
