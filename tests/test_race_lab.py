"""The race lab widget, headless, on a real PostgreSQL: Run fills the result
panel from the RaceResult, Stop ends a run early, and an experiment's error
reaches both the status area and the notebook cell."""

import time

import psycopg
import pytest

from helpers import chart_rows, counts, shown_charts
from pgq_teach import databases
from pgq_teach.experiments.race import STYLES, guide_version_for
from pgq_teach.widgets.lab import ExperimentPanel
from pgq_teach.widgets.race_lab import RaceLab


def test_defaults_are_the_guides_settings(db):
    lab = RaceLab(db)
    assert (lab.workers.value, lab.jobs.value, lab.work_ms.value) == (8, 400, 10)
    assert (
        lab.workers.min,
        lab.workers.max,
        lab.jobs.min,
        lab.jobs.max,
        lab.work_ms.min,
        lab.work_ms.max,
    ) == (1, 16, 10, 2_000, 0, 50)
    assert [key for _, key in lab.mode.options] == list(STYLES)
    assert lab.settings() == {"mode": "naive", "workers": 8, "jobs": 400, "work_ms": 10}
    assert lab.guess.value is None  # no guess until one is typed, never 0


def test_run_puts_the_results_numbers_in_the_output(db):
    lab = RaceLab(db, workers=4, jobs=100, work_ms=2, mode="naive")
    lab.run_button.click()
    lab.wait(60)
    lab.guess.value = 7
    lab.run_button.click()
    assert lab.output.value == ""  # the old result is cleared as soon as the new run starts
    result = lab.wait(60)

    assert result is lab.result and result.done == 100 and result.guess == 7
    html = lab.output.value
    assert f'<b class="pgq-run-twice">{result.run_more_than_once:,}</b>' in html
    assert f"<td class=pgq-num>{result.total_runs:,}</td>" in html
    assert "<td class=pgq-num>7</td>" in html  # the guess, beside this server's count
    assert f"{result.elapsed_s:.2f} s" in html and f"{result.serial_ideal_s:.2f} s serial" in html
    (timeline,) = shown_charts(lab.chart_box)  # the run's lanes, red where a job ran twice
    kinds = {row["kind"] for row in chart_rows(timeline, "bar")}
    assert ("a job run more than once" in kinds) == (result.run_more_than_once > 0)
    assert timeline["layer"][0]["encoding"]["color"]["scale"]["domain"] == [
        "a job run once",
        "a job run more than once",
    ]  # the legend names both, whatever this run drew
    assert lab.progress.value == lab.progress.max == 100
    assert lab.status.value.startswith("done")
    assert not lab.run_button.disabled and lab.stop_button.disabled


def test_the_course_claim_runs_nothing_twice_through_the_widget(db):
    lab = RaceLab(db, workers=4, jobs=60, work_ms=1, mode="lease_skip_locked")
    lab.run_button.click()
    result = lab.wait(60)
    assert result.run_more_than_once == 0 and result.total_runs == 60
    assert '<b class="pgq-run-twice">0</b>' in lab.output.value
    assert 'class="twice"' not in lab.output.value


def test_controls_are_read_when_the_run_starts(db):
    lab = RaceLab(db, workers=2, jobs=40, work_ms=1, mode="lease_skip_locked")
    lab.run_button.click()
    lab.workers.value = 16  # too late for this run
    assert lab.wait(60).workers == 2


def test_stop_ends_a_long_run_early(db):
    lab = RaceLab(db, workers=1, jobs=2_000, work_ms=50, mode="lease_skip_locked")  # about 100 s in full
    lab.run_button.click()
    assert lab.run_button.disabled and not lab.stop_button.disabled
    first = lab.runner.thread
    assert lab.start() is False and lab.runner.thread is first  # one run at a time
    time.sleep(0.5)
    with db.connection() as conn:
        claimed = sum(n for status, n in counts(conn).items() if status != "ready")
    lab.stop_button.click()
    result = lab.wait(30)
    # Stop claims no more: the run ends with the job in hand, plus at most one claimed between
    # that count and the click (one worker). What happened, not how soon.
    assert result.stopped and 0 < result.done <= claimed + 1 < 2_000
    assert lab.status.value.startswith("stopped early") and "stopped early" in lab.output.value
    assert lab.progress.value < lab.progress.max


