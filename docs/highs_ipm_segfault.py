"""Reproduce a segmentation fault in HiGHS's interior point (highspy 1.16.0), for an upstream report.

    python docs/highs_ipm_segfault.py [folder]

Writes the LP that crashed (1.5 MB of MPS: the first column-generation master of S = every
10th count of 0..10,000, squared loss, alpha = 0.9, started from the minimax game's columns
with the game's probe switched off), then solves it with plain highspy in a child process
with HiGHS's *default* options and ``solver = "ipm"``, and reports how the child ended.
Measured on 2026-11-26: the child dies with SIGSEGV whether crossover is on or off; with
``presolve = "off"`` HiGHS returns "Solve error" instead. dpopt itself no longer builds this
master: the game gives way where its Lagrangian bound proves the gain below
``GAME_MIN_GAIN`` (see :mod:`dpopt.programs.column_generation.game`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import highspy, sys
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.readModel(sys.argv[1])
h.setOptionValue("solver", "ipm")
h.run()
print(h.modelStatusToString(h.getModelStatus()))
"""


def write_master(path: Path) -> None:
    """Write the first master's LP to ``path`` (MPS) and stop before solving it."""
    import dpopt.programs.column_generation.solve as loop
    from dpopt.problems.count_query import CountQuery
    from dpopt.programs.column_generation import game, master

    game.GAME_MIN_GAIN = 0.0  # the probe would send this S to the usual start
    configure = master.Master._configure

    class Written(Exception):
        pass

    def write_then_stop(self, strategy):
        configure(self, strategy)
        self.h.writeModel(str(path))
        raise Written

    master.Master._configure = write_then_stop
    n = 10_000
    problem = CountQuery(n=n, alpha=0.9, loss="squared", side_information=list(range(0, n + 1, 10)))
    try:
        loop.solve_by_column_generation(problem)
    except Written:
        pass
    finally:
        master.Master._configure = configure


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    path = folder / "highs_ipm_segfault.mps"
    write_master(path)
    child = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True)
    ending = f"signal {-child.returncode}" if child.returncode < 0 else f"exit {child.returncode}: {child.stdout.strip()}"
    print(f"{path} ({path.stat().st_size} bytes): highspy's default IPM ended with {ending}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
