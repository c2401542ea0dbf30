"""Lesson 10b's check cells hold for knobs other than the lesson's: each is run here, as the
notebook holds it, against labs run on a real server with two other settings of every lab's
knobs (a backlog that is not a multiple of the batch, a batch wider than the tenants in line,
a per_tenant above 1, a run shorter than the aging threshold)."""

from pathlib import Path

import nbformat
import pytest

from pgq_teach.experiments import fairness, priorities

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "10b-priorities-and-fairness.ipynb"


def check_cells(name: str) -> list[str]:
    """The notebook's untagged code cells that assert on the result named `name`, in order."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return [
        c.source
        for c in cells
        if c.cell_type == "code" and "assert" in c.source and not c.metadata.get("tags") and name in c.source
    ]


def run_checks(name: str, result: object) -> None:
    cells = check_cells(name)
    assert cells, name
    namespace = {name: result}
    for source in cells:
        exec(compile(source, f"10b check on {name}", "exec"), namespace)


@pytest.mark.parametrize("knobs", [{"backlog": 510, "batch": 20}, {"backlog": 7, "batch": 50}], ids=str)
def test_the_urgent_checks_hold_for_other_knobs(db, knobs):
    run_checks("urgent", priorities.urgent(db, **knobs))


@pytest.mark.parametrize(
    "knobs",
    [
        {"flood": 300, "tenants": 7, "each": 3, "batch": 5, "per_tenant": 2},
        {"flood": 50, "tenants": 30, "each": 2, "batch": 200, "per_tenant": 1_000},
    ],
    ids=str,
)
def test_the_flood_checks_hold_for_other_knobs(db, knobs):
    run_checks("flooded", fairness.flood(db, **knobs))


@pytest.mark.parametrize(
    "knobs",
    [{"load": 3, "rounds": 60, "age_after_s": 0.02}, {"load": 5, "rounds": 3, "age_after_s": 60}],
    ids=str,
)
def test_the_starvation_checks_hold_for_other_knobs(db, knobs):
    run_checks("starved", priorities.starvation(db, **knobs))
