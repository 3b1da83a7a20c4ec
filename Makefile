# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv redis-server test lint typecheck pytest demo demo-compare bench bench-crawl bench-scale fuzz clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# The shared-store tests start their own redis-server on a loopback port.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) redis-server
	$(BIN)/pytest

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/python example_project/run_demo.py

demo-compare: $(STAMP)
	$(BIN)/python example_project/run_demo.py --compare

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

# Whole crawls on loopback: no robots.txt vs Scrapy's middleware vs scrapy-rep
# (~10 min on 2 cores; `make bench-crawl QUICK=1` ~2 min).
bench-crawl: $(STAMP)
	$(BIN)/python benchmarks/bench_crawl.py $(if $(QUICK),--quick)

# Broad crawls: judging at 100-100,000 cached origins, and a crawl of 4,000
# origins on 127.1.y.z (one port) three ways (~15 min on 2 cores;
# `make bench-scale QUICK=1` ~2 min).
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py $(if $(QUICK),--quick)

# Fuzz the robots.txt parser and matcher (atheris; not part of `make test`).
FUZZ_SECONDS ?= 60
fuzz: $(STAMP)
	$(BIN)/python -c "import atheris" 2>/dev/null || $(BIN)/python -m pip install -q atheris
	$(BIN)/python fuzz/fuzz_engine.py --seed-corpus fuzz/.work
	$(BIN)/python fuzz/fuzz_engine.py fuzz/.work fuzz/corpus \
		-max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -artifact_prefix=fuzz/

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
