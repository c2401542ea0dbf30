"""Reading the learner's text before it goes to the server: placeholders are
found outside strings and comments only, casts survive, and the first word is
read past comments."""

import pytest

from pgq_teach.exercises.learner_sql import Refused, read


def test_placeholders_become_parameters_and_casts_survive():
    sql = read(
        "UPDATE jobs SET leased_until = now() + :'lease'::interval WHERE id = :id AND run_at < :'lease'::interval",  # noqa: E501 (the input under test, kept on one line)
        ("id", "lease"),
    )
    assert sql.placeholders == ("lease", "id")
    assert sql.for_psycopg.count("%(lease)s::interval") == 2 and "%(id)s" in sql.for_psycopg
    assert sql.for_server.count("$1::interval") == 2 and "$2" in sql.for_server


def test_colons_in_strings_comments_and_dollar_quotes_are_not_placeholders():
    text = "SELECT id FROM jobs -- :nope\nWHERE kind <> ':nope' AND kind <> $q$:nope$q$ /* :nope */ AND payload ? 'a%'"  # noqa: E501 (the input under test, kept on one line)
    sql = read(text, ())
    assert sql.placeholders == () and sql.for_server == text
    assert "'a%%'" in sql.for_psycopg


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "empty"),
        ("/* only */ -- comments", "only a comment"),
        ("/* DROP */ TRUNCATE jobs", "TRUNCATE is not one"),
        ("SELECT 'open", "never closed"),
        ("SELECT /* open", "never closed"),
        ("SELECT id FROM jobs WHERE id = :other", ":other is not a value"),
    ],
)
def test_refusals_say_why(text, says):
    with pytest.raises(Refused, match=says):
        read(text, ("id",))


def test_the_first_three_words_are_read_past_comments():
    sql = read("-- my index\nCREATE /* partial */ INDEX ready ON jobs (run_at)", (), frozenset({"CREATE"}))
    assert sql.leading == ("CREATE", "INDEX", "READY")
