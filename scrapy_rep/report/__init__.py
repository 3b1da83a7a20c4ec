"""After the crawl: the audit log read back as a story (``story``) and written as one
HTML page (``html``), for ``scrapy-rep report`` and ``REP_REPORT``. A crawl imports
none of it unless ``REP_REPORT`` names a page."""
