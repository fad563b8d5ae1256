"""Claims quoted in a write-up (resources/claims/<study>.yaml), judged against this
run's numbers: reproduced, not reproduced, or not checkable here, and which of those is
drift that fails verify."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..evidence.provenance import Mismatch

# How a claim quoted in a write-up is checked (resources/claims/<study>.yaml `kind`):
CLAIM_KINDS = {
    # a count or value of the paper's own corpus: checked against its evidence package
    # only (evidence mode); a fresh run cannot produce the paper's row counts
    "exact": "checked against the paper's own evidence package (evidence mode)",
    # fixed by the study's design on any run of it (fourteen checks per row)
    "design": "checked on any run of the study",
    # a measured quantity: reproduced when the paper's value lies inside this run's
    # interval (the claim names the interval's keys and how it is computed)
    "behavioural": "reproduced when the paper's value is inside this run's interval",
    # what the paper found of its rows (§4.10: "not a single row in which the answer was
    # right about a fact the carrier did not contain"): reproduced or not on any run,
    # never drift; a run whose rows say otherwise has a finding, not a broken package
    "finding": "a finding of the paper's rows, reproduced or not on any run, never drift",
}
# The kinds whose failure is drift that fails verify.
DRIFT_KINDS = ("exact", "design")


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim, what this run says about it, and the verdict."""

    key: str
    kind: str
    claimed: Any
    where: str
    verdict: str  # reproduced | not reproduced | not checkable here
    value: Any = None
    low: Any = None
    high: Any = None
    method: str = ""
    why: str = ""

    def row(self) -> str:
        val = "—" if self.value is None else f"{self.value:.6g}"
        iv = (f"[{self.low:.4g}, {self.high:.4g}] ({self.method})" if self.low is not None
              else "—")
        return (f"| `{self.key}` | {self.kind} | {self.claimed!r} | {val} | {iv} | "
                f"**{self.verdict}**{': ' + self.why if self.why else ''} | {self.where} |")


def judge_claims(claims: Iterable[dict[str, Any]], recomputed: dict[str, Any], package: bool
                 ) -> list[ClaimVerdict]:
    """Each claim's verdict on these numbers (CLAIM_KINDS). `package`: the evidence is a
    released package (evidence mode), where exact claims are checkable."""
    out = []
    for c in claims:
        key, claimed, kind = c["key"], c["value"], c.get("kind", "exact")
        tol, where = float(c.get("tolerance", 0.0)), c.get("where", "claim")
        if kind not in CLAIM_KINDS:
            raise ValueError(f"claim {key}: kind {kind!r} is not one of "
                             f"{', '.join(CLAIM_KINDS)}")
        base = {"key": key, "kind": kind, "claimed": claimed, "where": where,
                "value": recomputed.get(key)}
        if kind == "exact" and not package:
            out.append(ClaimVerdict(**base, verdict="not checkable here",
                                    why="an exact claim about the paper's corpus; checked "
                                        "when verifying the paper's evidence package"))
            continue
        if key not in recomputed:
            out.append(ClaimVerdict(**base, verdict="not checkable here" if kind !=
                                    "exact" else "not reproduced",
                                    why="no such number in this run's evidence"))
            continue
        value = float(recomputed[key])
        if kind == "behavioural":
            iv = c.get("interval") or {}
            lo, hi = recomputed.get(iv.get("low", "")), recomputed.get(iv.get("high", ""))
            if lo is None or hi is None:
                out.append(ClaimVerdict(**base, verdict="not checkable here",
                                        why="this run has no interval for it"))
                continue
            inside = float(lo) - tol <= float(claimed) <= float(hi) + tol
            out.append(ClaimVerdict(**base, low=lo, high=hi, method=iv.get("method", ""),
                                    verdict="reproduced" if inside else "not reproduced",
                                    why="" if inside else "the paper's value is outside "
                                                          "this run's interval"))
            continue
        ok = abs(value - float(claimed)) <= tol + 1e-12
        out.append(ClaimVerdict(**base, verdict="reproduced" if ok else "not reproduced",
                                why="" if ok else f"differs by more than ± {tol:g}"))
    return out


def claim_mismatches(verdicts: list[ClaimVerdict], source: str) -> list[Mismatch]:
    """The verdicts that are drift: an exact or design claim, checkable here, that does
    not hold. A behavioural claim outside a run's interval, or a finding the run does not
    reproduce, is a finding of that run, reported beside the others, not drift."""
    out = []
    for v in verdicts:
        if v.kind in DRIFT_KINDS and v.verdict == "not reproduced":
            detail = (f"claims {v.claimed!r}; not recomputable from the evidence"
                      if v.value is None else f"claims {v.claimed!r}; recomputed {v.value!r}")
            out.append(Mismatch(v.key, f"{source} ({v.where})", detail))
    return out


def check_claims(claims: Iterable[dict[str, Any]], recomputed: dict[str, Any], source: str
                 ) -> list[Mismatch]:
    """Numbers quoted in a write-up, read against the evidence as the paper's package."""
    return claim_mismatches(judge_claims(claims, recomputed, package=True), source)


def claims_report(source: str, verdicts: list[ClaimVerdict] | None, why_none: str = "") -> str:
    """The claims section of the verify report: which file, how many, each verdict."""
    head = "## Claims\n\n"
    if verdicts is None:
        return head + f"No claim checked: {why_none}\n"
    counts = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    lines = [f"Read {source}: {len(verdicts)} claims ("
             + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ").", "",
             "Kinds: " + "; ".join(f"{k}: {d}" for k, d in CLAIM_KINDS.items()) + ".", "",
             "| key | kind | paper | this run | 95% interval | verdict | where |",
             "|---|---|---:|---:|---|---|---|", *(v.row() for v in verdicts)]
    return head + "\n".join(lines) + "\n"
