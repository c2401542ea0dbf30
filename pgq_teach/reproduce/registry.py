"""The registry: one entry per guide figure (see entry.py for what an entry
holds), gathered from the modules that measure them, and the figures whose
experiment has not landed yet, with the lesson each one waits for."""

from __future__ import annotations

from . import claiming, notify, storage
from .entry import GUIDE_VERSIONS, Entry, guide_major

ENTRIES: dict[int, Entry] = {
    e.number: e
    for e in sorted([*claiming.ENTRIES, *notify.ENTRIES, *storage.ENTRIES], key=lambda e: e.number)
}

MISSING = {
    8: "lesson 04's crash experiment",
    9: "lesson 04's held-back cleanup experiment",
    10: "lesson 05's fencing experiment",
    11: "lesson 06's retry schedule experiment",
}

__all__ = ["ENTRIES", "GUIDE_VERSIONS", "MISSING", "Entry", "guide_major"]
