"""What the fold tests of this folder share: the study's prompts, read from resources/
as the fold job reads them, and the provider a test is parametrized over (indirect), its
key set where the backend reads it."""

from __future__ import annotations

import pytest

from foldstudy.run.fold import Prompts


@pytest.fixture(scope="module")
def prompts(resources):
    d = resources / "prompts"
    return Prompts.from_files(d / "fold_user.md.j2", d / "recall_system.md",
                              d / "recall_user.md.j2")


@pytest.fixture()
def provider(request, monkeypatch):
    """The Provider (tests/backends/test_backend_providers.py) of `indirect` params."""
    monkeypatch.setenv("PROVIDER_TEST_KEY", request.param.key)
    return request.param
