"""A real JupyterLab in a real (headless) browser, for the widget tests.

JupyterLab runs through `pgq-teach lab` on a free loopback port with a
random token, throwaway settings, and a copy of the notebooks (so autosave
never touches the course's files). Chromium is Debian's /usr/bin/chromium
(or $PGQ_CHROMIUM), driven by Playwright: test tools cannot download their
own browsers here, and a learner's laptop may not allow it either.

The fixtures every browser test module uses (`jupyterlab`, `chromium`, `page`
and the `kept_page` behind it, `fresh_page`, `kernel_home`) are defined here
once; tests/conftest.py imports them. A module marks its tests with
`pytestmark = BROWSER_TESTS`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import nbformat
import nbval.plugin as nbval
import pytest
from nbformat.v4.rwbase import rejoin_lines

from helpers import needs_a_server_of_its_own, on_server, server_folder

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
START_TIMEOUT = 90
# A common laptop screen: the issue that measured the labs' widths measured them here (a
# notebook's output area is then about 934 px wide).
VIEWPORT = {"width": 1366, "height": 1000}
# A narrow window (a laptop split in two, a projector): after every Run All each lab is measured
# again at this width, with JupyterLab's left panel closed, as a reader of a narrow window keeps
# it (open, it leaves a notebook's output area about 356 px).
NARROW = {"width": 800, "height": 1000}
STEP_MS = 30_000  # the default wait for any one step in the page
# The most a lesson's Run All may take in the browser: quiet, the longest (lesson 10) takes 56
# to 75 s, and a loaded run took over 240 s once. A wide bound, as for any time, that still leaves
# room for the page to open and the test's own steps within pytest-timeout's 600 s per test.
RUN_ALL_MS = 400_000
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    path = os.environ.get("PGQ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).is_file() else None


BROWSER_TESTS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="no Chromium at /usr/bin/chromium: install it with `apt-get install chromium` "
        "(or set PGQ_CHROMIUM to a Chromium binary)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    def __init__(self, workdir: Path, name: str = "jupyterlab"):
        self.workdir = workdir
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        # one log per server (per test module), so a later module does not overwrite an earlier one's
        self.log_path = ARTIFACTS / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LabServer:
        folder = self.workdir / "notebooks"
        shutil.copytree(ROOT / "notebooks", folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        # The kernels use the lessons' own database names, as a learner's do (a notebook checks
        # its name): a parallel worker's tag (tests/conftest.py) stays out of them.
        env.pop("PGQ_DB_TAG", None)
        for name in ("JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR", "JUPYTER_RUNTIME_DIR"):
            env[name] = str(self.workdir / name.lower())
        self._settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
        config = [str(self._page_config(self.workdir / "jupyter-config")), env.get("JUPYTER_CONFIG_PATH")]
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, config))
        argv = [
            sys.executable,
            "-m",
            "pgq_teach.cli",
            "lab",
            "--no-browser",
            f"--port={self.port}",
            f"--dir={folder}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={self.token}",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.open_browser=False",
            # No test uses a language server, and looking for one on every start costs about
            # a second of CPU (jupyter_lsp's autodetect imports each candidate's entry points).
            "--LanguageServerManager.autodetect=False",
        ]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited early:\n{self.log_tail()}")
            try:
                urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"JupyterLab did not answer within {START_TIMEOUT} s:\n{self.log_tail()}")

    @staticmethod
    def _settings(folder: Path) -> None:
        # Render every cell (no windowing), so widgets below the fold exist in
        # the page; and no news pop-up over the notebook.
        for plugin, values in {
            "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        }.items():
            path = folder / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))

    @staticmethod
    def _page_config(folder: Path) -> Path:
        # No build check: on every page load it asks the server whether JupyterLab needs a
        # rebuild, which runs two Node processes; an installed JupyterLab never does here.
        path = folder / "labconfig" / "page_config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"buildCheck": False, "buildAvailable": False}))
        return folder

    def url(self, notebook: str) -> str:
        # A fresh workspace per notebook, so no tab from an earlier test is current.
        workspace = Path(notebook).stem
        return f"{self.base}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={self.token}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no JupyterLab log)"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if getattr(self, "log", None):
            self.log.close()


KERNEL_IDLE = """(path) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path) return false;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle';
}"""

NO_COUNTS = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
  .every(p => !/\\[\\d+\\]/.test(p.textContent))"""

# Close every open document without asking (a run leaves notebooks changed) and shut down
# their kernels, so the page's next test starts with nothing open and no kernel left running.
CLOSE_NOTEBOOKS = """async () => {
  const app = window.jupyterapp;
  for (const w of [...app.shell.widgets('main')]) {
    if (w.context) w.context.model.dirty = false;
    if (w.sessionContext && w.sessionContext.session) await w.sessionContext.shutdown();
    w.dispose();
  }
}"""

