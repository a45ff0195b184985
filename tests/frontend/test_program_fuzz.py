"""Differential fuzzing of the frontend with generated programs (see program_fuzz.py).

The default run checks a fixed set of seeds, split into several items so that
pytest-xdist balances them; the slow run (``-m slow``) checks DYNJIT_FUZZ_N
programs (default 20000) from a random seed (printed; set DYNJIT_FUZZ_SEED to
replay) with DYNJIT_FUZZ_JOBS worker processes (default 2).

A failure message lists the failing seeds grouped by failure class, with one
minimized reproducer; replay a seed with
``python -m tests.frontend.program_fuzz --check SEED``.
"""
import os
import random

import pytest

import program_fuzz as pf

CHUNKS = 8
PER_CHUNK = 100
BASE_SEED = 20240


def _run(seed, n, jobs, minimize_checks, minimize_time, max_minimized=None):
    results, failures, report = pf.fuzz(n, seed, jobs=jobs, minimize_per_class=1, min_checks=minimize_checks,
                                        min_time=minimize_time, verbose=False, max_minimized=max_minimized)
    errors = [r for r in results if "fuzzer_error" in r]
    if len(results) != n or errors or failures:
        pytest.fail(f"{len(results)} of {n} programs ran\n{report}", pytrace=False)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_program_fuzz(chunk):
    # a failing item minimizes only its first failure class, briefly, to stay within the time budget
    _run(BASE_SEED + chunk * PER_CHUNK, PER_CHUNK, jobs=1, minimize_checks=40, minimize_time=10.0, max_minimized=1)


@pytest.mark.slow
def test_program_fuzz_long():
    n = int(os.environ.get("DYNJIT_FUZZ_N", "20000"))
    seed = int(os.environ.get("DYNJIT_FUZZ_SEED", random.randrange(10 ** 9)))
    jobs = int(os.environ.get("DYNJIT_FUZZ_JOBS", "2"))
    print(f"program_fuzz: {n} programs from seed {seed} (DYNJIT_FUZZ_SEED={seed} to replay)")
    _run(seed, n, jobs=jobs, minimize_checks=200, minimize_time=90.0)
