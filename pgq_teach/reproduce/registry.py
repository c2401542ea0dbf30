"""The registry: one entry per guide figure (see entry.py for what an entry
holds), gathered from the modules that measure them, and the figures whose
experiment has not landed yet, with the lesson each one waits for."""

from __future__ import annotations

from . import claiming, notify, recovery, storage
from .entry import GUIDE_VERSIONS, Entry, guide_major

ENTRIES: dict[int, Entry] = {
    e.number: e
    for e in sorted(
        [*claiming.ENTRIES, *notify.ENTRIES, *recovery.ENTRIES, *storage.ENTRIES], key=lambda e: e.number
    )
}

MISSING: dict[int, str] = {}  # every figure has its experiment

__all__ = ["ENTRIES", "GUIDE_VERSIONS", "MISSING", "Entry", "guide_major"]
