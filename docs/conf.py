"""Sphinx configuration: `make docs` (HTML, warnings as errors, no network needed)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

import scrapy_rep  # noqa: E402

project = "scrapy-rep"
author = "scrapy-rep contributors"
copyright = "2026, scrapy-rep contributors"
release = version = scrapy_rep.__version__

extensions = [
    "myst_parser",
    "sphinx_scrapy",  # setting/reqmeta/signal/stat roles, intersphinx to Scrapy and Python
    "repdocs",  # the reference tables and the gate's diagram, from the code
]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

html_theme = "alabaster"
html_title = f"scrapy-rep {release}"
html_static_path = ["_static"]
html_css_files = ["rep.css"]
html_theme_options = {"page_width": "1100px", "sidebar_width": "230px"}

# cross-references into Scrapy's docs resolve when its inventory is reachable;
# repdocs gives every inventory an empty local fallback for builds without network
intersphinx_timeout = 10