OPEN_DOCUMENTS = """() => [...window.jupyterapp.shell.widgets('main')]
  .filter(w => w.context).map(w => w.context.path)"""

OPEN_NOTEBOOK = """async (path) => {
  await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'});
}"""

# Run All's end: "ran" once every code cell has a count; otherwise, once the kernel is idle with
# some cells run and none queued (JupyterLab stops at a raised cell, and the later cells never get
# a count), what stopped it: the last error shown, or that none was (the kernel died, say).
RUN_ALL_ENDED = """(path) => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
  const counted = prompts.filter(p => /\\[\\d+\\]/.test(p.textContent)).length;
  if (prompts.length > 0 && counted === prompts.length) return 'ran';
  const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  if (!k || k.status !== 'idle' || counted === 0 || prompts.some(p => p.textContent.includes('*'))) {
    return false;
  }
  const errors = document.querySelectorAll(
    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']");
  const last = errors[errors.length - 1];
  return last ? 'raised: ' + last.innerText.slice(0, 2000)
              : `stopped after ${counted} of ${prompts.length} cells, with no error shown`;
}"""


# "applied" once JupyterLab's theme manager has loaded a theme (it names it on
# <body>), the dialog's text if it gave up, false while neither has happened.
THEME_STATE = """() => {
  if (document.body.dataset.jpThemeName) return 'applied';
  const dialog = [...document.querySelectorAll('.jp-Dialog')]
    .find(d => d.textContent.includes('Error Loading Theme'));
  return dialog ? dialog.querySelector('.jp-Dialog-body').textContent || 'Error Loading Theme' : false;
}"""


class ThemeRetry(UserWarning):
    """JupyterLab failed to load its theme once and the page was loaded again."""


def open_page(page, lab: LabServer, url: str, timeout_ms: int = 120_000, label: str = "page") -> None:
    """Load JupyterLab and wait until its theme is applied, before any click.

    The theme manager gives up on a theme that is not registered within about
    1.5 s of reading its settings (20 tries, 75 ms apart), or whose stylesheet
    request fails, and then shows an "Error Loading Theme" dialog over the page.
    On a starved machine that happens now and then; the page is loaded once more,
    with a warning in the test report and a screenshot. A second failure fails."""
    for attempt in (1, 2):
        page.goto(url, timeout=timeout_ms)
        state = page.wait_for_function(THEME_STATE, timeout=timeout_ms).json_value()
        if state == "applied":
            return
        shot = ARTIFACTS / f"theme-error-{label}-{attempt}.png"
        page.screenshot(path=str(shot))
        served = [line for line in lab.log_tail(400).splitlines() if "/themes/" in line][-3:]
        note = (
            f"JupyterLab showed 'Error Loading Theme' ({state}); screenshot {shot.name}; "
            f"JupyterLab's log on /themes/: {served or 'nothing (it logs failed requests only)'}"
        )
        if attempt == 2:
            raise AssertionError(f"{note}, and again after loading the page once more")
        warnings.warn(f"{note}; loading the page once more", ThemeRetry, stacklevel=2)


def loaded(page) -> bool:
    """Whether the page holds a JupyterLab that has loaded."""
    return page.url.startswith("http") and page.evaluate("() => !!window.jupyterapp")


def open_notebook(page, lab: LabServer, notebook: str) -> None:
    """Open a notebook and wait for its kernel: in the JupyterLab the page already holds, or by
    loading JupyterLab on a fresh workspace (so no tab from elsewhere is current)."""
    if loaded(page) and page.url.startswith(lab.base + "/"):
        open_now = page.evaluate(OPEN_DOCUMENTS)
        if open_now:  # page-wide locators would match the other notebook's cells too
            raise AssertionError(f"{notebook}: the page still has {open_now} open")
        page.evaluate(OPEN_NOTEBOOK, notebook)
    else:
        open_page(page, lab, lab.url(notebook), STEP_MS * 4, label=Path(notebook).stem)
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=STEP_MS * 4)


