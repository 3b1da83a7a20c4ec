"""The optional integrations: scrapy-playwright's browser guard (``browser``) and the
Spidermon suite (``monitors``). The add-on decides whether each is wanted from the
settings and the installed packages (``wiring``) and installs it by its import path,
so a crawl without them imports neither."""
