"""The one error line of every command never prints the store's password, and redacts only where
a driver quotes it: a password that is a common word neither garbles the line nor shows itself by
what it took out (review H136)."""

from __future__ import annotations

import psycopg
import pytest
from pydantic import SecretStr

from memory.settings import Settings, StoreSettings
from runtime.command_line import _without_credentials


def _settings(dsn: str) -> Settings:
    return Settings(store=StoreSettings(backend="postgres", postgres_dsn=SecretStr(dsn)))


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


def test_a_keyword_dsn_password_is_redacted_where_the_driver_quotes_it() -> None:
    dsn = "host=db user=mnemos password=my secret99 dbname=mnemos"
    with pytest.raises(psycopg.ProgrammingError) as err:
        psycopg.conninfo.conninfo_to_dict(dsn)
    line = f"store (postgres): {' '.join(str(err.value).split())}"
    assert "secret99" in line
    assert "secret99" not in _without_credentials(line, _settings(dsn))