def open_and_run_all(page, lab: LabServer, notebook: str, timeout_ms: int = RUN_ALL_MS) -> None:
    """Open a notebook, wait for its kernel, run every cell, wait until done (or a cell raised)."""
    open_notebook(page, lab, notebook)
    # Stored outputs carry execution counts; clear them so "every cell has a
    # count" means this run reached it.
    page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.wait_for_function(NO_COUNTS, timeout=STEP_MS)
    # Start it, not await it: evaluate waits for a returned promise, and Run All's resolves only
    # when every cell has run, so RUN_ALL_ENDED's timeout would never be the bound.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    ended = page.wait_for_function(RUN_ALL_ENDED, arg=notebook, timeout=timeout_ms, polling=500).json_value()
    if ended != "ran":
        raise AssertionError(f"{notebook}: Run All stopped: {ended}")
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=timeout_ms)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    if errors.count():
        raise AssertionError(f"{notebook} wrote to stderr or raised:\n{errors.first.inner_text()[:2000]}")
    screen = (
        too_wide(page)
        + cut_menus(page.locator(".jp-Notebook").first)
        + axe_problems(page, Path(notebook).stem)
        + narrow_problems(page, Path(notebook).stem)
    )
    if screen:
        raise AssertionError(f"{notebook}, on screen after Run All:\n" + "\n".join(screen))
    if notebook in IN_BROWSER:
        problems = nbval_problems(IN_BROWSER[notebook], ran_cells(page, notebook))
        if problems:
            raise AssertionError(f"{notebook}, as nbval checks it:\n" + "\n\n".join(problems))
        CHECKED.add(notebook)


@pytest.fixture(scope="module")
def kernel_home(tmp_path_factory, request) -> Path:
    """The learner's folder (PGQ_HOME) for the lab's kernels: a throwaway one, so a test's
    guesses, answers and verdicts never reach a real learner's files. A module that runs
    lessons in nbval's place (IN_BROWSER) uses the run's own throwaway folder instead when
    `make test` names one (PGQ_TEST_HOME), as nbval's kernels would have: lesson 12, run after
    the rest, then quotes the drain lesson 11 recorded there (tests/test_measurements.py checks)."""
    mine = [item for item in request.session.items if getattr(item, "module", None) is request.module]
    runs = {marker.args[0] for item in mine for marker in item.iter_markers("runs_lesson")}
    if runs & IN_BROWSER.keys() and os.environ.get("PGQ_TEST_HOME"):
        return Path(os.environ["PGQ_TEST_HOME"])
    return tmp_path_factory.mktemp("learner")


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory, kernel_home, request, pg):
    """JupyterLab for one test module. Its kernels inherit PGQ_HOME and the server choice from
    its environment: in a parallel run (or on the embedded backend) an embedded PostgreSQL of
    the module's own, so the lessons it runs share no database, lab role, setting or broker
    with nbval's runs of the same lessons or with another module's, and the modules need no
    worker in common (tests/helpers.py, needs_a_server_of_its_own)."""
    with contextlib.ExitStack() as keep:
        folder = None
        if needs_a_server_of_its_own(pg):
            folder = keep.enter_context(server_folder("pgq-teach-lab-")) / "pg18"
        with pytest.MonkeyPatch.context() as patch, on_server(folder):
            patch.setenv("PGQ_HOME", str(kernel_home))
            name = f"jupyterlab-{request.module.__name__}"
            lab = LabServer(tmp_path_factory.mktemp("jupyterlab"), name).start()
        try:
            yield lab
        finally:
            lab.stop()


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def new_page(chromium):
    """A fresh browser context and page, with the course's waits."""
    from playwright.sync_api import expect

    page = chromium.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(STEP_MS)
    expect.set_options(timeout=STEP_MS)  # Playwright's expect() has a 5 s default of its own
    return page


class KeptPage:
    """One page for a module's tests: JupyterLab loads once (about 5 s of Chromium's CPU and
    JupyterLab's serving each time), and each test opens its notebook in it (open_notebook).
    After a test every notebook is closed and its kernel shut down; after a failed one the
    page is thrown away, so a broken page never meets the next test."""

    def __init__(self, chromium):
        self.chromium = chromium
        self.page = None

    def get(self):
        if self.page is None:
            self.page = new_page(self.chromium)
        return self.page

    def after(self, failed: bool) -> None:
        if self.page is None:
            return
        if not failed:
            try:
                # A dialog left open (none is today) would sit over the next test's page.
                if loaded(self.page) and not self.page.locator(".jp-Dialog").count():
                    self.page.evaluate(CLOSE_NOTEBOOKS)
                    return
            except Exception:  # noqa: BLE001 - a page that cannot close its notebooks is replaced
                pass
        self.throw_away()

    def throw_away(self) -> None:
        if self.page is not None:
            self.page.context.close()
            self.page = None


@pytest.fixture(scope="module")
def kept_page(chromium):
    keeper = KeptPage(chromium)
    yield keeper
    keeper.throw_away()


def report_failure(page, jupyterlab, request) -> bool:
    """Whether the test failed; if so, a screenshot of the last state and JupyterLab's log tail."""
    call = getattr(request.node, "rep_call", None)
    if call is not None and not call.failed:
        return False
    shot = ARTIFACTS / f"{request.node.name}-last.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"\nlast screenshot: {shot}\nJupyterLab log tail:\n{jupyterlab.log_tail()}")
    return True


