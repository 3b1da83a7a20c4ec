"""Run ``scrapy-rep store ...`` as an operator runs it: a real process, from the project root."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import processes

ROOT = Path(__file__).resolve().parent.parent.parent


def store_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy-rep store *args``; its exit status and output, captured."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return processes.run("scrapy_rep.cli", ["store", *args], cwd=ROOT, env=env, timeout=30)
