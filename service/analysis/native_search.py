"""The native searches (MGD / SMGD, the grid, replay and the report table) live in the shared package, since
the agent's search driver (scheduler/native_driver.py) runs the same engine and the agent never imports the
service: pgmpi_formats/native_search.py.  Re-exported here for the analysis side."""
from pgmpi_formats.native_search import (NEIGHBOUR, SEARCHES, SEGMENTED, SEGMENTS, SIZES, Cell, Path, Row,  # noqa: F401
                                         bound_row, campaign_row, cells_from_files, grid, replay, run, run_sizes,
                                         search, steps, table)
