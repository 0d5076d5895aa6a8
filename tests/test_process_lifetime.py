"""Child processes end with their parent (:mod:`dpopt.process_lifetime`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process states from /proc (Linux)")

# The parent starts a child, prints the child's pid and sleeps; the child runs ``setup``
# (with ``parent``: the pid that started it), writes its pid to ``ready`` and sleeps. The
# test kills the parent outright.
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", {child!r}, str(os.getpid())])
print(child.pid, flush=True)
time.sleep(60)
"""
CHILD = """
import os, sys, time
from pathlib import Path
parent = int(sys.argv[1])
{delay}
from dpopt.process_lifetime import die_with_parent, exit_when_gone
{setup}
Path({ready!r}).write_text(str(os.getpid()))
time.sleep(60)
"""


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (no such process, or a zombie nobody has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def _child_outlives_killed_parent(folder: Path, setup: str, wait: float = 5.0, *, before_setup: bool = False) -> bool:
    """Start parent and child, SIGKILL the parent once the child is set up (or, ``before_setup``,
    while the child still waits to set up), and report whether the child still runs ``wait`` s later."""
    ready = folder / "ready"
    delay = "time.sleep(2.0)" if before_setup else ""
    script = PARENT.format(child=CHILD.format(setup=setup, ready=str(ready), delay=delay))
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as parent:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while not before_setup and not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _gone(child)
        parent.kill()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not _gone(child):
        time.sleep(0.05)
    alive = not _gone(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    return alive


def test_a_child_that_asked_dies_with_its_parent(tmp_path):
    """PR_SET_PDEATHSIG: the kernel kills the child even while it runs no Python (a solver's C++ code)."""
    assert not _child_outlives_killed_parent(tmp_path, "die_with_parent()")


def test_a_parent_gone_before_the_request_is_noticed_when_its_pid_is_given(tmp_path):
    """Killed while the child was still importing: the kernel's request comes too late, and
    without the expected pid the child sees its new parent (the reaper) as its parent."""
    assert not _child_outlives_killed_parent(tmp_path, "die_with_parent(parent)", before_setup=True)
    assert _child_outlives_killed_parent(tmp_path, "die_with_parent()", wait=1.5, before_setup=True)


def test_a_watching_thread_ends_the_child_when_its_parent_is_gone(tmp_path):
    assert not _child_outlives_killed_parent(tmp_path, "exit_when_gone(parent, every=0.05)")


def test_without_either_the_child_runs_on(tmp_path):
    """The control: what the two functions prevent does happen without them."""
    assert _child_outlives_killed_parent(tmp_path, "", wait=1.5)
