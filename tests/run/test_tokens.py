"""Token accounting (paper §6): characters per token by text class, exact against the
estimator.

Paper §6: "measured against a reference tokenizer it undercounts identifier-dense text
and overcounts prose. We report the measured per-class ratios rather than a single
multiplier". The reference here is the embedded model's own GGUF vocabulary (loaded
vocabulary-only: no weights run).
"""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from foldstudy.backends.embedded import GGUFTokenizer, packaged_weights
from foldstudy.report.tables.probe import t_chars_per_token
from foldstudy.run.tokens import PROSE, class_texts, measure, token_classes
from foldstudy.study.fixture_types import Fact, Fixture

from ..study.test_fixtures import make


@pytest.fixture(scope="module")
def tokenizer():
    tok = GGUFTokenizer.vocab_only(packaged_weights())
    yield tok
    tok.close()


def test_classes_are_the_planted_values_and_the_prose_around_them():
    fx = Fixture("distributed", 1, 1.0, ("port 4242 then uuid ab-cd, again 4242.", "x"),
                 (Fact("p", "port", "4242", True), Fact("u", "uuid", "ab-cd", True),
                  Fact("q", "port", "4242", False)))
    texts = class_texts([fx, fx])  # the same values twice count once
    assert texts["port"] == ["4242"] and texts["uuid"] == ["ab-cd"]
    # prose: every chunk of every fixture, planted values cut out
    assert texts[PROSE] == ["port  then uuid , again .", "x"] * 2


def test_each_class_counts_its_own_tokens_against_the_estimator(tokenizer, facts_spec, filler,
                                                                grading):
    fx = make("distributed", 20260728, facts_spec, filler, grading, scale=0.035)
    texts = class_texts([fx])
    rows = {r["text_class"]: r for r in measure(texts, tokenizer, "smollm2-135m")}
    assert set(rows) == set(texts) and {f.fact_class for f in fx.facts} <= set(rows)
    for cls, r in rows.items():
        assert r["chars"] == sum(len(t) for t in texts[cls])
        assert r["tokens"] == sum(tokenizer.count_tokens(t) for t in texts[cls])
        assert r["chars_per_token"] == pytest.approx(r["chars"] / r["tokens"], abs=1e-4)
        # the estimator's 4 chars per token: under where the text packs fewer chars per
        # token than 4 (negative error), over where it packs more
        assert r["estimate_tokens"] == pytest.approx(r["chars"] / 4, abs=0.01)
        assert (r["estimate_error"] < 0) == (r["chars_per_token"] < 4)
    # Identifiers are dense: a UUID's hex packs fewer characters per token than prose.
    assert rows["uuid"]["chars_per_token"] < rows[PROSE]["chars_per_token"]


def test_only_models_with_an_exact_tokenizer_get_rows(tmp_path, facts_spec, filler, grading):
    fx = make("distributed", 3, facts_spec, filler, grading, scale=0.035)
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fx.to_dict()))
    out = tmp_path / "chars-per-token.csv"
    rows = token_classes([str(path)], {
        "local": {"backend": "embedded"},
        "hosted": {"backend": "openrouter", "model_id": "acme/x"}}, str(out))
    assert rows and {r["model"] for r in rows} == {"local"}
    with open(out, newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    # A study of gateway models only measures nothing, and its table says why.
    assert token_classes([str(path)], {"hosted": {"backend": "openrouter",
                                                  "model_id": "acme/x"}}, str(out)) == []
    assert "estimator" in t_chars_per_token(pd.read_csv(out)).cells()[0][0]
    assert "evidence package" in t_chars_per_token(None).cells()[0][0]
