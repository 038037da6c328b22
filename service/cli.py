"""The `pgmpi` command: one entry point for admins, the agent and the analysis.

Each area keeps its commands in its own module (COMMANDS list); this file only
collects them, so areas never edit one shared file.
"""
import importlib

import click

AREAS = ["service.commands", "service.analysis.cli", "service.publish_cli", "scheduler.cli",
         "service.demo"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pgmpi-site")
def main() -> None:
    """pgmpi-site: find MPI performance-guideline violations and repair them."""


for _area in AREAS:
    try:
        _module = importlib.import_module(_area)
    except ModuleNotFoundError as exc:  # an area not written yet
        if exc.name != _area:
            raise
        continue
    for _cmd in getattr(_module, "COMMANDS", []):
        main.add_command(_cmd)


if __name__ == "__main__":
    main()
