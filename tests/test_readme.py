"""The README's examples run: every ```python block, and every `dpopt ...` command in ```bash blocks."""

from __future__ import annotations

import re
import shlex

import pytest

from dpopt.cli import main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
COMMANDS = [
    line.split("#")[0].strip()
    for block in re.findall(r"```bash\n(.*?)```", README, re.S)
    for line in block.splitlines()
    if line.strip().startswith("dpopt ")
]


def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # exported files land here, not in the checkout
    namespace: dict = {}
    exec("import dpopt\n" + "\n".join(PYTHON_BLOCKS), namespace)  # noqa: S102 - our own README


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_examples_run(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # --export files land here
    args = [str(ROOT / a) if a.startswith(("problems/", "sweeps/")) else a for a in shlex.split(command)[1:]]
    assert main(args) == 0, capsys.readouterr().err
