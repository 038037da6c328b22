"""pgmpi_formats: the files that cross the line between the agent (scheduler/), the service (service/), the
`pgmpi` command and the C library, read and written in one place each.  No Flask, no database.

| module | owns |
| --- | --- |
| `collectives` | the table of collectives, lib/src/core/collectives.def (shipped in the wheel) |
| `results` | raw results in ReproMPI's text format: reader (numpy columns) and writer |
| `prf` | .prf profiles: reader, writer, message-size conversion, redirected ranges (no numpy) |
| `site` | /etc/pgmpi-site: the configuration and profile-root resolver |
| `checker` | where pgmpitune-check is |
| `mpi_libraries` | deploy/mpi-libraries.tsv: the MPI libraries (id, family, version, source, prefix) and the environment that selects one |
| `native` | the MPI library's own algorithms: discovery (ompi_info, pgmpi-bench --list-native), labels |
| `ompi_rules` | Open MPI's classic dynamic rules file: writer and strict reader |
| `mpich_json` | MPICH's JSON selection file: the built-in tree, a complete generated file, its check |
| `native_search` | searching native algorithms x segment sizes (MGD / SMGD): the agent's search driver and the replay against exhaustive |

The agent imports this package and never service/; service/ imports scheduler/ only through here
(tests/python/formats/test_import_graph.py enforces both).
"""
