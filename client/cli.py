"""`mnemos`: the operator's command line. Settings come from MNEMOS_* environment variables (see
the README's table); every command takes --help, most take --json.

Commands live by group in client/cli_*.py; this module only assembles them.
"""

from __future__ import annotations

import typer

from client import cli_manage, cli_memory, cli_ops, cli_schedule

app = typer.Typer(
    name="mnemos",
    help="Long-term memory for AI agents, formed by Temporal workflows. "
    "Settings: MNEMOS_* environment variables (README, 'Settings').",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # errors are one line on stderr (client.cli_common.run)
    add_completion=False,
)

# Running a deployment
app.command(rich_help_panel="Run")(cli_ops.up)
app.command(rich_help_panel="Run")(cli_ops.worker)
app.command(rich_help_panel="Run")(cli_ops.setup)
app.command("setup-indexes", rich_help_panel="Run")(cli_ops.setup_indexes)
app.add_typer(cli_schedule.app, name="schedule", rich_help_panel="Run")
app.command(rich_help_panel="Run")(cli_ops.replay)

# Memory, as an agent backend uses it
app.command(rich_help_panel="Memory")(cli_memory.form)
app.command(rich_help_panel="Memory")(cli_memory.context)
app.command(rich_help_panel="Memory")(cli_memory.search)

# Managing memory (seed 004 "Managing User Memory")
app.add_typer(cli_manage.facts, name="facts", rich_help_panel="Manage")
app.add_typer(cli_manage.reflections, name="reflections", rich_help_panel="Manage")
app.add_typer(cli_manage.consolidated, name="consolidated", rich_help_panel="Manage")
app.command(rich_help_panel="Manage")(cli_manage.stats)
app.command(rich_help_panel="Manage")(cli_manage.status)


if __name__ == "__main__":
    app()
