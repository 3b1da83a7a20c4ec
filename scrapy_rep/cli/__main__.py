"""``python -m scrapy_rep.cli``."""

import sys

from scrapy_rep.cli import main

sys.exit(main())
