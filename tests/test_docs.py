"""The README is a newcomer's page, and every link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_is_short():
    size = len((ROOT / "README.md").read_text(encoding="utf-8"))
    assert size < 15_000, f"README.md is {size:,} characters; move detail into docs/ and link it"


def test_readme_links_every_docs_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in text, f"docs/{page.name} is not linked from the README"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.name} links to missing files: {broken}"


def test_the_readmes_checker_limits_are_the_checkers_own():
    from pgq_teach.exercises import claim, sandbox

    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    lone, race = sandbox.STATEMENT_TIMEOUT_S, sandbox.RACE_TIMEOUT_S
    assert (
        f"a {lone} s statement timeout ({race} s for a claim racing other workers), a "
        f"{lone + sandbox.WATCHDOG_GRACE_S:g} s watchdog ({claim.RACE_DEADLINE_S:g} s), at most "
        f"{sandbox.MAX_ROWS:,} rows"
    ) in text


THREAT_MODEL = (
    "a learner with a notebook kernel is trusted with their own server, so a class gives each "
    "learner a server of their own; never a shared superuser: a shared PostgreSQL behind "
    "PGQ_DSN is for one person"
)


@pytest.mark.parametrize(
    "where", ["README.md", "docs/servers.md", "docs/classroom.md", "pgq_teach/exercises/sandbox.py"]
)
def test_the_threat_model_is_said_in_the_same_words_everywhere(where):
    """One sentence, the same wherever it is said (the sandbox's docstring wraps it with its
    own words between: the kernel holds the superuser's address, the classroom page)."""
    text = (ROOT / where).read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", text.replace("`", "").replace('"', ""))
    text = re.sub(r" \([^)]*\)", "", text)  # an aside in brackets, as the docstring has
    assert THREAT_MODEL.lower() in text.lower(), where
