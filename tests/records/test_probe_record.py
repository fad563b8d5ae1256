"""The probe record read once at the edge (records/probe_record.py): a record the probe
wrote reads back as it is, and an edited or truncated one is refused in one line naming
the file and the key, before any job acts on it."""

from __future__ import annotations

import json

import pytest

from foldstudy.io import MalformedFile, write_json
from foldstudy.records.probe_record import REQUIRED, probe_problems, read_probe

RECORD = {"model": "m", "backend": "openrouter", "verdict": "ok", "reason": "",
          "responsible_parameter": "", "required_context_tokens": 2827,
          "pin": {"provider_name": "A"}, "shapes": [{"shape": "plain", "verdict": "ok"}],
          "permissions": {"j": {"allowed": True, "verdict": "ok", "reason": "",
                                "responsible_parameter": ""}},
          "probe_arms": {}, "probe_only": False, "context_length": 8192,
          "price_prompt_usd_per_token": 1e-07, "price_completion_usd_per_token": None,
          "served_by_other": {}}


def test_a_probe_record_reads_back_as_written(tmp_path):
    write_json(RECORD, tmp_path / "m.json")
    assert read_probe(tmp_path / "m.json") == RECORD
    # the keys a record of an endpoint that could not be built lacks may be absent
    bare = {k: v for k, v in RECORD.items() if k in REQUIRED}
    assert probe_problems(bare) == []


@pytest.mark.parametrize("edit, said", [
    (lambda r: r.pop("permissions"), "permissions: missing"),
    (lambda r: r.update(verdict=None), "verdict: null is not text"),
    (lambda r: r.update(required_context_tokens=True),
     "required_context_tokens: true is not an integer"),
    (lambda r: r.update(context_length="8k"), 'context_length: "8k" is not an integer or null'),
    (lambda r: r["permissions"].update(j={"allowed": "yes", "verdict": "ok"}),
     "permissions.j: not {allowed: true or false, verdict: text}"),
])
def test_an_edited_probe_record_is_refused_by_file_and_key(tmp_path, edit, said):
    rec = json.loads(json.dumps(RECORD))
    edit(rec)
    write_json(rec, tmp_path / "m.json")
    with pytest.raises(MalformedFile) as e:
        read_probe(tmp_path / "m.json")
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'm.json'}: not a probe record (") and said in msg
    assert "\n" not in msg and msg.endswith("rerun the probe (snakemake --forcerun probe_model)")


def test_a_truncated_probe_record_is_refused_in_one_line(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps(RECORD)[:40], encoding="utf-8")
    with pytest.raises(MalformedFile, match=r"m\.json: not readable as a probe record"):
        read_probe(tmp_path / "m.json")
    (tmp_path / "m.json").write_text("[]", encoding="utf-8")
    with pytest.raises(MalformedFile, match="not a JSON object"):
        read_probe(tmp_path / "m.json")
