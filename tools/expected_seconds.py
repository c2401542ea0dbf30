"""Remake tests/expected_seconds.json, the slow items make test's parallel pass starts first.

The parallel pass (conftest.py, ``expected_seconds``) hands the longest groups of files to
its workers first, so no long group starts last and runs alone at the end. It knows an item
is long from this file; any other item counts as a typical one of its kind. Only the order
of the work reads it: no test asserts a time.

    pytest --nbval --nbval-current-env -n 3 --dist loadfile --serial skip --durations=60 \\
        tests notebooks > run.log
    python tools/expected_seconds.py run.log

keeps each item's setup, call and teardown seconds added up, rounded, for items of 5 s or more.
Seconds measured on a loaded machine are all longer, but the order is what counts.
"""

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "expected_seconds.json"
LINE = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S.*)$")
AT_LEAST_S = 5.0


def main(log: str) -> None:
    seconds: dict[str, float] = defaultdict(float)
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        if match := LINE.match(line.strip()):
            seconds[match.group(2)] += float(match.group(1))
    slow = {item: round(s) for item, s in sorted(seconds.items()) if s >= AT_LEAST_S}
    OUT.write_text(json.dumps(slow, indent=1) + "\n", encoding="utf-8")
    print(f"{len(slow)} items of {AT_LEAST_S:.0f} s or more -> {OUT.name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/expected_seconds.py PYTEST_DURATIONS_LOG")
    main(sys.argv[1])
