"""The `pgmpi` command: one entry point for admins, the agent and the analysis.

Each area keeps its commands in its own module (a COMMANDS list) and names it in pyproject.toml under
[project.entry-points."pgmpi.commands"]; this file only collects them, so the service never imports the
agent (scheduler/) and areas never edit one shared file.  An area that is declared but fails to import
is an error, not a missing command.
"""
from importlib.metadata import entry_points

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pgmpi-site")
def main() -> None:
    """pgmpi-site: find MPI performance-guideline violations and repair them."""


for _area in sorted(entry_points(group="pgmpi.commands"), key=lambda e: e.name):
    for _cmd in _area.load():
        main.add_command(_cmd)


if __name__ == "__main__":
    main()
