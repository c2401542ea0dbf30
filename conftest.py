"""Repository-wide pytest settings.

nbval compares stored and fresh outputs, but skips cells marked
NBVAL_IGNORE_OUTPUT (timings, ids, pids). Stray stderr, such as a warning,
must fail even there, so every cell's streams pass through this check.
"""

import nbval.plugin as _nbval

_coalesce = _nbval.coalesce_streams


def _refuse_stderr(outputs):
    merged = _coalesce(outputs)
    for out in merged:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            raise AssertionError(f"stray stderr in a notebook cell (a warning?):\n{out['text'][:2000]}")
    return merged


_nbval.coalesce_streams = _refuse_stderr
