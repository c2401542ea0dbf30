"""Every measurement a later lesson or the interview quotes is recorded by some lesson.

A measurement is defined once, in pgq_teach/measurements.py; a quote reads it through
that constant. So the one way a quote can point at nothing is a constant that no lab
ever records, or a lesson that records around the registry with a key of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgq_teach import measurements

PACKAGE = Path(measurements.__file__).resolve().parent
SOURCES = {
    p: p.read_text(encoding="utf-8")
    for p in PACKAGE.rglob("*.py")
    if p.name not in {"measurements.py", "learner.py"}
}
CONSTANTS = sorted(n for n, v in vars(measurements).items() if isinstance(v, measurements.Measurement))


@pytest.mark.parametrize("name", CONSTANTS)
def test_every_measurement_is_recorded_somewhere(name):
    recorded_by = [
        p.name for p, text in SOURCES.items() if re.search(rf"\brecord\(\s*(measurements\.)?{name}\b", text)
    ]
    assert recorded_by, f"measurements.{name} is defined (and may be quoted) but no module records it"


def test_each_key_is_defined_once():
    keys = [(getattr(measurements, n).lesson, getattr(measurements, n).key) for n in CONSTANTS]
    assert len(keys) == len(set(keys)), "two constants name the same lesson and key"


def test_nothing_records_or_reads_around_the_registry():
    around = [
        p.relative_to(PACKAGE).as_posix()
        for p, text in SOURCES.items()
        if re.search(r"record_measurement\(|learner\.measurement\(", text)
    ]
    assert not around, f"these modules record or read a measurement by a key of their own: {around}"


def test_the_run_recorded_lesson_11s_drain_for_lesson_12():
    """In `make test` lesson 11 runs only in the browser suite, whose kernels write to the run's
    learner folder (PGQ_TEST_HOME, tests/jupyter_browser.py kernel_home), as nbval's did; lesson
    12, alone after the rest, quotes that drain. Run with it (conftest.py SERIAL)."""
    import os

    from jupyter_browser import chromium_path

    if not os.environ.get("PGQ_TEST_HOME") or chromium_path() is None:
        pytest.skip("only in make test's second pass, with the browser suite run")
    assert os.environ.get("PGQ_HOME") == os.environ["PGQ_TEST_HOME"]
    drain = measurements.read(measurements.DRAIN_JOBS_PER_S_11)
    assert drain is not None and float(drain["value"]) > 0, drain
