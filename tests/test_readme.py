"""The README's examples run: every ```python block, and every `dpopt ...` command in ```bash blocks."""

from __future__ import annotations

import re
import shlex

import pytest

from dpopt.cli import main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
#: The `dpopt` commands of each ```bash block, in order: a block runs in one folder, so a
#: command may read what an earlier one exported (`dpopt sample mech.csv`).
COMMAND_BLOCKS = [
    [line.split("#")[0].strip() for line in block.splitlines() if line.strip().startswith("dpopt ")]
    for block in re.findall(r"```bash\n(.*?)```", README, re.S)
]
COMMAND_BLOCKS = [block for block in COMMAND_BLOCKS if block]


def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # exported files land here, not in the checkout
    namespace: dict = {}
    exec("import dpopt\n" + "\n".join(PYTHON_BLOCKS), namespace)  # noqa: S102 - our own README


@pytest.mark.parametrize("commands", COMMAND_BLOCKS, ids=lambda block: block[0])
def test_cli_examples_run(commands, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # --export files land here
    for command in commands:
        args = [str(ROOT / a) if a.startswith(("problems/", "sweeps/")) else a for a in shlex.split(command)[1:]]
        assert main(args) == 0, (command, capsys.readouterr().err)
