"""sql/fence_sequences.sql on its own, on a real server: which sequences it moves past the epoch,
which it lists and leaves, and that one it cannot move does not stop it moving the rest. The
failover drill's test (tests/test_failover.py) shows why it runs, on a real asynchronous pair."""

from decimal import Decimal

from pgq_teach.statements import run

EPOCH = 2**32


def _fence(conn) -> dict[str, tuple[Decimal, int | None]]:
    return {name: (base, moved) for name, base, moved in run(conn, "fence_sequences").fetchall()}


def test_each_ascending_sequence_moves_past_the_epoch_and_the_rest_are_listed_and_left(conn):
    run(conn, "lab/fence_sequences_cases")
    fenced = _fence(conn)
    assert fenced['"Fence Lab"."Order Ids"'] == (EPOCH, EPOCH)  # quoted, mixed case: moved
    # RESTART WITH 10^10, not read since: past 10^10 + 2^31, not back to the first epoch
    assert fenced['"Fence Lab".restarted'] == (3 * EPOCH, 3 * EPOCH)
    # within 2^32 of bigint's end: no room, listed and left, and the others still moved
    assert fenced['"Fence Lab".near_the_end'][1] is None
    assert fenced['"Fence Lab".narrow'][1] is None  # an integer sequence's max is 2^31 - 1
    assert fenced['"Fence Lab".falling'][1] is None  # descending: not this statement's to move
    # the never-read narrow one gave its first value to the nextval that read it: a gap, no repeat
    expected = (EPOCH + 1, 3 * EPOCH + 1, 9223372036854775001, -1, 2)
    assert tuple(run(conn, "lab/fence_sequences_next").fetchone()) == expected
    # a second run skips one more epoch, no more
    assert _fence(conn)['"Fence Lab"."Order Ids"'] == (2 * EPOCH, 2 * EPOCH)
