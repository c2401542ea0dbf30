"""Repository-wide pytest settings.

nbval compares stored and fresh outputs, but skips cells marked
NBVAL_IGNORE_OUTPUT (timings, ids, pids). Stray stderr, such as a warning,
must fail even there, so every cell's streams pass through this check.

`make test` runs the suite in passes (see the Makefile): most files on several
pytest-xdist workers, and the files in SERIAL alone, after the rest
(`--serial skip` leaves them out, `--serial only` runs only them).
"""

from pathlib import Path

import nbval.plugin as _nbval
import pytest

ROOT = Path(__file__).resolve().parent

# Files that cannot share the server with anything else running, or must run after the
# other lessons, and why. A notebook's cells, like a test file's tests, stay together.
SERIAL = {
    "tests/test_faults.py": "restarts the server (PGQ_RESTART_CMD), ending every session on it",
    "tests/test_operations.py": "sets autovacuum_naptime server-wide, ends a lab role's sessions "
    "and reads the oldest transaction in every database",
    "notebooks/10-operations.ipynb": "runs the same labs as tests/test_operations.py",
    "tests/test_browser_lessons_10_12.py": "runs notebooks/10-operations.ipynb in JupyterLab",
    "notebooks/12-the-interview.ipynb": "quotes the measurements the other lessons record, "
    "so it runs after them, as in a run one notebook at a time",
}


def _refuse_stderr(outputs):
    merged = _coalesce(outputs)
    for out in merged:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            raise AssertionError(f"stray stderr in a notebook cell (a warning?):\n{out['text'][:2000]}")
    return merged


_coalesce = _nbval.coalesce_streams
_nbval.coalesce_streams = _refuse_stderr


def pytest_addoption(parser):
    parser.addoption(
        "--serial",
        choices=("include", "skip", "only"),
        default="include",
        help="the files that must run alone (conftest.py SERIAL): include them (the default), "
        "skip them (for a parallel pass), or run only them",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: must run alone, after the rest (conftest.py SERIAL)")
    parallel = not hasattr(config, "workerinput") and (config.getoption("numprocesses", None) or 0)
    if parallel and config.getoption("serial") != "skip":
        raise pytest.UsageError(
            "some files restart or change the whole server (conftest.py SERIAL): with -n, add "
            "--serial skip, then run them alone with --serial only (make test does both)"
        )


def is_serial(item: pytest.Item) -> bool:
    """Whether the item's file is one of SERIAL."""
    try:
        return Path(str(item.path)).resolve().relative_to(ROOT).as_posix() in SERIAL
    except ValueError:  # a file outside the repository
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_serial(item):
            item.add_marker(pytest.mark.serial)
        # Under `--dist loadgroup` a file's items stay on one worker (a notebook's cells share
        # its kernel), and the browser tests all run on one: their kernels use the lessons'
        # own database names, which two of them would share (the claim exercise's scratch).
        group = "browser" if item.get_closest_marker("browser") else Path(str(item.path)).name
        item.add_marker(pytest.mark.xdist_group(group))
    wanted = config.getoption("serial")
    if wanted == "include":
        return
    keep, drop = [], []
    for item in items:
        (keep if is_serial(item) == (wanted == "only") else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
