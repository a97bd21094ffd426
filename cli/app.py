"""`mnemos`: the operator's command line. Settings come from MNEMOS_* environment variables (see
the README's table); every command takes --help, most take --json.

Commands live by group in cli/*.py; this module only assembles them. Another package adds its
commands here the same way: ``app.add_typer(its_app, name=...)`` or ``app.command()(its_function)``.
"""

from __future__ import annotations

import typer

from cli import degraded, export_forget, lifecycle, manage, memory_commands, ops, reembed, schedule
from cli.check_model import check_model_command
from memory.settings_errors import InvalidSettingsError
from runtime.codec_server import codec_server
from serve.commands import keys_app, mcp_app, serve_app

app = typer.Typer(
    name="mnemos",
    help="Long-term memory for AI agents, formed by Temporal workflows. "
    "Settings: MNEMOS_* environment variables (README, 'Settings').",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # errors are one line on stderr (cli.common.run)
    add_completion=False,
)

# Running a deployment
app.command(rich_help_panel="Run")(ops.up)
app.command(rich_help_panel="Run")(ops.worker)
app.command(rich_help_panel="Run")(ops.setup)
app.command("setup-indexes", rich_help_panel="Run")(ops.setup_indexes)
app.add_typer(schedule.app, name="schedule", rich_help_panel="Run")
app.command(rich_help_panel="Run")(ops.replay)
app.command("check-model", rich_help_panel="Run")(check_model_command)

# Memory, as an agent backend uses it
app.command(rich_help_panel="Memory")(memory_commands.form)
app.command(rich_help_panel="Memory")(memory_commands.context)
app.command(rich_help_panel="Memory")(memory_commands.search)

# Managing memory (seed 004 "Managing User Memory")
app.add_typer(manage.facts, name="facts", rich_help_panel="Manage")
app.add_typer(manage.reflections, name="reflections", rich_help_panel="Manage")
app.add_typer(manage.consolidated, name="consolidated", rich_help_panel="Manage")
app.command(rich_help_panel="Manage")(manage.stats)
app.command(rich_help_panel="Manage")(manage.status)
app.add_typer(degraded.app, name="degraded", rich_help_panel="Manage")
app.command(rich_help_panel="Manage")(reembed.reembed)

# Serving other backends: HTTP API + memory page, API keys, MCP tools
app.add_typer(serve_app, name="serve", rich_help_panel="Serve")
app.add_typer(keys_app, name="keys", rich_help_panel="Serve")
app.add_typer(mcp_app, name="mcp", rich_help_panel="Serve")
app.command("codec-server", rich_help_panel="Serve")(codec_server)

# Your data: import, export, erase a user (issue 15)
app.add_typer(lifecycle.import_app, name="import", rich_help_panel="Your data")
app.command(rich_help_panel="Your data")(export_forget.export)
app.command(rich_help_panel="Your data")(export_forget.forget)


def main() -> None:
    """The `mnemos` entry point. Commands of other packages (serve/, runtime/) read the settings
    themselves: settings that do not validate are one line whichever command met them."""
    try:
        app()
    except InvalidSettingsError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
