"""charts.py's first chart, in a fresh interpreter as a kernel's is: Altair loads without building
RFC 3987's grammar (charts.defer_iri_grammar says why), and an IRI check still has it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

FIRST_CHART = textwrap.dedent(
    """
    import json, sys
    from pgq_teach import charts

    chart = charts.bars(
        [{"claim": "one", "s": 1.0}], label="claim", value="s", heading="h",
        value_axis=charts.axis("s", "s", ",.1f"),
    )
    chart.to_dict()  # built and validated against Vega-Lite's schema, as JupyterLab gets it
    import jsonschema
    grammar = "rfc3987_syntax.syntax_helpers"
    seen = {"jsonschema": "jsonschema._format" in sys.modules, "grammar_after_chart": grammar in sys.modules}
    check = jsonschema.Draft7Validator.FORMAT_CHECKER
    seen["iri_ok"] = check.conforms("https://example.org/r\\u00e9sum\\u00e9", "iri")
    seen["iri_bad"] = check.conforms("not an iri", "iri")
    seen["grammar_after_check"] = grammar in sys.modules
    print(json.dumps(seen))
    """
)


def test_the_first_chart_skips_the_iri_grammar_and_an_iri_check_still_loads_it():
    out = subprocess.run([sys.executable, "-c", FIRST_CHART], capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout)
    assert seen == {
        "jsonschema": True,
        "grammar_after_chart": False,
        "iri_ok": True,
        "iri_bad": False,
        "grammar_after_check": True,
    }


def layer_of(spec: dict, mark: str) -> dict:
    return next(
        layer
        for layer in spec["layer"]
        if (layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) == mark
    )


def test_a_dashed_rules_legend_names_what_the_line_is():
    from pgq_teach import charts

    rows = [{"what": "a", "n": 3.0}]
    guide = charts.bars(
        rows,
        label="what",
        value="n",
        heading="h",
        value_axis=charts.axis("n"),
        refs=[charts.Reference("guide #5: 4 s", 4.0)],
    ).to_dict()
    ideals = charts.bars(
        rows,
        label="what",
        value="n",
        heading="h",
        value_axis=charts.axis("n"),
        refs=[
            charts.Reference("serial 4 s", 4.0, "the ideal times"),
            charts.Reference("shared", 1.0, "the ideal times"),
        ],
    ).to_dict()
    titles = [layer_of(s, "rule")["encoding"]["strokeDash"]["legend"]["title"] for s in (guide, ideals)]
    assert titles == ["dashed line: the guide's figure", "dashed lines: the ideal times"]


def test_a_log_bar_chart_reads_at_its_smallest_bar():
    """Lesson 06's waits, 20 s to 160 s beside the hour cap: on a log axis from a power of ten
    under the smallest bar, ticked at powers of ten only (no crowded labels)."""
    from pgq_teach import charts

    rows = [{"failure": f"after failure {n}", "wait": w} for n, w in enumerate((20, 40, 80, 160), 1)]
    spec = charts.bars(
        rows,
        label="failure",
        value="wait",
        heading="h",
        value_axis=charts.axis("wait", "s"),
        refs=[charts.Reference("guide #9: the cap, 3,600 s", 3600)],
        log=True,
    ).to_dict()
    x = layer_of(spec, "bar")["encoding"]["x"]
    assert x["scale"]["type"] == "log" and x["scale"]["domainMin"] == 10
    assert x["axis"]["values"] == [10, 100, 1000, 10000]
