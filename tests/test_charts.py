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
