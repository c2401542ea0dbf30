"""The one table renderer and its human formats (pgq_teach/tables.py): durations,
counts with their unit's singular and plural, sizes, `–` for none, and a
terminal table that keeps to the terminal's width."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pgq_teach import tables
from pgq_teach.tables import Column, Markup, Table


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.00003, "0.03 ms"),
        (0.0088, "8.80 ms"),
        (0.0882, "88.2 ms"),
        (0.8823, "882 ms"),
        (35.360231, "35.4 s"),
        (59.96, "1 min 0 s"),
        (125, "2 min 5 s"),
        (3600, "1 h 0 min"),
        (3600 * 26 + 60 * 7, "26 h 7 min"),
        (timedelta(seconds=35, microseconds=360231), "35.4 s"),
        (None, "–"),
    ],
)
def test_durations_read_as_a_person_says_them(seconds, shown):
    assert tables.duration(seconds) == shown


def test_milliseconds_go_through_the_same_format():
    assert tables.milliseconds(882.3) == "882 ms"
    assert tables.milliseconds(1500) == "1.5 s"
    assert tables.milliseconds(None) == "–"


@pytest.mark.parametrize(
    ("n", "unit", "shown"),
    [
        (1, "buffer", "1 buffer"),
        (2, "buffer", "2 buffers"),
        (0, "row", "0 rows"),
        (1, "row", "1 row"),
        (1_609, "buffer", "1,609 buffers"),
        (1, "job", "1 job"),
        (3, "process", "3 processes"),
        (2, "entry", "2 entries"),
        (2, "day", "2 days"),
        (None, "job", "–"),
    ],
)
def test_counts_take_the_singular_only_for_one(n, unit, shown):
    assert tables.count(n, unit) == shown


def test_an_irregular_plural_is_given():
    assert tables.count(2, "dead row version", "dead row versions") == "2 dead row versions"
    assert tables.count(1, "dead row version", "dead row versions") == "1 dead row version"


@pytest.mark.parametrize(
    ("n_bytes", "shown"),
    [(1, "1 byte"), (512, "512 bytes"), (8192, "8.0 kB"), (29 * 1024**2 + 5000, "29 MB"), (None, "–")],
)
def test_sizes_count_as_pg_size_pretty_does(n_bytes, shown):
    assert tables.size(n_bytes) == shown


def test_human_never_shows_none_or_a_timedelta_raw():
    assert tables.human(None) == "–"
    assert tables.human(timedelta(seconds=35.36)) == "35.4 s"
    assert tables.human(12_000) == "12,000"
    assert tables.human(2.5) == "2.50"
    assert tables.human(True) == "yes"


def test_a_column_names_its_unit_in_the_header_and_formats_its_cells():
    assert Column("empty claim", tables.COUNT, unit="buffer").header == "empty claim, buffers"
    assert Column("drain", tables.SECONDS).cell(timedelta(seconds=35.36)) == "35.4 s"
    assert Column("claim", tables.MILLISECONDS).cell(0.03) == "0.03 ms"
    assert Column("size", tables.BYTES).cell(29 * 1024**2) == "29 MB"
    assert Column("removed", tables.COUNT).cell(None) == "–"
    with pytest.raises(ValueError, match="kind"):
        Column("x", "minutes")


def sample() -> Table:
    return Table(
        tables.columns(
            "step", Column("empty claim", tables.COUNT, unit="buffer"), Column("at", tables.SECONDS)
        ),
        [["1. <drain>", 1_609, 35.360231], ["2. vacuum", 1, None]],
        css="pgq-steps",
        row_attrs=[{"class": "pgq-step", "data-n": "1"}, {"class": "pgq-step", "data-n": "2"}],
        caption="this server: PostgreSQL 18.6",
    )


def test_html_pads_right_aligns_numbers_and_keeps_the_row_attributes():
    html = sample().html()
    assert 'class="pgq-table pgq-steps"' in html and "padding:4px 12px" in html
    assert "<th>step</th><th class=pgq-num>empty claim, buffers</th>" in html
    assert '<tr class="pgq-step" data-n="1"><td>1. &lt;drain&gt;</td><td class=pgq-num>1,609</td>' in html
    assert "<td class=pgq-num>35.4 s</td>" in html and "<td class=pgq-num>–</td>" in html
    assert "<caption>this server: PostgreSQL 18.6</caption>" in html
    assert "None" not in html


def test_a_figure_never_wraps_but_text_in_a_column_of_numbers_and_headers_may():
    """At 800 px the guide's "212–238 on PostgreSQL 18 (measured with ...)" kept on one line
    made lesson 01's comparison table 868 px in a 620 px output area."""
    guide = "212–238 on PostgreSQL 18 (measured with 8 workers, 400 jobs, 10 ms; yours differ)"
    heads = tables.columns("measure", Column("the guide", tables.NUMBER))
    html = Table(heads, [["x", 7], ["y", guide]]).html()
    assert "<td class=pgq-num>7</td>" in html
    assert f'<td class="pgq-num pgq-words">{guide}</td>' in html
    assert "td.pgq-num{white-space:nowrap}" in html and "td.pgq-words{white-space:normal}" in html
    assert "<th class=pgq-num>the guide</th>" in html  # a header takes no nowrap: its words may wrap