@pytest.fixture
def bare_db(db):
    """A database with no course tables: the race fails on its first statement."""
    label = db.name.removeprefix(databases.PREFIX) + "_bare"
    yield databases.open_database(label, reset=True, schema=False)
    databases.drop_database(label)


def test_an_experiment_error_shows_in_the_status_and_wait_raises_it(bare_db):
    lab = RaceLab(bare_db, workers=2, jobs=10, work_ms=0)
    lab.run_button.click()
    with pytest.raises(psycopg.errors.UndefinedTable):
        lab.wait(30)
    assert 'class="pgq-error"' in lab.status.value and "UndefinedTable" in lab.status.value
    assert "does not exist" in lab.status.value
    assert lab.output.value == "" and lab.result is None
    assert not lab.run_button.disabled and lab.stop_button.disabled


@pytest.mark.parametrize("major, expected", [(16, 16), (18, 18), (15, 16), (17, 18), (19, 18)])
def test_the_guide_row_follows_the_servers_major_version(major, expected):
    assert guide_version_for(major) == expected


def test_the_guide_column_says_when_settings_differ_from_the_guides(db):
    base = dict(workers=8, jobs=400, work_ms=10)
    lab = RaceLab(db, workers=2, jobs=20, work_ms=0, mode="naive")
    lab.run_button.click()
    result = lab.wait(60)
    assert "yours differ" in result.guide_figure_text()
    result.workers, result.jobs, result.work_ms = base["workers"], base["jobs"], base["work_ms"]
    assert "yours differ" not in result.guide_figure_text()
    assert f"on PostgreSQL {guide_version_for(db.server.major)}" in result.guide_figure_text()
    result.mode = "lease_skip_locked"
    assert result.guide_figure_text().startswith("none")


def test_the_panel_sets_its_progress_bar_from_one_thread_only(db):
    """Worker threads only record progress; one relay thread sets the widget
    (many short-lived senders can delay the kernel's end-of-cell message)."""
    import threading

    senders = set()

    def experiment(*, progress, stop, guess):
        workers = [threading.Thread(target=progress, args=(n, 40)) for n in range(1, 41)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        return "ok"

    panel = ExperimentPanel(experiment, lambda result: result)
    panel.progress.observe(lambda change: senders.add(threading.get_ident()), names="value")
    panel.run_button.click()
    assert panel.wait(10) == "ok"
    assert panel.progress.value == panel.progress.max == 40
    assert len(senders) == 1 and threading.get_ident() not in senders


def test_a_panel_says_what_to_do_next_and_shows_its_done_state_when_its_run_ends():
    """The status line tells the learner what to press, then that the run is
    done, and the lab carries the class pgq-done only once it is."""
    panel = ExperimentPanel(
        lambda *, progress, stop, guess: f"ran with {guess}",
        lambda result: result,
        guess_label="guess?",
        guess_unit="jobs",
        guess_plausible=(0, 10),
    )
    assert panel.status.value == "Type your guess, then press Run." and not panel.done
    panel.guess.value = 3
    assert panel.run_and_wait(10) == "ran with 3"
    assert panel.output.value == "ran with 3"
    assert panel.done and "pgq-done" in panel._dom_classes
    assert panel.status.value.startswith("done:") and "press Run again" in panel.status.value
    assert panel.progress.value == panel.progress.max  # the bar fills when the run ends
    panel.guess.box.value = "not a number"
    assert panel.guess.value is None
    panel.run_button.click()
    panel.wait(10)
    assert panel.done  # done again after a second run
    panel.close()
    assert not panel.done and panel.run_button.disabled and panel.status.value.startswith("closed")


def test_a_failed_run_is_not_done_and_says_why():
    def broken(*, progress, stop, guess):
        raise ValueError("the experiment broke")

    panel = ExperimentPanel(broken)
    assert panel.status.value == "Press Run."
    panel.run_button.click()
    with pytest.raises(ValueError):
        panel.wait(10)
    assert not panel.done and "the experiment broke" in panel.status.value
    assert not panel.run_button.disabled and panel.stop_button.disabled
