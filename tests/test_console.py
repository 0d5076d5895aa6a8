"""The console script: a Ctrl-C while dpopt is still importing is one line and exit 130."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dpopt
from dpopt import cli, console

ROOT = Path(__file__).resolve().parents[1]


def test_the_console_script_is_the_guarded_entry_point():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"dpopt": "dpopt.console:main"}
    assert console.EXIT_INTERRUPTED == cli.EXIT_INTERRUPTED


def test_importing_the_entry_point_imports_nothing_heavy():
    # what runs before main()'s guard; until 2026-11-29 that was all of dpopt, numpy and scipy
    # (~0.45 s), and a Ctrl-C in it was a KeyboardInterrupt traceback
    code = "import sys, dpopt.console; print(sorted(m for m in ('numpy', 'scipy', 'dpopt.cli', 'dpopt.registry') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_ctrl_c_while_the_command_line_imports_is_one_line_and_exit_130():
    code = (
        "import sys\n"
        "class Interrupt:\n"  # Ctrl-C arriving while dpopt.cli is being imported
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'dpopt.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from dpopt.console import main\n"
        "sys.exit(main(['solve', 'problems/gupte_sundararajan_table1.toml']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 130 and done.stdout == ""
    assert done.stderr.splitlines() == ["dpopt: interrupted: stopped by the user while starting; nothing was done"]


def test_the_console_runs_the_command_line(capsys):
    assert console.main(["solve", str(ROOT / "problems" / "gupte_sundararajan_table1.toml")]) == 0
    assert '"objective": 0.40481' in capsys.readouterr().out


def test_every_public_name_is_loaded_on_first_use_from_its_module():
    for name in dpopt.__all__:
        value = getattr(dpopt, name)
        if name in ("plot", "testing"):  # modules
            assert value is importlib.import_module(f"dpopt.{name}")
        else:
            assert value is getattr(importlib.import_module(dpopt._SOURCES[name]), name)
    assert set(dpopt.__all__) == set(dpopt._SOURCES) | {"plot", "testing"} and set(dpopt.__all__) <= set(dir(dpopt))
    with pytest.raises(AttributeError, match="no_such_name"):
        dpopt.no_such_name  # noqa: B018
