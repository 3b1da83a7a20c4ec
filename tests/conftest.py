"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scrapy_rep.runtime.resolver import SharedResolvers
from tests.support.fakesite import FakeSite
from tests.support.redis_fixture import _session_redis, redis_process, redis_server  # noqa: F401
from tests.support.rig import Rig


@pytest.fixture(autouse=True)
def fresh_shared_resolvers() -> Iterator[None]:
    """Each test starts with no resolver shared from an earlier one. A crawler a test never
    closes (the rig's, a middleware made by hand) keeps its resolver, and with it the policies
    of loopback origins whose ports a later test's sites may be given again."""
    yield
    SharedResolvers._resolvers.clear()


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
