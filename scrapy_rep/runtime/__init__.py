"""Where policies live and how each is fetched once: asyncio and files, no Scrapy."""
