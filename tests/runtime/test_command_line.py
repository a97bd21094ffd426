"""The one error line of every command never prints the store's password: the whole of it (as
written and percent-decoded) anywhere in the line, its pieces where a driver quotes them. A
password that is the DSN's own user, host or database name is printed as that name anyway, so it
is left alone: redacting it would garble the line and give it away (reviews H136, H138)."""

from __future__ import annotations

import psycopg
import pytest
import typer
from pydantic import SecretStr

from memory.settings import Settings, StoreSettings
from runtime.command_line import _without_credentials, run


def _settings(dsn: str) -> Settings:
    return Settings(store=StoreSettings(backend="postgres", postgres_dsn=SecretStr(dsn)))


async def _connect(dsn: str) -> None:
    """What a command does first with the store's DSN: the driver parses it."""
    psycopg.conninfo.conninfo_to_dict(dsn)


def _printed(dsn: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The error line a command prints on stderr for a DSN its driver refuses."""
    with pytest.raises(typer.Exit):
        run(_connect(dsn), _settings(dsn))
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("dsn", "line"),
    [
        (
            "postgresql://mnemos:mnemos@db:5432/mnemos",
            "cannot connect to Temporal at localhost:7233: is it running? (`mnemos up` starts one)",
        ),
        (
            "postgresql://postgres:postgres@localhost:5432/mnemos",
            'store (postgres): connection failed: FATAL: database "mnemos" does not exist',
        ),
        ("postgresql://u:a@db/x", "Temporal: namespace default not found"),
    ],
)
def test_a_password_that_is_a_common_word_leaves_the_line_as_it_is(dsn: str, line: str) -> None:
    assert _without_credentials(line, _settings(dsn)) == line


@pytest.mark.parametrize(
    ("dsn", "line"),
    [
        (  # the stock postgres:postgres DSN, a wrong password: libpq quotes the user
            "postgresql://postgres:postgres@localhost:5432/mnemos",
            'store (postgres): connection failed: connection to server at "127.0.0.1", port 5432 '
            'failed: FATAL: password authentication failed for user "postgres"',
        ),
        (  # the compose-style mnemos:mnemos DSN, the database not created yet
            "postgresql://mnemos:mnemos@db:5432/mnemos",
            'store (postgres): connection failed: FATAL: database "mnemos" does not exist',
        ),
        (  # a password that is the host's name, the host not found
            "postgresql://mnemos:dbhost@dbhost:5432/mnemos",
            'store (postgres): connection failed: could not translate host name "dbhost" to '
            "address: Name or service not known",
        ),
    ],
)
def test_a_password_that_is_the_dsns_user_or_database_name_leaves_the_quoted_name(
    dsn: str, line: str
) -> None:
    # 'for user "[redacted]"' would say the password is the user name.
    assert _without_credentials(line, _settings(dsn)) == line


def test_a_keyword_dsn_password_is_redacted_where_the_driver_quotes_it() -> None:
    dsn = "host=db user=mnemos password=my secret99 dbname=mnemos"
    with pytest.raises(psycopg.ProgrammingError) as err:
        psycopg.conninfo.conninfo_to_dict(dsn)
    line = f"store (postgres): {' '.join(str(err.value).split())}"
    assert "secret99" in line
    assert "secret99" not in _without_credentials(line, _settings(dsn))


@pytest.mark.parametrize(
    ("dsn", "secret"),
    [
        # generated passwords with a '"': the driver's quotes around them split at it
        ('postgresql://mnemos:Xy"9%zQ7@db:5432/mnemos', "9%zQ7"),
        ('postgresql://mnemos:ab"cd ef99@db:5432/mnemos', "ef99"),
        # libpq's password ends at the first "@": it quotes 'pa%ss"wo', a piece with a '"'
        ('postgresql://mnemos:pa%ss"wo@rd99@db:5432/mnemos', 'ss"wo'),
        # a "#" or "?" in it, which urlsplit reads as the start of a fragment or query
        ("postgresql://mnemos:ab%zz#cd99@db:5432/mnemos", "cd99"),
    ],
)
def test_a_password_with_a_quote_or_a_url_delimiter_is_never_printed(
    dsn: str, secret: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _printed(dsn, capsys)
    assert line.startswith("error: store (postgres): ")
    assert "[redacted]" in line
    assert secret not in line


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://mnemos@db:5432/mnemos?password=S3cr%t-pw",
        "postgresql://mnemos@db:5432/mnemos?sslmode=disable&password=S3cr%t-pw",
    ],
)
def test_a_password_given_as_a_query_keyword_of_a_uri_is_never_printed(
    dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _printed(dsn, capsys)
    assert line.startswith("error: store (postgres): invalid percent-encoded token")
    assert "S3cr" not in line


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://mnemos:S3cr%25t-pw99@db:5432/mnemos",
        "postgresql://mnemos@db:5432/mnemos?password=S3cr%25t-pw99",
    ],
)
def test_the_percent_decoded_password_is_redacted_anywhere_in_the_line(dsn: str) -> None:
    line = "store (postgres): connection failed: server said S3cr%t-pw99 is not the password"
    assert _without_credentials(line, _settings(dsn)) == (
        "store (postgres): connection failed: server said [redacted] is not the password"
    )
