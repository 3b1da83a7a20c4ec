"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fakesite import FakeSite
from tests.support.redis_fixture import _session_redis, redis_process, redis_server  # noqa: F401
from tests.support.rig import Rig


@pytest.fixture
def site() -> Iterator[FakeSite]:
    """A fresh set of fake origins, stopped (and its threads joined) after the test."""
    with FakeSite() as s:
        yield s


@pytest.fixture
def rig() -> Iterator[Rig]:
    """A crawler in-process, a ManualClock and a fake robots.txt fetch (tests/support/rig.py)."""
    with Rig() as r:
        yield r
