# pgmpi-site front door. `make demo` and `make test` are the two commands of README.md.
SHELL := /bin/bash
TOP   := $(CURDIR)
VENV  := $(TOP)/.venv
MPIS  ?= $(shell deploy/mpi-env.sh --list)    # the ids of deploy/mpi-libraries.tsv

.PHONY: demo demo-stop test deps venv lib mpis ctest pytest services-up services-down bench clean help

help:
	@echo "make demo    - install what is missing, build, run a local tuning campaign, serve the dashboard"
	@echo "               (a second run reuses the campaign and says so; make demo FRESH=1 measures again)"
	@echo "make test    - the whole test suite against real PostgreSQL, Slurm, five MPI libraries, Lmod, Spack, EasyBuild"
	@echo "make lib     - build libpgmpitune + pgmpi-bench for each installed MPI (deploy/mpi-libraries.tsv)"
	@echo "make mpis    - install the MPI libraries of deploy/mpi-libraries.tsv (Open MPI 5, MPICH 5, Intel MPI)"
	@echo "make ctest   - C tests only;  make pytest ARGS='-k name' - Python tests only (services must be up)"
	@echo "make services-up / services-down - local PostgreSQL and Slurm"
	@echo "make bench   - the benchmark scripts of tests/bench (print figures)"
	@echo "make demo-stop - stop the dashboard that make demo serves"

deps:
	@deploy/install-packages.sh all

venv:
	@deploy/venv.sh

lib:
	@deploy/build-lib.sh all

mpis:
	@deploy/install-mpis.sh all

demo:
	@FRESH=$(FRESH) deploy/demo.sh

test:
	@tests/run-all.sh

ctest: lib
	@for m in $(MPIS); do [ -d build/$$m ] || continue; echo "== ctest ($$m)"; (cd build/$$m && ctest --output-on-failure) || exit 1; done

pytest: venv
	@eval "$$(deploy/slurm.sh env)"; PGMPI_TEST_DATABASE_URL=$$(deploy/postgres.sh url) $(VENV)/bin/pytest $(ARGS)

services-up:
	@deploy/postgres.sh up && deploy/slurm.sh up

services-down:
	@deploy/slurm.sh down; deploy/postgres.sh down

bench:
	@for s in tests/bench/*.sh tests/bench/*.py; do [ -e "$$s" ] || continue; echo "== $$s"; case $$s in *.py) $(VENV)/bin/python $$s ;; *) bash $$s ;; esac; done

clean:
	rm -rf build demo

demo-stop:
	@$(VENV)/bin/python deploy/demo.py stop
