"""Where the reader's pages live, relative to their folder (docs/design.md §8): pure strings, kept
free of heavy imports so the Snakefile can name a page at DAG time (the summary links
the first block's comparison page) and the viewer can link the comparison pages without
loading them."""

from __future__ import annotations


def block_path(sweep: str, model: str, repeat: int) -> str:
    """A block's page relative to results/compare/: <sweep>/<model>/r<repeat>.html."""
    return f"{sweep}/{model}/r{repeat}.html"


def arm_path(sweep: str, arm: str) -> str:
    """The two-model page of one arm in one sweep, relative to results/compare/."""
    return f"{sweep}/arm-{arm}.html"
