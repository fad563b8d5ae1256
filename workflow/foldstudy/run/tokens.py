"""Token accounting (paper §6): characters per token by text class, against an exact
tokenizer.

Paper §6, Token accounting: "Prompt sizing used a character-ratio estimator for gateway
sweeps and an exact tokenizer for the local reference, so absolute token figures are not
comparable across those two. The estimator is also content-dependent in both
directions: measured against a reference tokenizer it undercounts identifier-dense text
and overcounts prose. We report the measured per-class ratios rather than a single
multiplier".

The classes are the study's own text: each fact class's planted values (graded or not,
each distinct value once, tokenized on its own), and the session's prose (every chunk
with its planted values cut out). The reference is each study model whose backend
counts tokens exactly (an embedded GGUF's vocabulary; `Backend.replay_tokenizer`). A
gateway model counts by the estimator, so it has no row: there is nothing exact to
measure the estimator against. The estimator is the one the harness sizes prompts with
(backends.base.CHARS_PER_TOKEN_ESTIMATE, 4 characters per token).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..backends import backend_class, resolve_model_config
from ..backends.base import CHARS_PER_TOKEN_ESTIMATE, Tokenizer
from ..errors import StudyError
from ..io import read_json, write_csv
from ..records.probe_record import read_probe
from ..study.fixture_types import Fixture

log = logging.getLogger(__name__)

COLUMNS = ["model", "text_class", "items", "chars", "tokens", "chars_per_token",
           "estimate_tokens", "estimate_error"]
PROSE = "prose"


def class_texts(fixtures: list[Fixture]) -> dict[str, list[str]]:
    """Text per class, sorted by class: each fact class's distinct planted values, and
    'prose', the chunks with every planted value cut out (what carries the facts)."""
    values: dict[str, set[str]] = defaultdict(set)
    prose: list[str] = []
    for fx in fixtures:
        planted = sorted({f.value for f in fx.facts}, key=len, reverse=True)
        for f in fx.facts:
            values[f.fact_class].add(f.value)
        for chunk in fx.chunks:
            for v in planted:  # longest first: a value inside another goes with it
                chunk = chunk.replace(v, "")
            prose.append(chunk)
    out = {c: sorted(v) for c, v in sorted(values.items())}
    out[PROSE] = prose
    return out


def measure(texts: dict[str, list[str]], tokenizer: Tokenizer, model: str
            ) -> list[dict[str, Any]]:
    """One row per class: characters, exact tokens, and how far the estimator lands.

    estimate_error = estimate / exact - 1: negative where the estimator undercounts
    (identifier-dense text, per §6), positive where it overcounts (prose).
    """
    rows = []
    for cls, items in texts.items():
        chars = sum(len(t) for t in items)
        tokens = sum(tokenizer.count_tokens(t) for t in items)
        if not tokens:
            continue
        estimate = chars / CHARS_PER_TOKEN_ESTIMATE
        rows.append({"model": model, "text_class": cls, "items": len(items), "chars": chars,
                     "tokens": tokens, "chars_per_token": round(chars / tokens, 4),
                     "estimate_tokens": round(estimate, 2),
                     "estimate_error": round(estimate / tokens - 1, 4)})
    return rows


class ModelUnusable(StudyError, RuntimeError):
    """A model the probe could not load (a GGUF missing or not the pinned one): its
    tokenizer is never opened, so the study stops on the probe's own words."""


def require_loadable(probes: dict[str, dict[str, Any]], models: dict[str, dict[str, Any]]
                     ) -> None:
    """Refuse, before any file is opened, a model whose backend the probe could not make
    (its record has no endpoint): the probe already said why, by file."""
    for name in sorted(models):
        rec = probes.get(name)
        if rec is not None and "endpoint" not in rec:
            gguf = models[name].get("gguf")
            where = f" (models.{name}.gguf: {gguf})" if gguf else ""
            raise ModelUnusable(
                f"models.{name}{where}: the probe could not load this model: "
                f"{rec.get('reason', '')}. No token is counted against it and no fold ran; "
                f"fix models.{name} (the file, or its sha256) and run again")


def token_classes(fixture_paths: list[str], models: dict[str, dict[str, Any]], out: str,
                  probes: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """results/stats/chars-per-token.csv over every model with an exact tokenizer."""
    require_loadable(probes or {}, models)
    texts = class_texts([Fixture.from_dict(read_json(p)) for p in fixture_paths])
    rows: list[dict[str, Any]] = []
    for name, cfg in sorted(models.items()):
        resolved = resolve_model_config(cfg)
        tokenizer = backend_class(resolved["backend"]).replay_tokenizer(resolved)
        if tokenizer is None:
            log.info("%s: no exact tokenizer (%s counts by the estimator); no row", name,
                     resolved["backend"])
            continue
        try:
            rows += measure(texts, tokenizer, name)
        finally:
            tokenizer.close()
        log.info("%s: %d classes measured against its tokenizer", name,
                 sum(r["model"] == name for r in rows))
    import pandas as pd  # heavy; this job only

    write_csv(pd.DataFrame(rows, columns=COLUMNS), out)
    return rows


def token_classes_stage(input: Any, output: Any, params: Any) -> list[dict[str, Any]]:
    """Rule token_classes: characters per token by text class (paper §6)."""
    probes = {Path(p).stem: read_probe(p) for p in input.probes}
    return token_classes(list(input.fixtures), params.models, output.table, probes)
