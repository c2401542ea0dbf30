"""The browser check every lesson's charts go through
(`jupyter_browser.chart_text_problems`) can fail: in a tiny page in Chromium
(no JupyterLab, so it is quick), a chart with two labels at one spot and one
past its edge is caught, and a clean chart, or one whose hidden label overlaps, passes."""

from __future__ import annotations

import pytest

from jupyter_browser import ARTIFACTS, BROWSER_TESTS, chart_text_problems

pytestmark = BROWSER_TESTS

# Vega-embed's structure (a div.vega-embed holding the SVG), drawn by hand so
# that each label lands exactly where the test needs it.
PAGE = """<html><body style="margin:20px;font-family:sans-serif">
<div id="broken"><div class="vega-embed"><svg class="marks" width="300" height="120">
  <text x="10" y="20" font-size="13">Table size during the drain</text>
  <text x="200" y="60" font-size="11">guide: 29 MB</text>
  <text x="205" y="62" font-size="11">32.98</text>
  <text x="260" y="100" font-size="11">3600.00 s (the 1 h cap)</text>
</svg></div></div>
<div id="clean"><div class="vega-embed"><svg class="marks" width="300" height="120">
  <text x="10" y="20" font-size="13">Table size during the drain</text>
  <text x="200" y="60" font-size="11">guide: 29 MB</text>
  <text x="205" y="62" font-size="11" opacity="0">32.98</text>
  <text x="10" y="100" font-size="11">3,600 s</text>
  <text x="100" y="100" font-size="11"> </text>
</svg></div></div>
</body></html>"""


@pytest.fixture
def chart_page(chromium):
    context = chromium.new_context(viewport={"width": 800, "height": 400})
    page = context.new_page()
    page.set_content(PAGE)
    yield page
    context.close()


def test_overlapping_and_clipped_labels_are_reported(chart_page):
    problems = chart_text_problems(chart_page.locator("#broken"))
    chart_page.locator("#broken").screenshot(path=str(ARTIFACTS / "chart-text-broken.png"))
    assert any('"guide: 29 MB" overlaps "32.98"' in p for p in problems), problems
    assert any('"3600.00 s (the 1 h cap)" falls outside' in p for p in problems), problems
    assert len(problems) == 2, problems


def test_a_readable_chart_passes_and_hidden_or_blank_text_is_left_out(chart_page):
    assert chart_text_problems(chart_page.locator("#clean")) == []
