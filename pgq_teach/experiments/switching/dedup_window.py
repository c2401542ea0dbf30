"""Lesson 11: the broker's duplicate window is finite. One message id published
at once, again within the window, and again after it closed."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ... import checks
from ...infra import broker


@dataclass(frozen=True)
class WindowRepublish:
    """One message id published three times: at once, again within the stream's
    duplicate window, and again after it closed. What the broker acked, and kept."""

    window_s: float
    waited_s: float
    first_duplicate: bool
    within_duplicate: bool  # True: the broker recognised the repeat and did not store it
    after_duplicate: bool  # False: the window had forgotten the id, so the repeat was stored
    stored: int  # messages the stream holds for the one event

    def summary(self) -> str:
        return (
            f"duplicate window {self.window_s:g} s: a repeat within it was "
            f"{'dropped' if self.within_duplicate else 'STORED'}; a repeat {self.waited_s:g} s later was "
            f"{'dropped' if self.after_duplicate else 'stored'}; the stream holds {self.stored} copies "
            "of the one event"
        )


def republish_after_window(*, window_s: float = 1.0, nats: broker.Broker | None = None) -> WindowRepublish:
    """Publish one event (Nats-Msg-Id "1") to a stream whose duplicate window is
    `window_s`, repeat it at once, then again once the window has passed."""
    window_s = float(checks.seconds("window_s", window_s, 0.1, 10))
    nats = nats or broker.Broker()
    waited_s = round(window_s + 0.5, 2)
    with broker.Client(nats.start().url, name="window") as client:
        client.make_stream("WINDOW", ["window.>"], duplicate_window_s=window_s)
        _, first = client.publish("window.event", b"{}", "1")
        _, within = client.publish("window.event", b"{}", "1")
        time.sleep(waited_s)
        _, after = client.publish("window.event", b"{}", "1")
        stored = client.stream_messages("WINDOW")
    return WindowRepublish(window_s, waited_s, first, within, after, stored)