def test_markup_cells_keep_their_html_and_lose_it_in_a_terminal():
    table = Table(tables.columns("verdict"), [[Markup("<b>does not hold</b> A&#x27;s")]])
    assert "<td><b>does not hold</b> A&#x27;s</td>" in table.html()
    assert "does not hold A's" in table.text(40) and "<b>" not in table.text(40)


@pytest.mark.parametrize("width", [40, 80, 120])
def test_the_terminal_table_keeps_to_the_width_and_every_figure(width):
    long = Table(
        tables.columns("experiment", "guide's figure", "this server", Column("took", tables.SECONDS)),
        [
            [
                "a claim with FOR UPDATE SKIP LOCKED, in batches of 100, " * 2,
                "1,609 buffers (PG 18)",
                "882 ms",
                35.4,
            ]
        ],
    )
    text = long.text(width)
    assert max(len(line) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    for figure in ("1,609", "882 ms", "35.4 s"):
        assert figure in flat or figure.replace(" ", "") in flat.replace(" ", ""), (figure, text)


def test_the_terminal_width_comes_from_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    assert tables.terminal_width() == 60
    assert max(len(line) for line in sample().text().splitlines()) <= 60


def test_fit_wraps_prose_to_the_width_and_keeps_its_indent():
    text = tables.fit("  " + "word " * 40, width=30)
    assert all(len(line) <= 30 and line.startswith("  ") for line in text.splitlines())


def test_an_empty_table_still_has_its_header_in_a_terminal():
    text = Table(tables.columns("job", "status"), []).text(40)
    assert "job" in text and "status" in text


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_table_too_wide_for_the_terminal_cuts_no_word_and_parts_no_unit_from_its_figure(width):
    """rich crops what does not fit at the right edge ("end st" for "end state") and folds a
    narrow column inside a word; a table that cannot keep every word whole is shown as records."""
    table = Table(
        [
            Column("setup"),
            Column("median", tables.NUMBER, "jobs/s", digits=0),
            Column("min–max", unit="jobs/s"),
            Column("× ceiling", tables.NUMBER),
            Column("× PgQueuer", tables.NUMBER),
            Column("wake-ups per job", tables.NUMBER),
            Column("end state"),
        ],
        [["LISTEN/NOTIFY wake-up latency", 34_012.4, "33,990–35,110", 0.63, None, 1.0, "not installed"]],
    )
    text = table.text(width)
    words = set(text.split())
    assert max(len(line) for line in text.splitlines()) <= width, text
    for shown in ("LISTEN/NOTIFY", "34,012", "33,990–35,110", "installed", "state", "PgQueuer", "wake-ups"):
        assert shown in words or any(shown in w for w in words), (shown, text)
    assert not any(line.strip() in {"jobs/s", "ms", "s"} for line in text.splitlines()), text


def test_the_sessions_table_leaves_out_catalog_xmin_only_when_no_row_has_one():
    """Lesson 10's dashboard: with a column of dashes no session fills, its nine columns were
    656 px in an 800 px window's 620 px output area."""
    from pgq_teach.widgets.common import sessions_html

    row = {"pid": 7, "datname": "pgq", "state": "idle in transaction", "xact_age": 35.4}
    row |= {"backend_xid": None, "backend_xmin": 812, "catalog_xmin": None, "holder": "session"}
    html = sessions_html([row])
    assert "<th>catalog_<wbr>xmin</th>" not in html and "<caption>catalog_xmin: none" in html
    assert "<th>backend_<wbr>xid</th>" in html  # an empty ID column stays: lesson 09's point
    slot = row | {"pid": None, "backend_xmin": None, "catalog_xmin": 790, "holder": "replication slot"}
    both = sessions_html([row, slot])
    assert "<th>catalog_<wbr>xmin</th>" in both and "<td>790</td>" in both and "<caption>" not in both
