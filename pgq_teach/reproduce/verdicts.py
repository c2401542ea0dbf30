"""The three verdicts a reproduced figure can get, and the words for them.

- reproduced: this server showed what the guide showed;
- differs, as the lesson explains: it showed something else, for a reason a
  lesson teaches (thread scheduling, a shared machine's timings, ...);
- differs: it showed something else and no lesson explains why; a finding
  worth reading.

Two more states are not verdicts: a figure not measured here (say, an
extension this server lacks) and a figure whose run was stopped early.
"""

from __future__ import annotations

from dataclasses import dataclass

REPRODUCED = "reproduced"
EXPLAINED = "differs, as the lesson explains"
DIFFERS = "differs"
NOT_MEASURED = "not measured"
STOPPED = "stopped"
KINDS = (REPRODUCED, EXPLAINED, DIFFERS, NOT_MEASURED, STOPPED)


@dataclass(frozen=True)
class FigureVerdict:
    kind: str
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a verdict is one of {', '.join(KINDS)}; got {self.kind!r}")

    @property
    def reproduced(self) -> bool:
        return self.kind == REPRODUCED

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}" if self.reason else self.kind


def reproduced(reason: str = "") -> FigureVerdict:
    return FigureVerdict(REPRODUCED, reason)


def explained(reason: str) -> FigureVerdict:
    return FigureVerdict(EXPLAINED, reason)


def differs(reason: str) -> FigureVerdict:
    return FigureVerdict(DIFFERS, reason)
