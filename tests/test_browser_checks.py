"""The on-screen checks every lab must pass (tests/jupyter_browser.py) can fail:
each is run in Chromium, without JupyterLab, on a plain page that breaks it on
purpose, and on the same page mended."""

from __future__ import annotations

import pytest

from jupyter_browser import (
    BROWSER_TESTS,
    assert_every_lab_finished,
    clipped_text,
    lab_faults,
    not_done,
    unpadded_cells,
)

pytestmark = BROWSER_TESTS

# A lab as the widgets draw one: a status line, a button, a label, a table.
LAB = """
<div class="pgq-lab pgq-demo-lab {done}">
  <button style="width:{button}; overflow:hidden; white-space:nowrap; text-overflow:ellipsis">
    Third worker claims</button>
  <label style="display:inline-block; width:{label}; overflow:hidden; white-space:nowrap">
    lease, s (by hand)</label>
  <div class="pgq-status pgq-lab-status" style="width:{status}; overflow:hidden; white-space:nowrap">
    done: the reaper handed back 1 job</div>
  <table><tr><th style="padding:{padding}">job</th></tr><tr><td style="padding:{padding}">2</td></tr></table>
</div>"""
MENDED = {"done": "pgq-done", "button": "auto", "label": "auto", "status": "auto", "padding": "4px 10px"}


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
