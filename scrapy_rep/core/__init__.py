"""The decisions, pure: no Scrapy, Twisted or asyncio; every clock is passed in."""