@pytest.fixture
def page(kept_page, jupyterlab, request):
    """The module's page (KeptPage), with nothing open; when the test fails, a screenshot of
    the last state and the tail of JupyterLab's log."""
    page = kept_page.get()
    yield page
    failed = True
    try:
        failed = report_failure(page, jupyterlab, request)
    finally:  # even if the screenshot fails, a failed test's page never meets the next test
        kept_page.after(failed)


@pytest.fixture
def fresh_page(chromium, jupyterlab, request):
    """A page of the test's own, for a test that loads JupyterLab itself or changes the page
    (routes); the same report on failure."""
    page = new_page(chromium)
    yield page
    report_failure(page, jupyterlab, request)
    page.context.close()


def set_number(panel, description: str, value: float) -> None:
    """Type a value into the number box labelled `description` and press Enter, as a person can."""
    box = panel.get_by_label(description, exact=True)
    box.fill(str(value))
    box.press("Enter")


# A lesson runs once in `make test`, not twice. A browser test marked `runs_lesson(notebook)`
# runs the whole lesson with Run All; nbval's items for that notebook are taken out of the run
# (tests/conftest.py) and kept here, and once the Run All has ended every one is checked as nbval
# checks it, with nbval's own code, on the outputs the browser's kernel gave: no error, no stderr
# (conftest.py), and outputs equal to the stored ones where nbval compares them.
IN_BROWSER: dict[str, list[nbval.IPyNbCell]] = {}  # notebook -> its nbval items, in order
CHECKED: set[str] = set()  # the notebooks whose Run All passed those checks

# The notebook as the page holds it now, outputs and all (nbformat's JSON).
NOTEBOOK_JSON = """(path) => {
  const w = window.jupyterapp.shell.currentWidget;
  return w && w.context && w.context.path === path ? w.context.model.toJSON() : null;
}"""


def take_lessons_for_browser(items: list[pytest.Item]) -> list[pytest.Item]:
    """nbval's items for the notebooks that a selected browser test runs whole (its marker
    `runs_lesson`), kept in IN_BROWSER: the items to leave out of the run. None without
    Chromium, where the browser tests are skipped and nbval must run every lesson."""
    if chromium_path() is None:
        return []
    lessons = {m.args[0] for item in items for m in item.iter_markers("runs_lesson")}
    taken = [
        item
        for item in items
        if isinstance(item, nbval.IPyNbCell)
        and Path(str(item.path)).parent == ROOT / "notebooks"
        and Path(str(item.path)).name in lessons
    ]
    for item in taken:
        cells = IN_BROWSER.setdefault(Path(str(item.path)).name, [])
        if not cells:
            item.parent.setup_sanitize_files()  # what nbval's setup reads, without its kernel
        cells.append(item)
    return taken


def ran_cells(page, notebook: str) -> list[nbformat.NotebookNode]:
    """The notebook's code cells as the browser ran them."""
    content = page.evaluate(NOTEBOOK_JSON, notebook)
    if content is None:
        raise AssertionError(f"{notebook} is no longer the page's current notebook")
    code = nbformat.from_dict({"cells": [c for c in content["cells"] if c["cell_type"] == "code"]})
    return rejoin_lines(code).cells  # multi-line strings joined, as nbformat.read gives them to nbval


def nbval_problems(items: list[nbval.IPyNbCell], ran: list[nbformat.NotebookNode]) -> list[str]:
    """What nbval would have failed, cell by cell (nbval 0.11's IPyNbCell.runtest after the
    kernel's reply, with its own option, coalescing and comparison code)."""
    cells = sum(cell.cell_type == "code" for cell in items[0].parent.nb.cells)
    if len(ran) != cells:
        return [f"the browser ran {len(ran)} code cells; the notebook has {cells}"]
    problems = []
    for item in items:  # the chosen ones: -k may have left some of nbval's items out
        outputs = ran[item.cell_num].outputs
        where = f"Cell {item.cell_num} ({item.cell.source.splitlines()[0] if item.cell.source else ''})"
        if item.options["skip"]:
            continue
        raised = [o for o in outputs if o.output_type == "error"]
        if raised and not item.options["check_exception"]:
            problems.append(f"{where} raised {raised[0].ename}: {raised[0].evalue}")
            continue
        try:
            got = nbval.coalesce_streams(copy.deepcopy(outputs))  # refuses stderr (conftest.py)
        except AssertionError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if item.cell.execution_count is None:
            if item.cell.outputs:
                problems.append(f"{where}: unrun reference cell has outputs")
            continue
        stored = nbval.coalesce_streams(copy.deepcopy(item.cell.outputs))
        if item.options["check"] and not item.compare_outputs(got, stored):
            problems.append(f"{where}: outputs differ\n" + "\n".join(item.comparison_traceback))
    return problems


