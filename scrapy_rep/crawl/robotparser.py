"""Scrapy's ``RobotParser`` interface over a parsed robots.txt, as the ``robots_parsed``
signal promises: handlers written for Scrapy's middleware keep working.
"""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_rep.robotstxt import RobotsTxt, Verdict, product_token


class RepRobotParser:
    """A parsed robots.txt with Scrapy's parser interface; tokens as the crawl derives them."""

    def __init__(self, robots: RobotsTxt, default_token: str) -> None:
        self.robots = robots
        self.default_token = default_token

    def _token(self, user_agent: str | bytes | None) -> str:
        if isinstance(user_agent, bytes):
            user_agent = user_agent.decode("latin-1")
        return product_token(user_agent or "") or self.default_token

    def allowed(self, url: str | bytes, user_agent: str | bytes | None) -> bool:
        """Scrapy's call order: the URL first, then the User-Agent (or a token)."""
        if isinstance(url, bytes):
            url = url.decode("utf-8")
        return self.robots.allowed(self._token(user_agent), url)

    def decide(self, url: str, user_agent: str | bytes | None = None) -> Verdict:
        return self.robots.decide(self._token(user_agent), url)

    def sitemaps(self) -> Iterable[str]:
        return iter(self.robots.sitemaps)
