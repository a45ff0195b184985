"""Shared test setup: strict internal errors (an exception inside dynjit fails the test
instead of silently running the frame plain), and a fixed seed per test so random inputs
are reproducible."""
import os

os.environ.setdefault("DYNJIT_STRICT", "1")     # before dynjit is imported: child processes too

import pytest  # noqa: E402

import dynjit  # noqa: E402

dynjit.config.strict_internal_errors = True


@pytest.fixture(autouse=True)
def _seed_everything():
    dynjit.manual_seed(0)
    yield
