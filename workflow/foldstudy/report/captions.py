"""The report's figure captions (workflow/report/figure-*.rst), generated from report/titles.

Snakemake's report() takes a caption as a file beside the rule, not as text, so each
figure's caption, written once in its entry of report/titles.FIGURES, is rendered here
into workflow/report/figure-<name>.rst; a test fails when the files and the registry
disagree (a caption edited in one place only, a caption file with no figure). Regenerate
them with

    .venv/bin/python -m foldstudy.report.captions
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from . import titles

ROOT = Path(__file__).resolve().parents[3]
REPORT_DIR = ROOT / "workflow" / "report"


def caption_rst(entry: titles.FigureEntry) -> str:
    """One caption file's text: the entry's caption, one paragraph wrapped at 88 columns
    (no note that the file is generated: the report would carry it as an HTML comment)."""
    return textwrap.fill(" ".join(entry.caption.split()), 88, break_on_hyphens=False) + "\n"


def rendered() -> dict[str, str]:
    """Caption file name -> its text, for every figure of the registry, in its order."""
    return {f.caption_file: caption_rst(f) for f in titles.FIGURES}


def stale(report_dir: Path = REPORT_DIR) -> list[str]:
    """The caption files that differ from the registry: missing, edited by hand, or left
    behind by a figure no longer declared."""
    want = rendered()
    have = {p.name for p in report_dir.glob("figure-*.rst")}
    return sorted(name for name in want.keys() | have
                  if name not in want or name not in have
                  or (report_dir / name).read_text(encoding="utf-8") != want[name])


def write(report_dir: Path = REPORT_DIR) -> list[Path]:
    """Write every figure's caption file and remove those of figures no longer declared."""
    want = rendered()
    for p in report_dir.glob("figure-*.rst"):
        if p.name not in want:
            p.unlink()
    out = []
    for name, text in want.items():
        p = report_dir / name
        p.write_text(text, encoding="utf-8")
        out.append(p)
    return out


def main() -> None:
    for p in write():
        print(p.relative_to(ROOT))


if __name__ == "__main__":
    main()
