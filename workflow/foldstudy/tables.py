"""Tables from the evidence: pure functions of rows.csv, rendered by jinja2 templates."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from . import columns
from .evidence import read_csv


def recall_by_model_arm(rows: pd.DataFrame) -> pd.DataFrame:
    """Recall per (sweep, model, arm) over valid rows, with denominators.

    Rows are near-binary (paper §4), so a mean stands for a small count: n_valid,
    rows_full and rows_ge_half travel with every mean.
    """
    out = []
    for (sweep, model, arm), g in rows.groupby(["sweep", "model", "arm"], sort=True):
        v = g[g["valid"]]
        r = v["recall"].astype(float)
        out.append({
            "sweep": sweep, "model": model, "arm": arm,
            "n_valid": len(v),
            "mean_recall": round(r.mean(), 6) if len(v) else None,
            "rows_full": int((r >= 1.0).sum()),
            "rows_ge_half": int((r >= 0.5).sum()),
            "n_rows": len(g),
            "n_invalid": int((~g["valid"]).sum()),
        })
    return pd.DataFrame(out, columns=columns.RECALL_TABLE)


def render(template_dir: Path, name: str, **context: object) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(name).render(**context)


def write_tables(rows_csv: str, resources: str | Path, out_dir: str) -> None:
    rows = read_csv(rows_csv)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = recall_by_model_arm(rows)
    table.to_csv(out / "recall-by-model-arm.csv", index=False, lineterminator="\n")
    (out / "recall-by-model-arm.md").write_text(
        render(Path(resources) / "templates", "recall-by-model-arm.md.j2",
               rows=table.to_dict("records"), source=rows_csv),
        encoding="utf-8",
    )
