"""matplotlib, set up once for every figure the workflow draws.

Imported on the first draw, not with the module that draws: the jobs that read a drawing
module for its names (the summary reads the trace's fate kinds) draw nothing, and
pyplot took about 0.7 s of each such job's start (2026-12-04).
"""

from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType:
    """pyplot on the file-only Agg backend (no display on a cluster node), its SVG ids
    drawn from content so a replay writes the same bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "foldstudy"
    return plt
