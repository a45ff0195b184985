"""Shared test setup: a fixed seed per test so random inputs are reproducible."""
import pytest

import dynjit


@pytest.fixture(autouse=True)
def _seed_everything():
    dynjit.manual_seed(0)
    yield
