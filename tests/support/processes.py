"""Real processes for the tests, forked from one interpreter that has imported Scrapy already.

A test's ``python -m scrapy ...``, cluster worker or JOBDIR worker spends a
second or two importing Scrapy, Twisted, redis-py and scrapy-rep before it
does anything. Here a ``multiprocessing`` fork server imports them once per
test session (``tests/support/preload.py``), and each process is forked from
it. It is still a real, separate process running the module as ``python -m``
would (``runpy``, ``__name__ == "__main__"``): its own argv, working
directory, environment (``PYTHONPATH`` entries first on ``sys.path``, the
working directory before them), standard streams, exit code, and a pid that
takes signals. Only the preloaded modules are not imported again.

:func:`start` is a ``subprocess.Popen`` for these tests' uses (``poll``,
``wait``, ``returncode``, ``pid``, ``send_signal``, ``kill``, ``terminate``);
:func:`run` is ``subprocess.run(..., capture_output=True, text=True)``.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

PRELOAD = "tests.support.preload"
#: stderr=STDOUT, as subprocess spells it
STDOUT = subprocess.STDOUT

_context: ForkServerContext | None = None


def _forkserver() -> ForkServerContext:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([PRELOAD])
        _context = context
    return _context


class Started:
    """A process started by :func:`start`: the part of ``subprocess.Popen`` the tests use."""

    def __init__(self, process: Any, args: Sequence[str]) -> None:
        self._process = process
        self.args = list(args)

    @property
    def pid(self) -> int:
        pid: int = self._process.pid
        return pid

    @property
    def returncode(self) -> int | None:
        code: int | None = self._process.exitcode
        return code

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self.returncode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def start(
    module: str,
    args: Sequence[str] = (),
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None = None,
    stdin: str | Path | None = None,
    stdout: str | Path,
    stderr: str | Path | int | None = STDOUT,
) -> Started:
    """``python -m module *args`` in ``cwd``; output to the files ``stdout`` and ``stderr``
    (``STDOUT``: the same file), input from the file ``stdin`` (None: ``/dev/null``);
    ``env``: the whole environment (None: this one's)."""
    streams = (str(stdin or os.devnull), str(stdout), None if stderr == STDOUT else str(stderr))
    for path in streams[1:]:
        if path is not None:
            Path(path).write_bytes(b"")  # created or emptied, as the child's own open would
    environ = dict(os.environ if env is None else env)
    process = _forkserver().Process(
        target=_main, args=(module, list(args), str(cwd), environ, streams), daemon=True
    )
    process.start()
    return Started(process, [sys.executable, "-m", module, *args])


def run(
    module: str,
    args: Sequence[str] = (),
    *,
    cwd: str | Path,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, module, *args], capture_output=True, text=True)``."""
    with tempfile.TemporaryDirectory(prefix="rep-process-") as tmp:
        out, err, given = Path(tmp, "stdout"), Path(tmp, "stderr"), None
        if input is not None:
            given = Path(tmp, "stdin")
            given.write_text(input, encoding="utf-8")
        process = start(module, args, cwd=cwd, env=env, stdin=given, stdout=out, stderr=err)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            raise
        return subprocess.CompletedProcess(
            process.args,
            code,
            out.read_text(encoding="utf-8", errors="replace"),
            err.read_text(encoding="utf-8", errors="replace"),
        )


def python(
    *argv: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``python ARGV``, output captured as text: ``-m module ...`` forked (:func:`run`),
    anything else (``-c``: a fresh interpreter is the point) as a new interpreter."""
    where = cwd if cwd is not None else os.getcwd()
    if len(argv) >= 2 and argv[0] == "-m":
        return run(argv[1], argv[2:], cwd=where, env=env, input=input, timeout=timeout)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=where,
        env=None if env is None else dict(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _main(
    module: str,
    args: list[str],
    cwd: str,
    env: dict[str, str],
    streams: tuple[str, str, str | None],
) -> None:
    """In the forked process: become ``python -m module *args`` and exit with its code."""
    stdin, stdout, stderr = streams
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [cwd, *paths]
    with open(stdin, "rb") as given:
        os.dup2(given.fileno(), 0)
    with open(stdout, "ab") as out:
        os.dup2(out.fileno(), 1)
    with open(stderr or stdout, "ab") as err:
        os.dup2(err.fileno(), 2)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    sys.argv = [module, *args]
    code = 0
    try:
        import runpy

        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    os._exit(code)
