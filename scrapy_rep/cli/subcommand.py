"""The one way a ``scrapy-rep`` subcommand is registered."""

from __future__ import annotations

import argparse
from typing import Any


def subcommand(
    subparsers: Any, name: str, summary: str, doc: str | None
) -> argparse.ArgumentParser:
    """Add ``name`` to the command's subparsers: ``summary`` in the command list, and the
    module's docstring ``doc`` as written in its ``--help``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser
