"""`pgmpi profile`: publish and roll back tuned profiles (DASHBOARDS owns this file)."""
import click


@click.group("profile")
def profile() -> None:
    """Publish tuned profiles into the site's profile root, or roll back."""


COMMANDS = [profile]
