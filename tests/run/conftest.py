"""What the fold tests of this folder share: the study's prompts, read from resources/
as the fold job reads them."""

from __future__ import annotations

import pytest

from foldstudy.run.fold import Prompts


@pytest.fixture(scope="module")
def prompts(resources):
    d = resources / "prompts"
    return Prompts.from_files(d / "fold_user.md.j2", d / "recall_system.md",
                              d / "recall_user.md.j2")
