"""Settings of the demo project: an ordinary Scrapy project plus one add-on line."""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

# scrapy-rep replaces Scrapy's RobotsTxtMiddleware; nothing else to change.
ADDONS = {"scrapy_rep.Addon": 100}
# The product token (demobot) is read from here; RFC 9309 asks crawlers to send it.
USER_AGENT = "demobot/1.0 (+http://127.0.0.1/demobot.html)"
# Only used if the add-on is switched off (`make demo-compare` does, to show the difference).
ROBOTSTXT_OBEY = True

# The demo should finish in well under a minute, so its origins recover in
# seconds and scrapy-rep's back-off is shortened to match. Production values
# are the defaults (60 s first pause, doubling to 1 h); an origin is given up after 5 tries.
REP_PAUSE_INITIAL = 0.5
REP_PAUSE_MAX = 2.0  # also caps a 429's Retry-After
REP_CRAWL_DELAY_MAX = 2.0

CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_TIMEOUT = 15
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"

# Writes the crawl's stats as JSON where DEMO_STATS_FILE points (run_demo.py reads them).
EXTENSIONS = {"demo.extensions.StatsFile": 500}
DEMO_STATS_FILE = None
