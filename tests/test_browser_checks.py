"""The on-screen checks every lab must pass (tests/jupyter_browser.py) can fail:
each is run in Chromium, without JupyterLab, on a plain page that breaks it on
purpose, and on the same page mended."""

from __future__ import annotations

import pytest

from jupyter_browser import (
    BROWSER_TESTS,
    assert_every_lab_finished,
    axe_violations,
    clipped_text,
    cut_menus,
    cut_tables,
    lab_faults,
    not_done,
    too_wide,
    unpadded_cells,
)

pytestmark = BROWSER_TESTS

# A lab as the widgets draw one, in a cell's output area: a status line, a button, a label, a
# table, a menu and a guess field.
LAB = """
<div class="jp-OutputArea-output" style="width:760px; overflow-x:auto">
<div class="pgq-lab pgq-demo-lab {done}" style="width:{width}">
  <button style="width:{button}; overflow:hidden; white-space:nowrap; text-overflow:ellipsis">
    Third worker claims</button>
  <label style="display:inline-block; width:{label}; overflow:hidden; white-space:nowrap">
    lease, s (by hand)</label>
  <div class="pgq-status pgq-lab-status" style="width:{status}; overflow:hidden; white-space:nowrap">
    done: the reaper handed back 1 job</div>
  <table><tr><th style="padding:{padding}">job</th></tr><tr><td style="padding:{padding}">2</td></tr></table>
  <label for="menu">B claims with</label>
  <select id="menu" style="width:{menu}">
    <option>FOR UPDATE</option><option>FOR UPDATE SKIP LOCKED</option></select>
  {guess_label}<input id="guess" type="text">
</div></div>"""
MENDED = {
    "done": "pgq-done",
    "button": "auto",
    "label": "auto",
    "status": "auto",
    "padding": "4px 10px",
    "width": "auto",
    "menu": "auto",
    "guess_label": '<label for="guess">Your guess, s</label>',
}


@pytest.fixture(scope="module")
def plain(chromium):
    """A page of Chromium's own, with no JupyterLab behind it."""
    context = chromium.new_context(viewport={"width": 800, "height": 600})
    page = context.new_page()
    yield page
    context.close()


def show(page, **broken: str):
    page.set_content(LAB.format(**{**MENDED, **broken}))
    return page.locator(".pgq-lab")


def test_a_mended_lab_passes_every_check(plain):
    lab = show(plain)
    assert lab_faults(lab) == []
    assert assert_every_lab_finished(plain, "plain") == 1


@pytest.mark.parametrize("part", ["button", "label", "status"])
def test_a_clipped_button_label_or_status_line_is_caught(plain, part):
    lab = show(plain, **{part: "40px"})
    [fault] = clipped_text(lab)
    assert "needs" in fault and int(fault.split("has ")[1].split(" px")[0]) <= 40  # the box, less its padding


def test_cells_without_padding_are_caught(plain):
    lab = show(plain, padding="1px")  # the browser's own padding: columns run together
    assert len(unpadded_cells(lab)) == 2
    assert unpadded_cells(show(plain, padding="1px 10px")) != []  # rows that touch
    assert unpadded_cells(show(plain, padding="4px 2px")) != []  # columns that touch


def test_a_lab_without_its_done_state_is_caught(plain):
    lab = show(plain, done="")
    assert not_done(lab) == ["not done: its status line says 'done: the reaper handed back 1 job'"]
    with pytest.raises(AssertionError, match="pgq-demo-lab .*not done"):
        assert_every_lab_finished(plain, "plain", timeout_ms=200)


def test_a_lab_wider_than_its_output_area_is_caught(plain):
    assert too_wide(show(plain, width="964px")) == ["lab pgq-demo-lab is 964 px wide in a 760 px output area"]
    lab, output = too_wide(plain)  # on the whole page its output is caught too: it scrolls sideways
    assert lab.startswith("lab pgq-demo-lab is 964 px") and "output" in output and "in 760 px" in output
    show(plain)
    assert too_wide(plain) == []


def test_a_menu_too_narrow_for_its_values_is_caught(plain):
    [fault] = cut_menus(show(plain, menu="90px"))
    assert fault.startswith('menu showing "FOR UPDATE" cuts its values')


def test_axe_finds_a_field_with_no_label_in_the_courses_output(plain):
    show(plain, guess_label="")
    found = {v["id"] for v in axe_violations(plain, (".jp-OutputArea-output",))}
    assert "label" in found
    show(plain)
    assert axe_violations(plain, (".jp-OutputArea-output",)) == []


# A table in a box that scrolls it sideways, and one wider than its output area.
TABLES = """
<div class="jp-OutputArea-output" style="width:400px">
  <div style="width:{box}; overflow-x:auto">
    <table style="width:{inner}"><tr><td>scrolled</td></tr></table></div>
  <table style="width:{wide}"><tr><td>wide</td></tr></table>
</div>"""


def test_a_table_cut_or_past_its_output_area_is_caught(plain):
    plain.set_content(TABLES.format(box="200px", inner="500px", wide="600px"))
    cut = cut_tables(plain.locator("body"))
    assert len(cut) == 2 and "cut to 200 of its 500 px" in cut[0] and "200 px past" in cut[1]
    plain.set_content(TABLES.format(box="auto", inner="auto", wide="auto"))
    assert cut_tables(plain.locator("body")) == []