def run_and_find(page, lab: LabServer, notebook: str, css: str, timeout_ms: int = RUN_ALL_MS):
    """Open and run a notebook, then return its first widget with the CSS class
    `css` (a Playwright locator), scrolled into view."""
    open_and_run_all(page, lab, notebook, timeout_ms)
    widget = page.locator(css).first
    widget.scroll_into_view_if_needed()
    return widget


RESTART_KERNEL = """async () => {
  const ctx = window.jupyterapp.shell.currentWidget.sessionContext;
  await ctx.session.kernel.restart();
}"""

# Run the cells with these ids, in this order, each to its end; returns their indices.
RUN_CELLS = """async ([path, ids]) => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  if (!panel || !panel.context || panel.context.path !== path) throw new Error(`${path} is not open`);
  const notebook = panel.content;
  const indices = [];
  for (const id of ids) {
    const index = notebook.widgets.findIndex(cell => cell.model.id === id);
    if (index < 0) throw new Error(`${path} has no cell ${id}`);
    notebook.activeCellIndex = index;
    notebook.deselectAll();
    await app.commands.execute('notebook:run-cell');
    indices.push(index);
  }
  return indices;
}"""


def restart_and_run(page, notebook: str, cell_ids: list[str], css: str, timeout_ms: int = 120_000):
    """Restart the notebook's kernel, as a learner would, then run only the cells named
    (by cell id: the lesson's first, and the widget's own), and return the widget with
    the CSS class `css` in the last of them. A whole Run All again would prove nothing
    more about what a widget keeps, and doubled the slowest browser tests' time."""
    page.evaluate(RESTART_KERNEL)
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=60_000)
    indices = page.evaluate(RUN_CELLS, [notebook, cell_ids])
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=timeout_ms)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(indices[-1])
    # The old outputs stay on the page across a restart: the prompt's count proves this run
    # made the widget (a fresh kernel counts from 1, one per cell run).
    prompt = cell.locator(".jp-InputArea-prompt").inner_text()
    if prompt.strip() != f"[{len(cell_ids)}]:":
        raise AssertionError(f"{notebook}: the widget's cell shows {prompt!r}: not this run's")
    errors = cell.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    if errors.count():
        raise AssertionError(f"{notebook} wrote to stderr or raised:\n{errors.first.inner_text()[:2000]}")
    widget = cell.locator(css).first
    widget.wait_for(timeout=timeout_ms)
    widget.scroll_into_view_if_needed()
    return widget


# --- what every lab must show on screen (issue 25's done-when) ---------------------------------
# Each check returns what it found wrong, so a test can report every lab's faults at once;
# tests/test_browser_checks.py shows each one failing on a deliberately broken plain page.

TEXT_HOLDERS = (
    "button, label, .widget-label, .pgq-lab-status, .pgq-status, .pgq-third-status, "
    ".pgq-guess .widget-html-content"
)

# Every visible button, label and status line in `root` whose text is cut: wider than its box.
CLIPPED_JS = """(root, selector) => [...root.querySelectorAll(selector)]
  .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth)
  .map(el => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`
    + ` "${el.textContent.trim().slice(0, 60)}" needs ${el.scrollWidth} px, has ${el.clientWidth} px`)"""

# Every visible table cell in `root` with less than `least.sides` px of padding left or
# right, or less than `least.rows` above or below.
UNPADDED_JS = """(root, least) => [...root.querySelectorAll('td, th')]
  .filter(el => el.offsetParent !== null)
  .map(el => [el, getComputedStyle(el)])
  .filter(([el, s]) => parseFloat(s.paddingLeft) < least.sides || parseFloat(s.paddingRight) < least.sides
    || parseFloat(s.paddingTop) < least.rows || parseFloat(s.paddingBottom) < least.rows)
  .map(([el, s]) => `${el.tagName.toLowerCase()} "${el.textContent.trim().slice(0, 40)}" padded `
    + `${s.paddingTop} ${s.paddingRight} ${s.paddingBottom} ${s.paddingLeft}`)"""

# Columns that do not run together (the browser's own is 1 px), rows that do not touch.
LEAST_PADDING_PX = {"sides": 4, "rows": 2}


def clipped_text(root) -> list[str]:
    """Each button, label or status line in `root` (a locator) whose text does not fit."""
    return root.evaluate(CLIPPED_JS, TEXT_HOLDERS)


def unpadded_cells(root, least: dict[str, float] = LEAST_PADDING_PX) -> list[str]:
    """Each table cell in `root` padded less than `least` (px at the sides, above and below)."""
    return root.evaluate(UNPADDED_JS, least)


