"""results/probe/summary.tsv: one line per model's probe record (run/probe.py), the
operator's page before a run: its verdict, the arms it allows and forbids, the pin, the
prices, the reasoning comparison, the probe_arms' and native compaction's verdicts, and
any request another model served."""

from __future__ import annotations

import logging
from typing import Any

from ..io import write_tsv
from ..records.probe_record import read_probe

log = logging.getLogger(__name__)


SUMMARY_COLUMNS = ["model", "backend", "verdict", "responsible_parameter", "arms_allowed",
                   "arms_forbidden", "pin", "quantization", "context_length",
                   "required_context_tokens", "usd_per_mtok_prompt", "usd_per_mtok_completion",
                   "reason", "sends_reasoning", "verdict_with_reasoning",
                   "verdict_without_reasoning", "probe_only", "probe_arms",
                   "native_compaction", "served_by_other"]


def summary_row(rec: dict[str, Any]) -> dict[str, Any]:
    perms = rec.get("permissions", {})
    pin = rec.get("pin") or {}
    rp = rec.get("reasoning_parameter") or {}

    def per_m(v: Any) -> str:
        return "" if v is None else f"{float(v) * 1e6:.4g}"

    return {
        "model": rec["model"], "backend": rec["backend"], "verdict": rec["verdict"],
        "responsible_parameter": rec.get("responsible_parameter", ""),
        "arms_allowed": "".join(a for a, p in perms.items() if p["allowed"]),
        "arms_forbidden": "".join(a for a, p in perms.items() if not p["allowed"]),
        "pin": pin.get("provider_name") or "", "quantization": pin.get("quantization") or "",
        "context_length": rec.get("context_length") or "",
        "required_context_tokens": rec.get("required_context_tokens", ""),
        "usd_per_mtok_prompt": per_m(rec.get("price_prompt_usd_per_token")),
        "usd_per_mtok_completion": per_m(rec.get("price_completion_usd_per_token")),
        "reason": " ".join(str(rec.get("reason", "")).split())[:300],
        "sends_reasoning": _flag(rp.get("study_sends_reasoning")) if rp else "",
        "verdict_with_reasoning": (rp.get("with") or {}).get("verdict", ""),
        "verdict_without_reasoning": (rp.get("without") or {}).get("verdict", ""),
        "probe_only": _flag(rec.get("probe_only", False)),
        "probe_arms": probe_arms_cell(rec.get("probe_arms") or {}),
        "native_compaction": native_cell(rec.get("native_compaction") or {}),
        # `plain=claude-other`: the probe's request another model served (fell_back)
        "served_by_other": " ".join(f"{s}={m}" for s, m in
                                    (rec.get("served_by_other") or {}).items()),
    }


def native_cell(native: dict[str, Any]) -> str:
    """The summary's native_compaction cell: the verdict, mechanism and beta, and the
    parameter responsible where one was named (`native_compaction_refused on_demand
    compact-2026-09-04 (anthropic-beta: compact-2026-09-04)`); empty for a backend with
    no native compaction."""
    if not native:
        return ""
    cell = " ".join(v for v in (native.get("verdict"), native.get("mechanism"),
                                native.get("beta")) if v)
    return cell + (f" ({native['responsible_parameter']})"
                   if native.get("responsible_parameter") else "")


def probe_arms_cell(verdicts: dict[str, dict[str, Any]]) -> str:
    """The summary's probe_arms cell: each arm probed and never folded, with its verdict
    (`j=schema_advertised_reply_nonconforming`); empty when the study names none."""
    return " ".join(f"{a}={v['verdict']}" for a, v in sorted(verdicts.items()))


def _flag(v: Any) -> str:
    return "true" if v else "false"


def write_probe_summary(probe_paths: list[str], out: str) -> None:
    """results/probe/summary.tsv: one line per model, the operator's page before a run."""
    write_tsv((summary_row(read_probe(p)) for p in probe_paths), SUMMARY_COLUMNS, out)
    log.info("%s: %d models", out, len(probe_paths))


def probe_stage(input: Any, output: Any, params: Any) -> None:
    """Rule probe: the summary table of every model's verdict."""
    write_probe_summary(list(input.verdicts), output.summary)
