"""The interview's follow-ups quote lessons 10b's and 10c's measurements through the
measurement store (one number, one source): each lab, run small on a real server, records
its figures, and the follow-up's model answer says exactly those, with their lesson and time;
before a lab has run, the answer quotes nothing and shows no unfilled field."""

from __future__ import annotations

import re

import pytest

from pgq_teach import interview, measurements
from pgq_teach.experiments import alerts, fairness, priorities, rate_limits, timeouts
from pgq_teach.interview.estimation import readable

# follow-up -> (the measurement it quotes, the lab that records it, run small)
LABS = {
    "fairness": (
        measurements.FLOOD_WAITS_10B,
        lambda db: fairness.flood(db, flood=300, tenants=5, each=2, batch=10),
    ),
    "priorities": (measurements.URGENT_AHEAD_10B, lambda db: priorities.urgent(db, backlog=200, batch=10)),
    "rate_limit": (
        measurements.PARTNER_QUOTA_10B,
        lambda db: rate_limits.partner_quota(db, workers=2, per_second=20, seconds=1),
    ),
    "long_job": (
        measurements.HUNG_HANDLER_10C,
        lambda db: timeouts.hung_handler(db, lease_s=1.0, watch_s=1.0, timeout_s=0.5),
    ),
    "slo_alerts": (
        measurements.LATE_INVOICES_10C,
        lambda db: alerts.late_invoices(db, jobs=40, late=2, backoff_base_s=0.2),
    ),
}


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


def test_each_quoted_measurement_is_one_the_follow_up_names():
    for key, (which, _) in LABS.items():
        assert [m.measurement for m in interview.follow_up(key).measured] == [which], key


@pytest.mark.parametrize("key", sorted(LABS))
def test_a_follow_up_quotes_nothing_before_its_lab_has_run(fresh_home, key):
    text = interview.follow_up(key).model()
    assert "On your server" not in text and "your server (lesson" not in text
    assert not re.search(r"\{[a-z_0-9]+\}", text), "an unfilled field"


@pytest.mark.parametrize("key", sorted(LABS))
def test_a_follow_up_quotes_the_figures_its_lab_stored(fresh_home, db, key):
    which, lab = LABS[key]
    result = lab(db)
    stored = measurements.read(which)
    assert stored is not None, f"{which.key} was not recorded"
    assert stored["value"] == pytest.approx(result.quoted())  # the store holds the lab's own figures
    text = interview.follow_up(key).model()
    [measured] = interview.follow_up(key).measured
    for field, value in stored["value"].items():
        if "{" + field + "}" in measured.says:
            said = value if isinstance(value, str) else readable(float(value))
            assert said in text, (field, said)
    assert f"measured in lesson {which.lesson} at {stored['at']}" in text
    assert not re.search(r"\{[a-z_0-9]+\}", text), "an unfilled field"
