"""A native arm's compacted window goes back as the provider returned it, item types this
project does not know included: OpenAI's compact endpoint now follows the compaction item
with a `configuration_update` item, and the compaction guide's rule is that the next
request sends the returned window first, unchanged. Dropping or rewriting an item the
backend does not know would change what the provider reads next."""

from __future__ import annotations

import pytest

from foldstudy.backends import make_backend
from foldstudy.backends.store import ResponseStore
from foldstudy.run.fold import Sample, run_row

from ..run.conftest import prompts  # noqa: F401 - a module fixture
from ..run.test_native_fold import fixture, native  # noqa: F401 - module fixtures
from .test_backend_providers import OPENAI


@pytest.fixture()
def keyed(monkeypatch):
    monkeypatch.setenv("PROVIDER_TEST_KEY", OPENAI.key)


def fold_all(standin, store, fixture, arm, prompts, replay: bool = False):  # noqa: F811
    backend = make_backend("m", OPENAI.cfg(standin), replay=replay)
    return run_row(fixture, arm, backend, store, prompts, Sample("s", "m", "native", 0, 0, 3),
                   temperature=0.2, recall_max_tokens=300).to_dict()


def test_a_configuration_update_after_the_compaction_item_is_replayed_unchanged(
        keyed, fixture, native, prompts, tmp_path):  # noqa: F811
    with OPENAI.start(seed=2, loss=0.3, configuration_update=True) as s:
        rec = fold_all(s, ResponseStore(tmp_path), fixture, native, prompts)
    n = len(fixture.chunks)
    assert rec["infra_error"] is None and len(s.calls) == n + 1
    windows = [f["reply"]["raw"]["compaction"] for f in rec["folds"]]
    # the stand-in's window ends with the compaction item and the configuration update
    assert all([i["type"] for i in w[-2:]] == ["compaction", "configuration_update"]
               for w in windows)
    for i, call in enumerate(s.calls[1:n], start=1):  # each later fold sends the last
        assert call.body["input"][:-1] == windows[i - 1]
    recall = s.calls[n].body["input"]
    assert recall[:len(windows[-1])] == windows[-1]
    assert rec["native"]["item"] == windows[-1]

    # a replay from the store alone sends the same window again, byte for byte
    with OPENAI.start(seed=2, loss=0.3, configuration_update=True) as s2:
        again = fold_all(s2, ResponseStore(tmp_path), fixture, native, prompts, replay=True)
    assert s2.calls == [] and again["native"]["item"] == windows[-1]
