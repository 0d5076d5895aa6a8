"""The ``dpopt`` console script: :func:`dpopt.cli.main` behind a Ctrl-C guard for its imports.

The command's own work answers Ctrl-C in one line (:func:`dpopt.cli._run_interruptibly`), but
importing numpy, scipy and dpopt takes the first half second of every command, and a Ctrl-C
there ended in a KeyboardInterrupt traceback (until 2026-11-29). This module imports nothing
until :func:`main` runs, and ``dpopt/__init__.py`` loads its names on first use, so the guard is
in place before any of that work starts.
"""

from __future__ import annotations

import sys
from typing import Sequence

#: 128 + SIGINT, as :data:`dpopt.cli.EXIT_INTERRUPTED` (kept here so that this module imports nothing).
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; a Ctrl-C before its own handler is in place is one line, exit 130."""
    try:
        from dpopt.cli import main as run_command

        return run_command(argv)
    except KeyboardInterrupt:
        sys.stderr.write("dpopt: interrupted: stopped by the user while starting; nothing was done\n")
        return EXIT_INTERRUPTED
