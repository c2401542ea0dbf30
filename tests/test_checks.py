"""The shared input checks (pgq_teach.checks): each returns the value it was
given, in the form its caller wants, or raises BadInput saying what to give."""

from datetime import datetime, timedelta, timezone

import pytest

from pgq_teach import checks
from pgq_teach.errors import BadInput


@pytest.mark.parametrize(
    "call, value",
    [
        (lambda: checks.whole_number("jobs", 5, 1, 10), 5),
        (lambda: checks.whole_number("seed", 10**12, 0), 10**12),
        (lambda: checks.number("hold_s", 2, 0.5, 5), 2.0),
        (lambda: checks.seconds("poll", 0.25, 0.01, 60), 0.25),
        (lambda: checks.fraction("fail_rate", 0), 0.0),
        (lambda: checks.one_of("mode", "skip", ("skip", "wait")), "skip"),
        (lambda: checks.job_kind("send_receipt"), "send_receipt"),
        (lambda: checks.lease(90), timedelta(seconds=90)),
        (lambda: checks.run_at(None), None),
    ],
)
def test_good_input_comes_back(call, value):
    assert call() == value


def test_a_whole_number_keeps_its_type_and_a_number_becomes_a_float():
    assert type(checks.whole_number("n", 3, 1, 5)) is int
    assert type(checks.number("x", 3, 1, 5)) is float


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda: checks.whole_number("jobs", 0, 1, 10), "jobs must be from 1 to 10, got 0"),
        (lambda: checks.whole_number("jobs", 11, 1, 10), "jobs must be from 1 to 10, got 11"),
        (lambda: checks.whole_number("seed", -1, 0), "seed must be at least 0, got -1"),
        (lambda: checks.whole_number("jobs", True, 1, 10), "jobs must be a whole number, got True"),
        (lambda: checks.whole_number("jobs", 2.0, 1, 10), "jobs must be a whole number, got 2.0"),
        (lambda: checks.whole_number("jobs", "3", 1, 10), "jobs must be a whole number, got '3'"),
        (
            lambda: checks.number("hold_s", float("nan"), 0.5, 5),
            "hold_s must be a number from 0.5 to 5, got nan",
        ),
        (lambda: checks.number("hold_s", float("inf"), 0.5, 5), "got inf"),
        (lambda: checks.number("hold_s", 6, 0.5, 5), "hold_s must be a number from 0.5 to 5, got 6"),
        (lambda: checks.number("hold_s", False, 0, 5), "got False"),
        (
            lambda: checks.seconds("poll", 0, 0.01, 60),
            "poll must be a number of seconds from 0.01 to 60, got 0",
        ),
        (
            lambda: checks.fraction("fail_rate", 1),
            "fail_rate must be a fraction from 0 up to (not including) 1",
        ),
        (lambda: checks.fraction("fail_rate", -0.1), "got -0.1"),
        (
            lambda: checks.one_of("mode", "nowait", ("skip", "wait")),
            "mode must be one of skip, wait; got 'nowait'",
        ),
        (lambda: checks.one_of("mode", ["skip"], {"skip"}), "got ['skip']"),
        (lambda: checks.job_kind(""), "kind must be a non-empty string"),
        (lambda: checks.job_kind("k" * 201), "keep it to 200"),
        (lambda: checks.job_payload({"x": float("nan")}), "payload must be JSON-serialisable"),
        (lambda: checks.lease(0), "lease must be longer than zero"),
        (lambda: checks.lease("5 minutes"), "lease must be a timedelta or seconds"),
        (lambda: checks.run_at(datetime(2030, 1, 1)), "run_at must be timezone-aware"),
        (lambda: checks.run_at("tomorrow"), "run_at must be a datetime"),
    ],
)
def test_bad_input_is_refused_with_a_message_that_names_it(call, says):
    with pytest.raises(BadInput) as err:
        call()
    assert says in str(err.value)


def test_run_at_turns_a_delay_into_a_time_from_now():
    before = datetime.now(timezone.utc)
    when = checks.run_at(timedelta(minutes=5))
    assert before + timedelta(minutes=5) <= when <= datetime.now(timezone.utc) + timedelta(minutes=5)


def test_no_module_reaches_into_another_for_a_private_name():
    """The checks used to be borrowed as queue._check_positive_int; nothing
    imports an underscored name from another module of the package now."""
    import ast
    from pathlib import Path

    root = Path(checks.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        ours = set()  # names bound to the package's own modules: from . import queue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                offenders += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
                ours |= {a.asname or a.name for a in node.names}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                if isinstance(node.value, ast.Name) and node.value.id in ours:
                    offenders.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert offenders == [], offenders
