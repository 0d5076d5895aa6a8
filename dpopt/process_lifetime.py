"""How long dpopt's child processes live: no longer than the process that started them.

Sweep workers, a cell's or a method's own process (``--timeout``) and the HiGHS children of
:mod:`dpopt.programs.highs_child` all solve on behalf of a parent. If the parent is killed
outright they must not solve on for minutes: :func:`die_with_parent` asks the kernel to kill
them, and :func:`exit_when_gone` watches from a thread where the kernel cannot help.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["die_with_parent", "exit_when_gone", "end_with"]


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel to kill this process when its parent ends (Linux ``PR_SET_PDEATHSIG``).

    A child inside a solver's C++ code runs no Python, so a watching thread
    (:func:`exit_when_gone`) cannot stop it: sweep workers whose driver was killed solved on
    for minutes. Used by pool workers, a cell's or a method's own process (whose parent is
    multiprocessing's fork server, which ends with the driver) and the HiGHS children.
    Elsewhere (no ``prctl``) nothing changes.

    Parameters
    ----------
    parent : int, optional
        The pid of this process's direct parent, if the caller knows it (the HiGHS children
        get it on their command line): a parent that ended before the request (while this
        process was still importing) is then noticed too, and this process ends at once.
        Without it only a parent that ends during the call is. Not for processes started
        by multiprocessing's fork server, whose parent is the server.
    """
    expected = os.getppid() if parent is None else parent
    try:
        import ctypes
        import signal

        if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0:  # 1: PR_SET_PDEATHSIG
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != expected:  # the parent ended before the request was made
        os._exit(1)


def exit_when_gone(driver: int, every: float = 0.5) -> None:
    """End this process when ``driver`` (the sweep, or the process waiting for this one) has ended:
    killed outright, its work must not run on. A thread that polls every ``every`` seconds."""

    def watch() -> None:
        while True:
            time.sleep(every)
            try:
                os.kill(driver, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, someone else's: not ours to judge
                pass

    threading.Thread(target=watch, daemon=True).start()


def end_with(driver: int, *, parent: int | None = None) -> None:
    """Both at once, as every child that works for a driver starts: the kernel's request
    (:func:`die_with_parent` with ``parent``) and a thread watching ``driver`` (:func:`exit_when_gone`)."""
    die_with_parent(parent)
    exit_when_gone(driver)
