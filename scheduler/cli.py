"""`pgmpi agent|campaign`: the nightly campaign agent (SCHEDULER owns this file)."""
import click


@click.group("agent")
def agent() -> None:
    """Run the campaign agent (nightly, or once)."""


@click.group("campaign")
def campaign() -> None:
    """Submit, follow and cancel benchmark campaigns."""


COMMANDS = [agent, campaign]
