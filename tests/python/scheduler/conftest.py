"""Fixtures of the scheduler tests (defined in sched_helpers.py, which the tests also import)."""
from sched_helpers import bench_root, mpi_modulepath, pg_database, service  # noqa: F401
