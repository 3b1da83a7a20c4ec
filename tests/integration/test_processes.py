"""The test rig's processes (``tests/support/processes.py``): forked from an interpreter that
has imported Scrapy, yet each one as ``python -m`` would run it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import processes

PROBE = """\
import os, sys
print("argv", sys.argv[1:])
print("cwd", os.getcwd())
print("env", os.environ.get("PROBE_SAYS"), "HOME" in os.environ)
print("path0", sys.path[0], sys.path[1])
print("stdin", sys.stdin.read().strip())
print("name", __name__)
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


def test_a_module_runs_with_its_own_argv_cwd_environment_streams_and_exit_code(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "probe.py").write_text(PROBE)
    work = tmp_path / "work"
    work.mkdir()
    env = {"PROBE_SAYS": "hello", "PYTHONPATH": str(tmp_path / "lib")}
    done = processes.run("probe", ["3", "x"], cwd=work, env=env, input="given", timeout=60)
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    assert lines == [
        "argv ['3', 'x']",
        f"cwd {work}",
        "env hello False",  # the environment given, nothing of this one's
        f"path0 {work} {tmp_path / 'lib'}",  # as `python -m`: the cwd, then PYTHONPATH
        "stdin given",
        "name __main__",
    ]
    assert done.stderr == "to stderr\n"


def test_an_exception_and_a_missing_module_exit_1_with_the_traceback() -> None:
    done = processes.run("no_such_module_here", [], cwd=Path.cwd(), timeout=60)
    assert done.returncode == 1 and "No module named no_such_module_here" in done.stderr


def test_a_started_process_takes_signals_by_pid(tmp_path: Path) -> None:
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(60)\n")
    log = tmp_path / "out.log"
    env = {"PYTHONPATH": str(tmp_path)}
    started = processes.start("sleeper", cwd=tmp_path, env=env, stdout=log)
    assert started.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        started.wait(0.2)
    started.send_signal(signal.SIGKILL)
    assert started.wait(10) == -signal.SIGKILL


def test_scrapy_is_imported_before_the_process_starts(tmp_path: Path) -> None:
    """The point of it: a ``scrapy`` process starts without importing Scrapy again."""
    (tmp_path / "probe.py").write_text(
        "import sys\nprint('scrapy' in sys.modules, 'twisted.internet.reactor' in sys.modules)\n"
    )
    done = processes.run("probe", [], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)}, timeout=60)
    assert done.stdout.split() == ["True", "False"]  # Scrapy there, no reactor installed yet


def test_python_runs_anything_but_a_module_as_a_new_interpreter() -> None:
    code = "import sys; print('scrapy' in sys.modules, sys.executable)"
    done = processes.python("-c", code, timeout=60)
    assert done.stdout.split() == ["False", sys.executable]
    shown = processes.python("-m", "json.tool", input='{"a":1}', timeout=60)  # forked
    assert shown.stdout.split() == ["{", '"a":', "1", "}"]
