"""What the README promises of every failing `mnemos` command, as the tests check it."""

from __future__ import annotations

from typer.testing import Result


def one_error_line(result: Result) -> str:
    """The command failed with exit code 1 and one `error: ` line, raising nothing else (no
    traceback, no usage box): that line."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 1, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]