# Every lab, and every cell output, in `root` that is wider than the notebook's output area it
# sits in (at VIEWPORT's 1366 px, about 934 px): a lab by its box or the content it overflows
# with, an output by content it scrolls sideways. A px of slack for rounding.
TOO_WIDE_JS = """(root) => {
  const scope = root.matches && root.matches('.pgq-lab') ? [root] : [...root.querySelectorAll('.pgq-lab')];
  const name = (el) => [...el.classList]
    .find(c => c.startsWith('pgq-') && c !== 'pgq-lab' && c !== 'pgq-done')
    || el.tagName.toLowerCase();
  const problems = [];
  for (const lab of scope) {
    const area = lab.closest('.jp-OutputArea-output');
    if (!area || lab.offsetParent === null) continue;
    const room = area.clientWidth;
    const wide = Math.max(lab.scrollWidth, Math.ceil(lab.getBoundingClientRect().width));
    if (wide > room + 1) problems.push(`lab ${name(lab)} is ${wide} px wide in a ${room} px output area`);
  }
  if (!(root.matches && root.matches('.pgq-lab'))) {
    const outputs = [...root.querySelectorAll('.jp-OutputArea-output')].filter(o => o.offsetParent !== null);
    for (const out of outputs) {
      if (out.scrollWidth > out.clientWidth + 1) {
        const cell = out.closest('.jp-Cell');
        const index = cell ? [...cell.parentNode.children].indexOf(cell) : -1;
        const first = out.innerText.trim().split('\\n')[0].slice(0, 50);
        problems.push(`cell ${index}'s output ("${first}") is ${out.scrollWidth} px wide`
          + ` in ${out.clientWidth} px`);
      }
    }
  }
  return problems;
}"""

# Every visible menu (<select>) in `root` whose chosen value is wider than the room its box
# gives it (its width less padding and the arrow's 20 px): "SKIP LOCKE…".
CUT_MENUS_JS = """(root) => {
  const canvas = document.createElement('canvas').getContext('2d');
  return [...root.querySelectorAll('select')].filter(el => el.offsetParent !== null).flatMap(el => {
    const s = getComputedStyle(el);
    canvas.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const text = el.selectedOptions.length ? el.selectedOptions[0].text : '';
    const widest = Math.max(0, ...[...el.options].map(o => canvas.measureText(o.text).width));
    const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight) - 20;
    const cut = `menu showing "${text}" cuts its values: needs ${Math.ceil(widest)} px, has ${room} px`;
    return widest > room ? [cut] : [];
  });
}"""


def too_wide(root) -> list[str]:
    """Each lab or cell output in `root` (a locator or a page) wider than its output area."""
    return (
        root.evaluate(TOO_WIDE_JS)
        if hasattr(root, "element_handle")
        else root.evaluate(f"() => ({TOO_WIDE_JS})(document)")
    )


def cut_menus(root) -> list[str]:
    """Each menu in `root` (a locator) that cannot show its longest value whole."""
    return root.evaluate(CUT_MENUS_JS)


# Every visible table in `root` that reaches past its output area's right edge, or sits in a
# box that cuts it or scrolls it sideways: a reader sees only part of its columns.
CUT_TABLES_JS = """(root) => [...root.querySelectorAll('table')].filter(t => t.offsetParent !== null)
  .flatMap(table => {
    const area = table.closest('.jp-OutputArea-output');
    if (!area) return [];
    const first = table.innerText.trim().split('\\n')[0].slice(0, 40);
    const own = Math.ceil(table.getBoundingClientRect().width);
    for (let box = table.parentElement; box && box !== area; box = box.parentElement) {
      const clips = getComputedStyle(box).overflowX !== 'visible';
      if (clips && own > box.clientWidth + 1) {  // the table itself, not a wider sibling
        return [`table "${first}" is cut to ${box.clientWidth} of its ${own} px`];
      }
    }
    const past = Math.ceil(table.getBoundingClientRect().right - area.getBoundingClientRect().right);
    return past > 1 ? [`table "${first}" reaches ${past} px past its output area`] : [];
  })"""


def cut_tables(root) -> list[str]:
    """Each table in `root` (a locator) that a reader cannot see whole across."""
    return root.evaluate(CUT_TABLES_JS)


# Open or close JupyterLab's left panel; whether it was open.
LEFT_PANEL = """(open) => {
  const shell = window.jupyterapp.shell, was = !shell.leftCollapsed;
  if (open) shell.expandLeft(); else shell.collapseLeft();
  return was;
}"""

# The narrowest output area on the page, px.
ROOM_JS = """() => Math.min(...[...document.querySelectorAll('.jp-OutputArea-output')]
  .filter(o => o.offsetParent !== null).map(o => o.clientWidth))"""


