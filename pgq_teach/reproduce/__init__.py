"""`pgq-teach reproduce`: the guide's figures re-measured on this server in
one run, each with a verdict, through the experiments API (no notebooks)."""

from .registry import ENTRIES, MISSING, Entry
from .report import MajorsComparison, Report, ReportRow
from .runner import compare, parse_only, reproduce, reproduce_here
from .verdicts import DIFFERS, EXPLAINED, REPRODUCED, FigureVerdict

__all__ = [
    "ENTRIES",
    "MISSING",
    "Entry",
    "MajorsComparison",
    "Report",
    "ReportRow",
    "compare",
    "parse_only",
    "reproduce",
    "reproduce_here",
    "DIFFERS",
    "EXPLAINED",
    "REPRODUCED",
    "FigureVerdict",
]
