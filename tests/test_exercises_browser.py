"""Your turn in a real JupyterLab and browser: the learner edits the claim
exercise, presses Check, and reads the verdict (nbval cannot see a widget's
rendering; this can). The notebook is made here, in the lab's throwaway copy
of the course's folder, so this test does not depend on where a lesson puts
its Your turn cell."""

from __future__ import annotations

import nbformat
import pytest
from jupyter_browser import ARTIFACTS, CHROMIUM_FLAGS, LabServer, chromium_path, open_and_run_all

from pgq_teach import exercises

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="no Chromium at /usr/bin/chromium: install it with `apt-get install chromium` "
        "(or set PGQ_CHROMIUM to a Chromium binary)",
    ),
]

NOTEBOOK = "your-turn-check.ipynb"
STEP_MS = 30_000
CHECK_MS = 90_000


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    home = tmp_path_factory.mktemp("learner")
    patch = pytest.MonkeyPatch()
    patch.setenv("PGQ_HOME", str(home))  # the kernel saves verdicts here, not in a real learner's files
    server = LabServer(tmp_path_factory.mktemp("jupyterlab")).start()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('from pgq_teach.widgets.your_turn import YourTurn\nYourTurn("01/claim")')
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, server.workdir / "notebooks" / NOTEBOOK)
    yield server
    server.stop()
    patch.undo()


@pytest.fixture
def page(lab, request):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(STEP_MS)
        yield page
        call = getattr(request.node, "rep_call", None)
        if call is None or call.failed:
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-last.png"), full_page=True)
            print(f"\nJupyterLab log tail:\n{lab.log_tail()}")
        browser.close()


def check(turn) -> str:
    """Press Check and return the verdict's visible text once it is there."""
    turn.locator("button", has_text="Check").click()
    turn.locator(".pgq-verdict").wait_for(timeout=CHECK_MS)
    return turn.locator(".pgq-verdict").inner_text()


def test_the_learner_edits_the_claim_checks_it_and_reads_the_verdict(page, lab):
    open_and_run_all(page, lab, NOTEBOOK)
    turn = page.locator(".pgq-your-turn").first
    turn.scroll_into_view_if_needed()
    editor = turn.locator("textarea")
    assert editor.input_value() == exercises.exercise("01/claim").attempt_text()

    verdict = check(turn)  # the seeded attempt, as the page shows it
    assert verdict.startswith("Not yet:") and "two workers got job" in verdict and "lock the row it picks" in verdict

    editor.fill(exercises.exercise("01/claim").answer_text())  # typed over, as a learner would
    editor.press("End")  # a keystroke, so the widget syncs the new text before Check
    turn.locator("button", has_text="Check").click()
    turn.locator(".pgq-verdict[data-passed='true']").wait_for(timeout=CHECK_MS)
    text = turn.locator(".pgq-verdict").inner_text()
    assert text.startswith("Pass:") and "no job ran twice, none was lost" in text and "jobs run more than once" in text
    turn.screenshot(path=str(ARTIFACTS / "your-turn-claim.png"))
