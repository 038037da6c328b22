"""`pgmpi analyze`: statistics, violations and profiles on the command line (ANALYSIS owns this file)."""
import click


@click.group("analyze")
def analyze() -> None:
    """Verify performance guidelines in raw results and generate tuned profiles."""


COMMANDS = [analyze]
