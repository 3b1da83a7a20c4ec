"""What the package documents, kept off the crawl path: the tables the reference pages,
the tests and the ``scrapy-rep`` command read (a reason's meaning, an audit record type's,
a setting's), and that a crawl never needs. Plain data; imports no I/O framework."""