def narrow_problems(page, label: str) -> list[str]:
    """At NARROW's width, each lab that is wider than its output area, cuts a button, label,
    status line or menu, or scrolls a table sideways; the page is back at its own width after.
    The 1366 px checks (lab_faults) stay the fuller ones: padding and the done state do not
    change with the width. What it found, the output area's width and the seconds it took go to
    tests/artifacts/<label>-narrow.json, and each lab's picture at this width beside it
    (<label>-narrow-<n>.png), to look at by eye."""
    started = time.monotonic()
    wide = page.viewport_size or VIEWPORT
    page.set_viewport_size(NARROW)
    was_open = page.evaluate(LEFT_PANEL, False)
    try:
        page.wait_for_timeout(300)  # one layout: JupyterLab refits its panels on the window's resize
        room = page.evaluate(ROOM_JS)
        labs = page.locator(".pgq-lab")
        problems: list[str] = []
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for n in range(labs.count()):
            lab = labs.nth(n)
            if not lab.is_visible():
                continue
            found = clipped_text(lab) + cut_menus(lab) + too_wide(lab) + cut_tables(lab)
            problems.extend(f"at {NARROW['width']} px (output area {room} px): {p}" for p in found)
            lab.screenshot(path=str(ARTIFACTS / f"{label}-narrow-{n + 1}.png"))
        report = {"seconds": round(time.monotonic() - started, 2), "output_px": room, "problems": problems}
        (ARTIFACTS / f"{label}-narrow.json").write_text(json.dumps(report, indent=1))
        return problems
    finally:
        page.evaluate(LEFT_PANEL, was_open)
        page.set_viewport_size(wide)


# --- accessibility: axe-core on what the course puts on the page -----------------------------
# axe-core 4.12 ships inside the axe-playwright-python wheel (the dev extra): no download at
# test time. Only the course's own DOM is checked: what its cells put out (widgets, tables,
# charts, printed text) and its rendered lesson text, not JupyterLab's own chrome or its code
# editors, whose violations are JupyterLab's to fix.
COURSE_DOM = (".jp-OutputArea-output", ".jp-MarkdownCell .jp-RenderedMarkdown")
AXE_RUN = """async (include) => {
  const found = include.filter(s => document.querySelector(s));
  if (!found.length) return [];
  const result = await window.axe.run({include: found.map(s => [s])}, {resultTypes: ['violations']});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160)})),
  }));
}"""


SCROLLING_CODE = """() => [...document.querySelectorAll('.jp-CodeCell')]
  .map((cell, n) => [n, cell.querySelector('.cm-scroller')])
  .filter(([n, el]) => el && el.scrollWidth > el.clientWidth + 1)
  .map(([n, el]) => `code cell ${n}: ${el.scrollWidth} px of code in ${el.clientWidth} px`)"""


def axe_script() -> Path:
    import axe_playwright_python

    return Path(axe_playwright_python.__file__).parent / "axe.min.js"


