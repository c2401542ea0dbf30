"""Experiments: pure functions that run something on a live PostgreSQL and
return a result object with the measurements and the guide's figure.
Widgets, notebooks, tests and the CLI all call these; none holds logic of its own."""
