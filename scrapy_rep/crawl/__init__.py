"""The Scrapy side: everything that touches a crawler, a request or a response."""
