"""What every fixture is written as, generated or read from a user's session: the
fixture JSON and its manifest, and the characters-a-token convention both are sized by.

Below both builders (study/fixtures.py generates a session, study/sessions.py reads one)
so each writes its fixture through the same two functions and neither imports the other.
"""

from __future__ import annotations

from typing import Any

from ..io import write_json
from .fixture_types import Fixture

# Characters a token is taken to be wherever fixture text is sized before any tokenizer
# is loaded: the generator (a chunk of the paper's 30,000 tokens is 30,000 x scale x 3.0
# characters), fixture.json's token estimates, the probe's required context and the
# audit's plan.tsv. A sizing convention, not a measurement: SmolLM2's tokenizer counts
# 2.4-2.6 characters a token on this identifier-dense text (capacity.TEXT_CHARS_PER_TOKEN
# is that measurement; prose runs ~4), so these estimates run 13-20% under a model's count.
# Kept apart from the measurement because either changed would change what is written:
# fixture text, fixture.json, probe records, plan.tsv or the config check's messages.
CHARS_PER_TOKEN = 3.0


def size_meta(chunks: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The size figures every fixture's meta carries, by the one convention above."""
    return {"chars_per_token_estimate": CHARS_PER_TOKEN,
            "session_tokens_estimate": round(sum(len(c) for c in chunks) / CHARS_PER_TOKEN)}


def manifest(fixture: Fixture) -> dict[str, Any]:
    """Where every planted fact sits: the reviewer's map of the fixture."""
    return {
        "scenario": fixture.scenario,
        "seed": fixture.seed,
        "scale": fixture.scale,
        **fixture.meta,
        "chunk_chars": [len(c) for c in fixture.chunks],
        "n_planted": len(fixture.facts),
        "n_graded": len(fixture.graded),
        "graded_chunks": sorted({f.chunk for f in fixture.graded}),
        **({"n_control": len(fixture.controls)} if fixture.controls else {}),
        "facts": [
            {
                "fact_id": f.fact_id,
                "fact_class": f.fact_class,
                "graded": f.graded,
                **({"control": True} if f.control else {}),
                "label": f.label,
                "value": f.value,
                "segment": f.segment,
                "chunk": f.chunk,
                "offset": f.offset,
            }
            for f in fixture.facts
        ],
    }


def write_fixture(fixture: Fixture, fixture_out: str, manifest_out: str) -> dict[str, Any]:
    """Write the fixture and its manifest; the manifest, for the job's log line."""
    write_json(fixture.to_dict(), fixture_out)
    m = manifest(fixture)
    write_json(m, manifest_out)
    return m
