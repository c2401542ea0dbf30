"""The learner's working copy of the lessons (pgq_teach/infra/workcopy.py): `pgq-teach lab`
serves it from the learner's data folder, so running and saving a lesson leaves the
course's notebooks as git has them, and nothing the learner saved is written over."""

import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from helpers import free_port
from pgq_teach.databases import TAG_VARIABLE
from pgq_teach.infra import workcopy

ROOT = Path(__file__).resolve().parent.parent
LESSON = "00-start-here"  # the quickest lesson to Run All (about 10 s)


def course_hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "notebooks").iterdir()}


@pytest.fixture
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path / "learner"))
    return tmp_path / "learner"


def test_each_lesson_is_copied_once_and_what_the_learner_saved_stays(learner_home):
    first = workcopy.prepare()
    assert first.folder == learner_home / "notebooks"
    assert first.copied == workcopy.lessons() and first.newer == []
    mine = first.folder / f"{LESSON}.ipynb"
    mine.write_text(mine.read_text(encoding="utf-8").replace("Start here", "My notes"), encoding="utf-8")
    saved = mine.read_bytes()
    again = workcopy.prepare()
    assert again.copied == [] and again.newer == [] and mine.read_bytes() == saved
    assert len(again.lines()) == 1


def test_a_newer_course_lesson_is_named_and_fresh_keeps_the_old_copy(learner_home):
    workcopy.prepare()
    mine = workcopy.folder() / "05-stalled-workers-and-fencing.ipynb"
    mine.write_bytes(mine.read_bytes() + b"\n")  # what the learner saved
    saved = mine.read_bytes()
    # The course's notebook changes after the copy was made (a git pull): its recorded version differs.
    versions = json.loads((learner_home / "course_copies.json").read_text())
    versions[mine.name] = "0" * 64
    (learner_home / "course_copies.json").write_text(json.dumps(versions))
    report = workcopy.prepare()
    assert report.newer == ["05-stalled-workers-and-fencing"] and mine.read_bytes() == saved
    assert "`pgq-teach lab --fresh 05`" in report.lines()[1]

    kept = workcopy.fresh(workcopy.find_lesson("--fresh", "05"))
    assert kept is not None and kept.parent.name == "earlier" and kept.read_bytes() == saved
    assert mine.read_bytes() == (ROOT / "notebooks" / mine.name).read_bytes()
    assert workcopy.prepare().newer == []
    assert workcopy.fresh("05-stalled-workers-and-fencing") != kept  # a second fresh keeps both
    assert len(list((workcopy.folder() / "earlier").iterdir())) == 2


def test_run_all_from_the_copy_leaves_the_course_notebooks_untouched(alone, learner_home):
    # On an embedded server of its own (alone), which the kernel inherits: lesson 00's own
    # database there is not the one nbval's run of notebooks/00-start-here.ipynb uses.
    before = course_hashes()
    folder = workcopy.prepare().folder
    copy = folder / f"{LESSON}.ipynb"
    copied = copy.read_bytes()
    # Run All as the lab's kernel does: in the copy's folder, with the notebook saved in place,
    # and in the lesson's own database (a notebook checks its name), as a learner's kernel has no tag.
    env = {k: v for k, v in os.environ.items() if k != TAG_VARIABLE}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--inplace",
            copy.name,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = nbformat.read(copy, as_version=4)
    assert copy.read_bytes() != copied and all(
        not c.get("outputs") or all(o.get("name") != "stderr" for o in c.outputs)
        for c in ran.cells
        if c.cell_type == "code"
    )
    assert course_hashes() == before


