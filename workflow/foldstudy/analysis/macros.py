"""results/stats/numbers.tex: one LaTeX command per number of numbers.json, so a
manuscript cites each figure by name (icc.value -> \\fsIccValue) and a rebuilt study
rewrites them all. Written by the stats rule beside numbers.json (analysis/numbers.py)."""

from __future__ import annotations

import re

from .view import Number

_DIGITS = "Zero One Two Three Four Five Six Seven Eight Nine".split()


def macro_name(key: str) -> str:
    """A LaTeX command name (letters only) for a number key: icc.value -> \\fsIccValue."""
    words = re.split(r"[^A-Za-z0-9]+", key)
    out = []
    for w in words:
        w = re.sub(r"\d", lambda m: _DIGITS[int(m.group())], w)
        if w:
            out.append(w[0].upper() + w[1:])
    return "fs" + "".join(out)


def format_number(value: Number) -> str:
    if isinstance(value, int):
        return f"{value:,}".replace(",", "{,}")
    if value != 0 and abs(value) < 1e-3:
        mant, exp = f"{value:.1e}".split("e")
        return f"{mant}\\times 10^{{{int(exp)}}}"
    return f"{value:.3f}"


def latex_macros(numbers: dict[str, Number]) -> str:
    """One \\newcommand per number; keys whose letters collide get a letter suffix."""
    lines = ["% Generated from results/stats/numbers.json by rule stats; do not edit.",
             "% One command per key; the key is in the comment after each."]
    used: set[str] = set()
    for key in sorted(numbers):
        base = name = macro_name(key)
        n = 0
        while name in used:
            n, suffix = n + 1, ""
            i = n
            while i:
                i, r = divmod(i - 1, 26)
                suffix = chr(ord("A") + r) + suffix
            name = base + "X" + suffix
        used.add(name)
        lines.append(f"\\newcommand{{\\{name}}}{{\\ensuremath{{{format_number(numbers[key])}}}}}"
                     f" % {key}")
    return "\n".join(lines) + "\n"
