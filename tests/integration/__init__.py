"""Whole crawls, real processes, a real redis-server, a real Chromium.

`make test` runs them; `make test-fast` does not.
"""