def axe_violations(page, include: tuple[str, ...] = COURSE_DOM) -> list[dict]:
    """axe-core's violations within `include` (CSS selectors) on the page as it stands."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(axe_script()))
    return page.evaluate(AXE_RUN, list(include))


def axe_problems(page, label: str) -> list[str]:
    """One line per axe-core violation in the course's own DOM, each node named; the whole
    report goes to tests/artifacts/<label>-axe.json."""
    started = time.monotonic()
    violations = axe_violations(page)
    report: dict = {
        "seconds": round(time.monotonic() - started, 2),
        "violations": violations,
        # Code cells whose lines scroll sideways (a scrollable region that cannot take focus):
        # JupyterLab's editor, so reported here, not failed; the lessons keep code lines short.
        "code_cells_scrolling": page.evaluate(SCROLLING_CODE),
    }
    if os.environ.get("PGQ_AXE_WHOLE_PAGE"):  # for a report on JupyterLab's own: not a failure
        report["whole_page"] = [
            {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
            for v in axe_violations(page, ("body",))
        ]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{label}-axe.json").write_text(json.dumps(report, indent=1))
    return [
        f"axe {v['id']} ({v['impact']}): {v['help']}: {n['target']} {n['html']}"
        for v in violations
        for n in v["nodes"][:5]
    ]


FIRST_CONTROL = """(lab) => {
  const first = [...lab.querySelectorAll('input, button, select, textarea, [tabindex]')]
    .find(el => el.offsetParent !== null && !el.disabled && el.tabIndex >= 0);
  if (!first) throw new Error('the lab has no control that takes focus');
  first.focus();
}"""


def press(page, lab, target, key: str) -> None:
    """Work one control by keyboard: enter the lab at its first control (as Tab from the
    cell above would), Tab to `target` (a locator) and press `key` ("Space", "Enter")."""
    lab.evaluate(FIRST_CONTROL)
    tab_to(page, target)
    page.keyboard.press(key)


def tab_to(page, target, limit: int = 60) -> int:
    """Press Tab until `target` (a locator) has the keyboard's focus, as a keyboard user
    would; the number of presses. Fails after `limit` presses."""
    handle = target.element_handle()
    for presses in range(limit + 1):
        if page.evaluate(
            "(el) => document.activeElement === el || el.contains(document.activeElement)", handle
        ):
            return presses
        page.keyboard.press("Tab")
    raise AssertionError(f"{limit} presses of Tab never reached {target}")


def not_done(lab) -> list[str]:
    """Why `lab` does not show its done state (the class pgq-done, and a status line
    that says so); empty when it does."""
    if lab.evaluate("el => el.classList.contains('pgq-done')"):
        return []
    status = lab.locator(".pgq-lab-status").first
    said = status.inner_text().strip() if status.count() else "(no status line)"
    return [f"not done: its status line says {said!r}"]


def lab_faults(lab, shot: Path | None = None) -> list[str]:
    """Everything wrong with one lab on screen: clipped text or menus, wider than its output,
    unpadded cells, no done state. With `shot`, its screenshot is saved there first
    (tests/artifacts/)."""
    lab.scroll_into_view_if_needed()
    if shot is not None:
        lab.screenshot(path=str(shot))
    return clipped_text(lab) + cut_menus(lab) + too_wide(lab) + unpadded_cells(lab) + not_done(lab)


def assert_every_lab_finished(page, lesson: str, *, least: int = 1, timeout_ms: int = 10_000) -> int:
    """Every lab on the page (class pgq-lab) has reached its done state, clips no
    text and pads its tables; each lab's screenshot goes to tests/artifacts/
    as <lesson>-lab-<n>-<its class>.png. Returns how many labs were checked."""
    labs = page.locator(".pgq-lab")
    count = labs.count()
    assert count >= least, f"{lesson}: {count} labs on the page, expected at least {least}"
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    faults = []
    for n in range(count):
        lab = labs.nth(n)
        try:  # a lab may still be drawing its last result
            page.wait_for_function(
                "el => el.classList.contains('pgq-done')", arg=lab.element_handle(), timeout=timeout_ms
            )
        except PlaywrightTimeout:  # reported below, with what its status line says
            pass
        name = next(c for c in lab.get_attribute("class").split() if c.startswith("pgq-") and c != "pgq-lab")
        shot = ARTIFACTS / f"{lesson}-lab-{n + 1}-{name.removeprefix('pgq-')}.png"
        faults += [f"{name} ({shot.name}): {fault}" for fault in lab_faults(lab, shot)]
    assert not faults, f"{lesson}: " + "\n".join(faults)
    return count


# Every <text> of one chart's SVG that a reader can see (not blank, not hidden,
# not zero-sized): any two whose boxes overlap, and any that leaves the SVG's box.
TEXT_PROBLEMS = """(svg) => {
  const box = svg.getBoundingClientRect();
  const seen = (el) => {
    for (let e = el; e && e !== svg.parentNode; e = e.parentNode) {
      const style = getComputedStyle(e);
      const hidden = style.display === 'none' || style.visibility === 'hidden';
      if (hidden || parseFloat(style.opacity) === 0) return false;
    }
    return true;
  };
  const texts = [...svg.querySelectorAll('text')]
    .filter((t) => t.textContent.trim() && seen(t))
    .map((t) => ({ text: t.textContent.trim(), r: t.getBoundingClientRect() }))
    .filter((t) => t.r.width > 0 && t.r.height > 0);
  const slack = 1;  // px: boxes that merely touch are fine
  const problems = [];
  for (const t of texts) {
    if (t.r.left < box.left - slack || t.r.top < box.top - slack
        || t.r.right > box.right + slack || t.r.bottom > box.bottom + slack) {
      problems.push(`"${t.text}" falls outside the chart's box`);
    }
  }
  texts.forEach((a, i) => texts.slice(i + 1).forEach((b) => {
    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (w > slack && h > slack) problems.push(`"${a.text}" overlaps "${b.text}"`);
  }));
  return problems;
}"""
CHART_SVG = ".vega-embed svg"


def chart_text_problems(locator, at_least: int = 1, shots: str = "") -> list[str]:
    """Waits for at least `at_least` charts (Vega's SVG) inside `locator`, then
    measures every chart's visible <text> elements in the browser: returns one
    line for any two that overlap and for any that falls outside its chart's SVG
    box; an empty list when every label can be read. With `shots`, each chart's
    screenshot goes to tests/artifacts/<shots>-chart-N.png."""
    charts = locator.locator(CHART_SVG)
    charts.nth(at_least - 1).wait_for()
    problems = []
    for n in range(charts.count()):
        chart = charts.nth(n)
        chart.scroll_into_view_if_needed()
        if shots:
            chart.screenshot(path=str(ARTIFACTS / f"{shots}-chart-{n + 1}.png"))
        title = chart.locator("text").first.text_content() or ""
        problems += [f"chart {n + 1} ({title.strip()[:60]}): {p}" for p in chart.evaluate(TEXT_PROBLEMS)]
    return problems