def test_pgq_teach_lab_serves_the_copy_and_its_saves_stay_there(learner_home, pg, tmp_path):
    before = course_hashes()
    port, token = free_port(), secrets.token_hex(8)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    env.pop(TAG_VARIABLE, None)
    lab = subprocess.Popen(
        [sys.executable, "-m", "pgq_teach.cli", "lab", "--no-browser", f"--port={port}"]
        + ["--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    api = f"http://127.0.0.1:{port}/api/contents/{LESSON}.ipynb?token={token}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                model = json.load(urllib.request.urlopen(api, timeout=5))
                break
            except OSError:
                assert lab.poll() is None and time.monotonic() < deadline, "the lab did not answer"
                time.sleep(0.5)
        # What JupyterLab's save (and autosave) sends: the whole notebook, to the same path.
        model["content"]["cells"][0]["source"] = "# My own notes"
        body = json.dumps({"type": "notebook", "format": "json", "content": model["content"]}).encode()
        request = urllib.request.Request(api, data=body, method="PUT")
        request.add_header("Content-Type", "application/json")
        urllib.request.urlopen(request, timeout=30).close()
    finally:
        lab.terminate()
        out = lab.communicate(timeout=30)[0]
    assert f"your copy of the lessons: {learner_home / 'notebooks'}" in out, out
    saved = nbformat.read(learner_home / "notebooks" / f"{LESSON}.ipynb", as_version=4)
    assert saved.cells[0].source == "# My own notes"
    assert course_hashes() == before


def test_a_home_that_is_a_file_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    from pgq_teach.errors import SetupError

    (tmp_path / "home").write_text("not a folder")
    monkeypatch.setenv("PGQ_HOME", str(tmp_path / "home"))
    with pytest.raises(SetupError, match="set PGQ_HOME to a folder"):
        workcopy.prepare()
    assert (tmp_path / "home").read_text() == "not a folder"


def test_fresh_sets_the_copy_aside_into_an_earlier_folder_on_another_disk(learner_home):
    """earlier/ as a symlink to a folder on another file system (the learner keeps old work
    on a bigger disk): a rename cannot cross file systems, so the move copies across."""
    elsewhere = Path("/dev/shm") / f"pgq-teach-earlier-{secrets.token_hex(4)}"
    try:
        elsewhere.mkdir()
    except OSError:
        pytest.skip("no /dev/shm here")
    try:
        workcopy.prepare()
        if os.stat(elsewhere).st_dev == os.stat(workcopy.folder()).st_dev:
            pytest.skip("/dev/shm is on the same file system here")
        (workcopy.folder() / workcopy.EARLIER).symlink_to(elsewhere, target_is_directory=True)
        mine = workcopy.folder() / f"{LESSON}.ipynb"
        mine.write_text("what I typed", encoding="utf-8")
        kept = workcopy.fresh(LESSON)
        assert kept is not None and kept.read_text(encoding="utf-8") == "what I typed"
        assert mine.read_bytes() == (ROOT / "notebooks" / mine.name).read_bytes()
    finally:
        subprocess.run(["rm", "-rf", str(elsewhere)], check=False)


def test_fresh_in_a_folder_that_refuses_the_move_is_one_line(learner_home):
    """A copy folder the learner may not change (read-only; as root, chattr +i): one line,
    and the learner's copy stays where it was, as it was."""
    from pgq_teach.errors import SetupError

    workcopy.prepare()
    folder = workcopy.folder()
    (folder / workcopy.EARLIER).mkdir()
    mine = folder / f"{LESSON}.ipynb"
    mine.write_text("what I typed", encoding="utf-8")
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        os.chmod(folder, 0o555)
    try:
        probe = folder / "probe"
        try:
            probe.write_text("")
        except OSError:
            pass  # read-only, as wanted
        else:
            probe.unlink()
            pytest.skip("cannot make a folder read-only here")
        with pytest.raises(SetupError, match="earlier"):
            workcopy.fresh(LESSON)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False)
        os.chmod(folder, 0o755)
    assert mine.read_text(encoding="utf-8") == "what I typed"


def test_two_fresh_copies_at_once_take_turns_so_neither_writes_over_an_earlier_one(learner_home):
    """Two `lab --fresh` at once (two terminals) could pick the same earlier/ name in the
    same second, and the second move would write over the learner's set-aside copy. fresh
    holds the lock the learner's files share (`.course_copies.lock`) from the look to the
    copy: while another holds it, the learner's copy stays untouched."""
    import fcntl

    workcopy.prepare()
    mine = workcopy.folder() / f"{LESSON}.ipynb"
    mine.write_text("what I typed", encoding="utf-8")
    lock = os.open(learner_home / ".course_copies.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another `lab --fresh` in the middle of its turn
    other = subprocess.Popen(
        [sys.executable, "-c", f"from pgq_teach.infra import workcopy; print(workcopy.fresh({LESSON!r}))"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PGQ_HOME": str(learner_home)},
    )
    try:
        time.sleep(1.5)  # ample for a fresh that did not wait (it takes milliseconds)
        assert mine.read_text(encoding="utf-8") == "what I typed"
        assert not any((workcopy.folder() / workcopy.EARLIER).glob("*.ipynb"))
    finally:
        os.close(lock)  # closing releases the lock
        out, _ = other.communicate(timeout=60)
    assert Path(out.strip()).read_text(encoding="utf-8") == "what I typed"


def test_a_link_to_a_missing_file_is_never_written_through(learner_home, tmp_path):
    """A lesson in the learner's copy that is a link whose target is gone (a moved disk, a
    deleted folder): `lab` (prepare) names it in one line and leaves it; nothing is written
    where it points. --fresh sets the link aside and copies the lesson beside it."""
    workcopy.prepare()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mine = workcopy.folder() / f"{LESSON}.ipynb"
    mine.unlink()
    mine.symlink_to(elsewhere / "gone.ipynb")

    report = workcopy.prepare()
    assert report.copied == [] and report.broken_links == [LESSON]
    [line] = report.lines()[1:]  # after the line naming the folder
    assert "a link to a file that is gone" in line and "--fresh 00" in line and "\n" not in line
    assert list(elsewhere.iterdir()) == [] and mine.is_symlink()  # it used to write the lesson there

    kept = workcopy.fresh(LESSON)
    assert kept is not None and kept.is_symlink() and os.readlink(kept) == str(elsewhere / "gone.ipynb")
    assert not mine.is_symlink() and mine.read_bytes() == (ROOT / "notebooks" / mine.name).read_bytes()
    assert list(elsewhere.iterdir()) == []
    assert workcopy.prepare().broken_links == []
