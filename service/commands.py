"""`pgmpi db|user|token|serve`: the service's command-line side (SERVICE owns this file)."""
import click


@click.group("db")
def db() -> None:
    """Create or upgrade the database schema."""


@click.group("user")
def user() -> None:
    """Manage people who log in to the dashboards."""


@click.group("token")
def token() -> None:
    """Manage API tokens of agents and scripts."""


COMMANDS = [db, user, token]
