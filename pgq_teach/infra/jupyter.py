"""JupyterLab, as `pgq-teach lab` starts it: `jupyter lab` itself, with the RFC 3987 grammar
that jsonschema loads put off until something checks an IRI (charts.defer_iri_grammar).

Why: JupyterLab's server imports jsonschema (through jupyter_events), and jsonschema builds that
grammar's parser as it loads. Measured on 2 CPUs: the imports JupyterLab starts with took 4.4 to
4.6 CPU-seconds, 1.6 to 1.7 with the grammar put off (the course's own package included), and the
lab answered after 2.7 to 2.8 s instead of 4.9 to 5.5 s: about 2 seconds sooner. Nothing in
JupyterLab checks an IRI as it starts; whatever does later loads the grammar then and gets the
same answer (tests/test_charts.py)."""

import sys

from pgq_teach.charts import defer_iri_grammar


def main() -> int:
    defer_iri_grammar()
    sys.argv[0] = "jupyter-lab"  # the name its usage and errors give, as `jupyter lab` has it
    from jupyterlab.labapp import main as lab  # what `jupyter lab` runs

    return lab() or 0


if __name__ == "__main__":
    sys.exit(main())
