"""What the stored notebooks show a reader: no raw `None` shown as a value, no
`timedelta` repr, no count of one with a plural unit ("1 buffers"), and no path of
the machine a lesson was stored on.
Every figure reaches the screen through `pgq_teach.tables`' formats; this scans
every stored output (stdout, text/plain and text/html) of every lesson, as
re-executed and stored, for what slipped past them."""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

# A unit counted in the course's outputs, in its plural form.
UNITS = (
    "buffers|rows|jobs|seconds|minutes|hours|pages|tuples|workers|sessions|attempts|transactions"
    "|claims|runs|times|notifications|wake-ups|row versions|dead row versions|locks|errors|failures|retries"
)
RAW = {
    "a timedelta repr": re.compile(r"(?<![\d:])\d+:\d\d:\d\d\.\d{6}\b|datetime\.timedelta\("),
    "a count of one with a plural unit": re.compile(rf"(?<![\d.,])1 (?:{UNITS})\b"),
    # None where a value belongs; prose that begins "None of the jobs ..." is not a value
    "a raw None": re.compile(r"\bNone\b(?! (?:of|was|were|is|are|left)\b)"),
    # "2 row(s)": tables.count says the singular or the plural itself
    "a unit with (s)": re.compile(r"[a-z]\(s\)"),
    # the machine a lesson was stored on: a scratch data folder, a checkout, a home
    "a machine path": re.compile(r"(?<![\w.])/(?:tmp|work|root|home)/"),
}


def shown_texts(cell: nbformat.NotebookNode) -> list[str]:
    """What a code cell's stored outputs show: stdout and the text and HTML of results."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(output.get("text", ""))
        data = output.get("data", {})
        texts += [data[kind] for kind in ("text/plain", "text/html") if kind in data]
    return texts


def raw_values(text: str) -> list[str]:
    """Each raw value in `text`, named, with a little of what surrounds it."""
    return [
        f"{name}: ...{text[max(0, m.start() - 50) : m.end() + 20]!r}..."
        for name, pattern in RAW.items()
        for m in pattern.finditer(text)
    ]


def raw_in(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [
        f"cell {cell.get('id')}: {found}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for text in shown_texts(cell)
        for found in raw_values(text)
    ]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_stored_outputs_show_no_raw_values(path):
    found = raw_in(path)
    assert not found, f"{path.name} shows raw values:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "<tr><td>19905</td><td>idle in transaction</td><td>0:00:26.072373</td><td>None</td></tr>",
        "backend_xid 766249, backend_xmin None",
        "oldest due wait 0:00:00.267219; dead row versions 268",
        "xact_age datetime.timedelta(seconds=35, microseconds=360231)",
        "after vacuum, no transaction -> 1 buffers, 0.03 ms",
        "claimed 1 rows in 1 seconds",
        "Step(drain=None, vacuum=None)",
        "A's completion updated 0 row(s), B's 1",
        "Unix socket in /tmp/scratch/pg18 (no TCP port)",
    ],
)
def test_the_scan_finds_each_kind_of_raw_value(text):
    assert raw_values(text), text


@pytest.mark.parametrize(
    "text",
    [
        "None of the 5,000 jobs was claimed twice",
        "after vacuum, no transaction -> 1 buffer, 0.03 ms; 21 buffers before",
        "a 0.1 seconds poll; 11 rows; 2,001 jobs; 31 sessions",
        "xact_age 35.4 s; backend_xid –; started 12:00:35 UTC",
        "lease 0:30 left",
        "a footnote (s) alone",
        "Unix socket in /var/lib/pgq-teach/pg18 (no TCP port); see docs/servers.md",
    ],
)
def test_the_scan_leaves_prose_and_good_values_alone(text):
    assert not raw_values(text), raw_values(text)


def test_the_scan_reads_every_kind_of_output(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(x)")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="backend_xmin None\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "1 buffers"}, execution_count=1),
        nbformat.v4.new_output("display_data", data={"text/html": "<td>0:00:35.360231</td>"}),
    ]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("Prose may say None, 1 buffers and 0:00:35.360231.")]
    path = tmp_path / "99-raw.ipynb"
    nbformat.write(nb, path)
    assert len(raw_in(path)) == 3
