from __future__ import annotations

import json

import pytest

from foldstudy.study.fixture_files import manifest
from foldstudy.study.fixtures import build_fixture


def make(scenario, seed, facts_spec, filler, grading, scale=0.03):
    return build_fixture(scenario, seed, scale, facts_spec, filler,
                         set(grading["stock_signature"]["ports"]))


@pytest.mark.parametrize("seed", [1, 2, 3, 20260728])
def test_distributed_segments_land_in_five_distinct_folds(seed, facts_spec, filler, grading):
    fx = make("distributed", seed, facts_spec, filler, grading)
    m = manifest(fx)
    assert m["n_planted"] == 50 and m["n_graded"] == 14
    assert len(fx.chunks) == 5
    segment_chunk = {f["segment"]: f["chunk"] for f in m["facts"]}
    assert sorted(segment_chunk.values()) == [0, 1, 2, 3, 4]
    assert m["graded_chunks"] == [0, 1, 2, 3, 4]


def test_manifest_records_where_each_fact_sits(facts_spec, filler, grading):
    fx = make("distributed", 7, facts_spec, filler, grading)
    for f in manifest(fx)["facts"]:
        chunk = fx.chunks[f["chunk"]]
        assert chunk[f["offset"]: f["offset"] + len(f["value"])] == f["value"]


def test_graded_classes_and_decoys(facts_spec, filler, grading):
    fx = make("distributed", 5, facts_spec, filler, grading)
    classes = sorted(f.fact_class for f in fx.graded)
    assert classes.count("port") == 2 and classes.count("utc_time") == 3
    assert {"path", "shard_count", "uuid", "url", "dns_zone", "key_id", "handle",
            "release_tag", "cyrillic_department"} <= set(classes)
    dept = next(f.value for f in fx.graded if f.fact_class == "cyrillic_department")
    assert any("\u0400" <= ch <= "\u04ff" for ch in dept)
    decoys = {f.fact_class for f in fx.facts if not f.graded}
    assert decoys == {"cluster_id", "tenant_code", "licence_key", "image_digest"}


@pytest.mark.parametrize("scenario", ["distributed", "single_chunk"])
@pytest.mark.parametrize("seed", range(6))
def test_no_graded_value_is_a_substring_of_another_or_of_a_decoy(
    scenario, seed, facts_spec, filler, grading
):
    fx = make(scenario, seed, facts_spec, filler, grading)
    values = [f.value for f in fx.facts]
    session = "\n".join(fx.chunks)
    for g in fx.graded:
        assert not [v for v in values if v != g.value and g.value in v]
        assert session.count(g.value) == 1  # stated once, nowhere else in the session


def test_values_avoid_the_stock_signature(facts_spec, filler, grading):
    stock = set(grading["stock_signature"]["ports"])
    for seed in range(20):
        fx = make("distributed", seed, facts_spec, filler, grading)
        for f in fx.graded:
            if f.fact_class == "port":
                assert int(f.value) not in stock and int(f.value) % 10
            if f.fact_class == "utc_time":
                assert int(f.value[3:5]) % 5
            if f.fact_class == "shard_count":
                n = int(f.value.split()[0])
                assert n % 5 and n % 8 and n & (n - 1)
            assert "example" not in f.value


def test_single_chunk_plants_28_grades_7_in_one_chunk(facts_spec, filler, grading):
    m = manifest(make("single_chunk", 3, facts_spec, filler, grading))
    assert m["n_planted"] == 28 and m["n_graded"] == 7
    assert len({f["chunk"] for f in m["facts"]}) == 1


def test_same_seed_same_bytes_other_seed_other_values(facts_spec, filler, grading):
    a = json.dumps(make("distributed", 11, facts_spec, filler, grading).to_dict())
    b = json.dumps(make("distributed", 11, facts_spec, filler, grading).to_dict())
    c = make("distributed", 12, facts_spec, filler, grading)
    assert a == b
    old = {f["value"] for f in json.loads(a)["facts"]}
    assert not old & {f.value for f in c.facts}


def test_scale_multiplies_session_size(facts_spec, filler, grading):
    small = make("distributed", 1, facts_spec, filler, grading, scale=0.02)
    big = make("distributed", 1, facts_spec, filler, grading, scale=0.08)
    ratio = sum(map(len, big.chunks)) / sum(map(len, small.chunks))
    assert 3.0 < ratio < 4.5  # 4x the scale, less the fixed-size planted segments
