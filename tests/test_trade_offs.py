"""Lesson 12's trade-offs as one two-column table per property (widgets.rehearsal.trade_offs_html):
every system's cell under every property, each with its source's footnote, nothing lost from
the seven-column table it replaces (interview.trade_off_markdown)."""

from __future__ import annotations

import re
from html import escape

from pgq_teach import interview
from pgq_teach.interview import content as interview_content
from pgq_teach.widgets.rehearsal import trade_offs_html


def test_every_property_is_a_two_column_table_of_every_system_with_its_source():
    systems, rows = interview_content.trade_offs()
    html = trade_offs_html()
    assert html.count("<table") == len(rows)
    assert all(len(re.findall(r"<th[ >]", table)) == 2 for table in html.split("<table")[1:])
    for row in rows:
        assert f"<b>{escape(row.title)}</b>" in html
    for name in systems.values():
        assert html.count(f">{name}<") == len(rows)
    # the same cells and footnotes as the wide table: nothing dropped in the change
    wide = interview.trade_off_markdown()
    assert re.findall(r"\[(\d+)\]", wide) == re.findall(r"\[(\d+)\]", html)
