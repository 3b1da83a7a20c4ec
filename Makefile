# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The exact versions of every tool and library the tests, docs and release use
# (pip constraints; `make lock` refreshes them on purpose).
LOCK := ci/lock.txt
# The lowest supported versions (ci/min-versions.txt) in a second virtualenv.
PYTHON_MIN ?= $(PYTHON)
VENV_MIN := .venv-min
BIN_MIN := $(VENV_MIN)/bin
STAMP_MIN := $(VENV_MIN)/.installed
MIN_VERSIONS := ci/min-versions.txt

.PHONY: test-fast venv lock tables venv-min redis-server chromium graphviz docs dist test test-min lint typecheck pytest demo demo-compare demo-browser bench bench-crawl bench-scale bench-page bench-browser bench-pushback fuzz clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(LOCK) pip
	$(BIN)/python -m pip install -q -c $(LOCK) -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Refresh ci/lock.txt on purpose (its own commit): resolve the extras afresh in a
# throwaway virtualenv and write down exactly what was installed.
LOCK_VENV := .venv-lock
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q --upgrade pip
	$(LOCK_VENV)/bin/python -m pip install -q '.[test,docs,dist]'
	{ sed -n '/^#/p' $(LOCK); \
	  $(LOCK_VENV)/bin/python -m pip freeze --all --exclude scrapy-rep --exclude setuptools \
	    --exclude wheel | sort -f; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf $(LOCK_VENV)
	@echo "wrote $(LOCK): review 'git diff $(LOCK)', run make test, commit it alone"

$(STAMP_MIN): pyproject.toml $(MIN_VERSIONS)
	test -x $(BIN_MIN)/python || $(PYTHON_MIN) -m venv $(VENV_MIN)
	$(BIN_MIN)/python -m pip install -q --upgrade pip
	$(BIN_MIN)/python -m pip install -q -c $(MIN_VERSIONS) -e '.[test]'
	touch $(STAMP_MIN)

venv-min: $(STAMP_MIN)

# The shared-store tests start their own redis-server on a loopback port.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

# The browser-guard tests render pages in Debian's Chromium (Playwright cannot download
# browsers here); installed only when missing.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
		echo "installing chromium (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The gate's diagram in the docs is drawn by Graphviz's dot (Debian package).
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
		echo "installing graphviz (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; }

DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c $(LOCK) -e '.[docs,dist]'
	touch $(DOCS_STAMP)

# The reference tables in docs/*.md (between <!-- rep-table NAME --> markers), rewritten
# from the code's own tables; tests/test_docs.py fails when one is stale.
tables: $(STAMP)
	$(BIN)/python docs/_ext/reptables.py

# The documentation site: HTML in docs/_build/html, every warning an error; needs no
# network (an unreachable intersphinx inventory falls back to an empty local one).
docs: $(DOCS_STAMP) graphviz
	$(BIN)/python docs/_ext/reptables.py --check
	rm -rf docs/_build
	$(BIN)/python -m sphinx -b html -W --keep-going -q docs docs/_build/html

# The release: sdist + wheel built and checked, the wheel installed into a fresh
# virtualenv, a `scrapy startproject` project crawling a loopback site with it.
dist: $(DOCS_STAMP)
	$(BIN)/python ci/check_dist.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Three pytest processes: most crawl tests wait on timers and sockets, not the CPU, so
# three share two cores well. `--dist loadfile` keeps a module in one process (its
# Chromium, its sites); `make pytest TEST_PROCESSES=0` runs in one process.
TEST_PROCESSES ?= 3
PYTEST_PARALLEL = -n $(TEST_PROCESSES) --dist loadfile

pytest: $(STAMP) redis-server chromium
	$(BIN)/pytest $(PYTEST_PARALLEL)

test: lint typecheck pytest

# The quick loop while editing: the pure core, the engine and everything else that needs no
# crawl, no redis-server, no Chromium and no memory tracing (tests/integration/ is left out),
# property tests at a twenty-fifth of their examples. Bytecode and pytest's rewritten test
# modules are cached even where PYTHONDONTWRITEBYTECODE is set: the next run starts sooner.
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= REP_FAST_TESTS=1 $(BIN)/pytest -q --ignore=tests/integration

# The whole suite again on the lowest supported versions (no ruff, no mypy:
# those check the code, not the versions it runs on).
test-min: $(STAMP_MIN) redis-server chromium
	@$(BIN_MIN)/python -c "import platform, scrapy, twisted; \
		print('test-min: Python', platform.python_version(), '| Scrapy', scrapy.__version__, \
		'| Twisted', twisted.__version__)"
	$(BIN_MIN)/pytest $(PYTEST_PARALLEL)

demo: $(STAMP)
	$(BIN)/python example_project/run_demo.py

demo-compare: $(STAMP)
	$(BIN)/python example_project/run_demo.py --compare

# One page rendered in Chromium (scrapy-playwright), the browser guard off and on
demo-browser: $(STAMP) chromium
	$(BIN)/python example_project/run_demo_browser.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

# Whole crawls on loopback: no robots.txt vs Scrapy's middleware vs scrapy-rep
# (~10 min on 2 cores; `make bench-crawl QUICK=1` ~2 min).
bench-crawl: $(STAMP)
	$(BIN)/python benchmarks/bench_crawl.py $(if $(QUICK),--quick)

# What page-level directives cost: parse loop, middleware loop, crawls with them on and off
bench-page: $(STAMP)
	$(BIN)/python benchmarks/bench_page.py

# Broad crawls: judging at 100-100,000 cached origins, and a crawl of 4,000
# origins on 127.1.y.z (one port) three ways (~15 min on 2 cores;
# `make bench-scale QUICK=1` ~2 min).
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py $(if $(QUICK),--quick)

# A site answering 429 + Retry-After, a 503 window and a 403 wall, crawled three ways; with
# REDIS=1 also one vs three scrapy-redis workers (~1 min; `make bench-pushback QUICK=1` ~30 s).
bench-pushback: $(STAMP) $(if $(REDIS),redis-server)
	$(BIN)/python benchmarks/bench_pushback.py $(if $(QUICK),--quick) $(if $(REDIS),--redis)

# What the browser guard costs a page rendered with scrapy-playwright (Chromium; ~2 min)
bench-browser: $(STAMP) chromium
	$(BIN)/python benchmarks/bench_browser.py

# Fuzz the robots.txt parser and matcher (atheris; not part of `make test`).
FUZZ_SECONDS ?= 60
fuzz: $(STAMP)
	$(BIN)/python -c "import atheris" 2>/dev/null || $(BIN)/python -m pip install -q atheris
	$(BIN)/python fuzz/fuzz_engine.py --seed-corpus fuzz/.work
	$(BIN)/python fuzz/fuzz_engine.py fuzz/.work fuzz/corpus \
		-max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -artifact_prefix=fuzz/

clean:
	rm -rf $(VENV) $(VENV_MIN) $(LOCK_VENV) .mypy_cache .pytest_cache .ruff_cache docs/_build dist
