from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"


@pytest.fixture(scope="session")
def resources() -> Path:
    return RESOURCES


@pytest.fixture(scope="session")
def facts_spec() -> dict:
    return yaml.safe_load((RESOURCES / "facts.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def filler() -> dict:
    return yaml.safe_load((RESOURCES / "scenario" / "filler.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def grading() -> dict:
    return yaml.safe_load((RESOURCES / "grading.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def config_schema() -> dict:
    return yaml.safe_load((ROOT / "config/schema/config.schema.yaml").read_text(encoding="utf-8"))
