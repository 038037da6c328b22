"""The `pgmpi` command: one entry point for admins, the agent and the analysis."""
import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pgmpi-site")
def main() -> None:
    """pgmpi-site: find MPI performance-guideline violations and repair them."""


if __name__ == "__main__":
    main()
