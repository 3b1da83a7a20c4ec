"""A fake of the few Playwright objects the browser guard touches: page, context, route.

The guard (``scrapy_rep/integrations/browser.py``) registers route handlers with
``page.route``/``context.route`` and, for each request the browser makes, is
handed a ``Route`` and a ``Request``: it aborts, falls back to the handlers
registered before it, or fetches (``route.fetch(max_redirects=0)``) and
fulfils. This fake runs that protocol in-process, as Playwright documents it:

- handlers registered later run first; ``route.fallback()`` hands the request
  to the next one; after the last page handler, the context's; after the last
  handler of all, ``route.continue_()`` (what scrapy-playwright's own route
  ends in), the attribute the guard takes over;
- ``route.fetch`` answers from ``network`` (URL -> :class:`Served`), one hop,
  never following a redirect, and every URL fetched is kept in ``fetched``.

What a test then sees on each :class:`FakeRoute`: ``outcome`` (``"aborted"``,
``"fulfilled"``, ``"continued"``: sent to the network untouched), and for a
fulfilled one the response given. The real hook in Chromium is still proven
by ``tests/integration/test_browser_guard.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[..., Awaitable[None]]


@dataclass
class Served:
    """What a URL answers on the fake network."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class FakeAPIResponse:
    """Playwright's ``APIResponse``: what ``route.fetch`` returns."""

    def __init__(self, url: str, served: Served) -> None:
        self.url = url
        self.status = served.status
        self.headers = {k.lower(): v for k, v in served.headers.items()}
        self.headers_array = [{"name": k, "value": v} for k, v in served.headers.items()]
        self._body = served.body
        self.disposed = False

    async def body(self) -> bytes:
        return self._body

    async def dispose(self) -> None:
        self.disposed = True


class FakeFrame:
    """A frame; only its identity matters (the page's main frame or another)."""


class FakeRequest:
    """Playwright's ``Request``, as the guard reads it."""

    def __init__(
        self,
        url: str,
        *,
        resource_type: str = "image",
        method: str = "GET",
        navigation: bool = False,
        frame: FakeFrame | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = url
        self.resource_type = resource_type
        self.method = method
        self.frame = frame or FakeFrame()
        self.headers = headers or {}
        self._navigation = navigation

    def is_navigation_request(self) -> bool:
        return self._navigation


class FakeNetwork:
    """The fake network every route of a test fetches from."""

    def __init__(self, served: dict[str, Served] | None = None) -> None:
        self.served = dict(served or {})
        self.fetched: list[tuple[str, str]] = []  # (method, url), in order

    def answer(self, url: str, method: str) -> FakeAPIResponse:
        self.fetched.append((method, url))
        return FakeAPIResponse(url, self.served.get(url, Served(404)))


class FakeRoute:
    """Playwright's ``Route`` for one request, walking a chain of handlers."""

    def __init__(self, request: FakeRequest, chain: list[Handler], network: FakeNetwork) -> None:
        self.request = request
        self._chain = list(chain)  # the handlers still to run, next first
        self.network = network
        self.outcome: str | None = None
        self.abort_code: str | None = None
        self.response: FakeAPIResponse | None = None
        #: handlers that ran, in order (each one's ``fallback`` moved to the next)
        self.fallbacks = 0

    def _settle(self, outcome: str) -> None:
        if self.outcome is not None:  # Playwright raises: "Route is already handled!"
            raise RuntimeError(f"route already {self.outcome}")
        self.outcome = outcome

    async def run(self) -> None:
        """Hand the request to the next handler, or to ``continue_`` after the last."""
        if self._chain:
            handler = self._chain.pop(0)
            await handler(self, self.request)
        else:
            await self.continue_()

    async def fallback(self, **_overrides: Any) -> None:
        self.fallbacks += 1
        await self.run()

    async def continue_(self, **_overrides: Any) -> None:
        self._settle("continued")

    async def abort(self, error_code: str = "failed") -> None:
        self._settle("aborted")
        self.abort_code = error_code

    async def fetch(
        self,
        *,
        url: str | None = None,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        post_data: Any = None,
        max_redirects: int | None = None,
    ) -> FakeAPIResponse:
        assert max_redirects == 0, "the guard follows redirects itself, hop by hop"
        return self.network.answer(url or self.request.url, method or self.request.method)

    async def fulfill(self, *, response: FakeAPIResponse) -> None:
        self._settle("fulfilled")
        self.response = response


class FakeWebSocketRoute:
    """Playwright's ``WebSocketRoute``: connected to the server, or closed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.connected = False
        self.closed: tuple[int, str] | None = None

    def connect_to_server(self) -> None:
        self.connected = True

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class _Routes:
    """Route handlers by registration; the latest registered runs first."""

    def __init__(self) -> None:
        self.handlers: list[Handler] = []
        self.web_socket_handlers: list[Handler] = []

    async def route(self, pattern: str, handler: Handler) -> None:
        assert pattern == "**"
        self.handlers.insert(0, handler)

    async def unroute(self, pattern: str, handler: Handler) -> None:
        self.handlers.remove(handler)

    async def route_web_socket(self, pattern: str, handler: Handler) -> None:
        self.web_socket_handlers.insert(0, handler)


class FakeContext(_Routes):
    """A browser context: routes for the pages it opens that have none of their own."""

    def __init__(self, network: FakeNetwork) -> None:
        super().__init__()
        self.network = network

    async def load(self, request: FakeRequest) -> FakeRoute:
        """A request from a page no page route handles (a popup): the context's routes."""
        route = FakeRoute(request, self.handlers, self.network)
        await route.run()
        return route


class FakePage(_Routes):
    """A page: its own routes first, then its context's."""

    def __init__(self, context: FakeContext) -> None:
        super().__init__()
        self.context = context
        self.main_frame = FakeFrame()

    async def load(self, request: FakeRequest) -> FakeRoute:
        """The browser asks for ``request``: every handler in Playwright's order."""
        route = FakeRoute(request, [*self.handlers, *self.context.handlers], self.context.network)
        await route.run()
        return route

    async def navigate(self, url: str) -> FakeRoute:
        """The page's own navigation to ``url`` (the document, in its main frame)."""
        request = FakeRequest(url, resource_type="document", navigation=True, frame=self.main_frame)
        return await self.load(request)

    async def web_socket(self, url: str) -> FakeWebSocketRoute:
        """The page opens a WebSocket to ``url``: the first web-socket handler decides."""
        ws = FakeWebSocketRoute(url)
        handler = (self.web_socket_handlers or self.context.web_socket_handlers)[0]
        await handler(ws)
        return ws
