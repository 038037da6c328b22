"""The MPI library's own algorithms in pgmpi-bench: discovery through MPI_T (agreeing with ompi_info and with
pgmpi_formats.native.FALLBACK), selection by name, interleaved measurement with the check round, and the
refusal of unknown names.  Correctness at 4 ranks; no timing is asserted (tests/bench/native_switch.py
prints the figures)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from pgmpi_formats import footer, native
from pgmpi_formats import results as reader

pytestmark = pytest.mark.mpi

MPI_NAME = {"allreduce": "MPI_Allreduce", "reduce": "MPI_Reduce", "bcast": "MPI_Bcast"}


def listing(bench, env=None) -> tuple[native.Discovery, dict[str, int]]:
    r = bench.run(["--list-native"], np=1, env=env)
    assert r.rc == 0, r.stderr
    current = {l.split()[2]: int(l.split()[4]) for l in r.stdout.splitlines() if l.startswith("cvar ")}
    return native.parse_listing(r.stdout), current


def test_discovery_agrees_with_the_library_and_the_fallback(bench):
    d, current = listing(bench)
    assert d.library == bench.mpi and d.version == native.FALLBACK[bench.mpi].version
    assert set(current.values()) == {0}                      # nothing forced by default
    fb = native.FALLBACK[bench.mpi]
    assert d.algorithms == fb.algorithms, "FALLBACK no longer matches the installed library"
    assert d.segment_variables == fb.segment_variables and d.variables == fb.variables
    if bench.mpi == "openmpi":                               # MPI_T and ompi_info tell the same
        o = native.discover("openmpi", env=bench.env())
        assert o.algorithms == d.algorithms and o.segment_variables == d.segment_variables
        assert o.version == fb.version
    assert native.Discovery.from_json(d.to_json()) == d


def test_every_name_selects_its_value(bench):
    """Each discovered MPICH name, set by name in the environment the way users force it, reads back through
    MPI_T as the value pgmpi-bench writes for it (its position in the variable's list, which pgmpi-bench
    parses out of the description).  Open MPI's names and values are an MPI_T enumeration, compared with
    ompi_info above, so one round (each list's last name) suffices there."""
    d, _ = listing(bench)
    rounds = max(len(v) for v in d.algorithms.values())
    for j in (range(rounds) if bench.mpi == "mpich" else [rounds - 1]):   # Open MPI: one round, the last ones
        env, want = {}, {}
        for key, algs in d.algorithms.items():
            if bench.mpi == "openmpi":
                j = len(algs) - 1
            if j < len(algs):
                env[(d.variables[key] if bench.mpi == "mpich" else "OMPI_MCA_" + d.variables[key])] = algs[j].name
                want[key] = algs[j].value
        _, current = listing(bench, env)
        assert {k: current[k] for k in want} == want


def run_natives(bench, tmp_path, np, calls, algs, sizes, extra=()):
    out = tmp_path / f"native-{bench.mpi}-{np}.txt"
    r = bench.run([f"--calls={calls}", f"--algorithms={algs}", f"--sizes={sizes}", "--nrep=3",
                   "--no-barrier-rows", f"--output={out}", *extra], np=np,
                  env={"OMPI_MCA_mpi_yield_when_idle": "1"})   # 4 ranks on 2 cores: no busy polling
    assert r.rc == 0, r.stderr
    return reader.read_file(out)


def test_natives_interleaved_checked_and_forced_at_4_ranks(bench, tmp_path):
    run = run_natives(bench, tmp_path, 4, "allreduce,reduce,bcast", "default,native:all", "64K")
    assert run.header["native_switch"] == ("communicator_per_variant" if bench.mpi == "openmpi" else "mpi_t_per_call")
    checks = defaultdict(dict)
    for line in run.pgmpi_lines:
        p = line.split()
        if p[1] == "check":
            checks[(p[2], int(p[3]))][p[4]] = p[5] if p[5] == "ok" else p[6]
    d = native.FALLBACK[bench.mpi]
    for call, key in (("MPI_Allreduce", "allreduce"), ("MPI_Reduce", "reduce"), ("MPI_Bcast", "bcast")):
        for size in (65536,):
            assert set(checks[(call, size)]) == {"default"} | {f"native:{n}" for n in d.names(key)}
    reasons = {why for v in checks.values() for why in v.values() if why != "ok"}
    # exactly the algorithms of native.ORDER_UNSAFE reorder a non-commutative operation (the default never
    # does); on Open MPI this also shows that each forced algorithm really ran on its own communicator
    failed = {(c, a) for (c, s), v in checks.items() for a, why in v.items() if why != "ok"}
    assert failed == {(MPI_NAME[k], f"native:{n}") for k, n in native.ORDER_UNSAFE[bench.mpi]}
    assert reasons <= {"noncommutative"}
    # every algorithm that passed its check is measured in that cell, a failed one is not
    timed = {(run.tests[t], int(m), run.algorithms[a]) for t, m, a in zip(run.test, run.msize, run.algorithm)}
    for (call, size), v in checks.items():
        for alg, why in v.items():
            assert ((call, size, alg) in timed) == (why == "ok"), (call, size, alg, why)


def test_unknown_native_names_are_refused_with_the_choices(bench):
    r = bench.run(["--calls=allreduce", "--algorithms=native:no_such_thing", "--sizes=8", "--nrep=1"], np=0)
    assert r.rc == 2 and "unknown native algorithm 'native:no_such_thing'" in r.stderr
    assert "MPI_Allreduce: native:" in r.stderr                         # the valid choices, named
    r = bench.run(["--calls=scan", "--algorithms=native:recursive_doubling:seg=1K", "--sizes=8", "--nrep=1"], np=0)
    assert r.rc == 2 and "no segment size" in r.stderr
    r = bench.run(["--calls=bcast", "--algorithms=native:binomial:segment=1K", "--sizes=8", "--nrep=1"], np=0)
    assert r.rc == 2 and ":seg=<bytes>" in r.stderr


def test_a_refused_decision_file_kills_jobs(bench, tmp_path):
    """What the readers refuse is what breaks jobs, at 4 ranks with the file in the environment (a generated
    file running correctly after `module load`: tests/python/packaging/test_native_module.py)."""
    from pgmpi_formats import mpich_json as mj
    from pgmpi_formats import ompi_rules as orr
    from pgmpi_formats.ompi_rules import Decision
    bad = tmp_path / "bad"
    if bench.mpi == "openmpi":
        bad.write_text("1\n0\n1\n4\n1\n0 6 0 0\n")           # allgather two_proc at 4 ranks
        with pytest.raises(orr.RulesError, match="two_proc"):
            orr.parse_rules(bad.read_text(), str(bad), native.discover("openmpi", env=bench.env()))
        env = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(bad)}
    else:
        lib = mj.find_library()
        base, known = mj.builtin_tree(lib), mj.algorithm_names(lib)
        tree = mj.generate([Decision("bcast", 4, 8, "native:binomial")], base, known)
        del tree["collective=bcast"]
        assert mj.check_tree(tree, base, known, mj.library_version(lib))   # refused by the check
        bad.write_text(mj.dumps(tree))
        env = {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(bad)}
    r = bench.run(["--calls=allgather", "--algorithms=default", "--sizes=8", "--nrep=1",
                   f"--output={tmp_path / 'bad.txt'}"], np=4, env=env)
    # the job dies: Open MPI fails the first allgather (already inside MPI_Comm_split_type), MPICH asserts
    assert r.rc != 0
    out = r.stderr + r.stdout
    if bench.mpi == "openmpi":
        # Open MPI's runtime sometimes loses the help text of the aborting ranks ("ORTE_ERROR_LOG ... show_help.c",
        # seen on an idle machine); the job died all the same
        assert "MPI_ERR_UNSUPPORTED_OPERATION" in out or "show_help.c" in out, out
    else:
        assert "Assertion failed" in out, out


def test_the_decision_file_a_run_ran_under_is_recorded_byte_for_byte(bench, tmp_path):
    """#@native_file / #@native_file_fnv1a64: the analysis lets a mock-up with natively retuned parts compete
    only on runs under exactly the file it writes (service/analysis/native_decision.py, second pass)."""
    from pgmpi_formats import mpich_json as mj
    from pgmpi_formats import ompi_rules as orr
    from pgmpi_formats.ompi_rules import Decision
    decs = [Decision("bcast", 2, 8, "default"), Decision("bcast", 2, 1024, "native:binomial")]
    f = tmp_path / ("native.rules" if bench.mpi == "openmpi" else "native.json")
    if bench.mpi == "openmpi":
        f.write_text(orr.write_rules(decs, native.discover("openmpi", env=bench.env())))
    else:
        lib = mj.find_library()
        f.write_text(mj.dumps(mj.generate(decs, mj.builtin_tree(lib), mj.algorithm_names(lib))))

    def header(env, name):
        out = tmp_path / name
        r = bench.run(["--calls=bcast", "--algorithms=default,bcast_as_scatter_allgather", "--sizes=1024",
                       "--nrep=3", "--no-barrier-rows", f"--output={out}"], np=2, env=env)
        assert r.rc == 0, r.stderr
        return reader.read_file(out).header

    h = header(native.file_env(bench.mpi, str(f)), "under.txt")
    assert h["native_file"] == str(f) and h["native_file_fnv1a64"] == native.file_digest(f.read_bytes())
    f.write_text(f.read_text() + " ")                  # one byte more: another file
    assert header(native.file_env(bench.mpi, str(f)), "changed.txt")["native_file_fnv1a64"] != h["native_file_fnv1a64"]
    assert "native_file" not in header({}, "none.txt")


def test_serve_takes_nrep_per_cell_under_a_time_budget(bench, tmp_path):
    """A race's second stage and a confirmation pass ask for their repetitions per cell (nrep=); a campaign with
    a fixed count and a time budget gave its searches both, and --serve refused every nrep= command, so the
    race's job failed.  The count now replaces --nrep for that cell and the budget still caps it."""
    rd = "native:recursive_doubling"
    out = tmp_path / "budget.txt"
    p = bench.run(["--serve", "--calls=allreduce", "--sizes=64", f"--algorithms=default,{rd}", "--nrep=6",
                   "--time-budget=60", "--no-barrier-rows", f"--output={out}"], np=2,
                  input=f"cell MPI_Allreduce 64 {rd} nrep=9\nquit\n", timeout=120)
    assert p.rc == 0, p.stderr
    assert [a.split()[:2] for a in p.stdout.strip().splitlines()] == [["result", "default"], ["result", rd], ["done"]]
    run = reader.read_file(out)
    rows = defaultdict(int)
    for m, a in zip(run.msize, run.algorithm):
        rows[(int(m), run.algorithms[a])] += 1
    assert rows == {(64, "default"): 9, (64, rd): 9}


def test_serve_measures_the_requested_cells_in_one_mpirun(bench, tmp_path):
    """--serve (the native search's one mpirun per collective, scheduler/native_driver.py): each 'cell' command
    measures only its labels with the default and the control arm, answers the medians, and a command it
    cannot serve is refused without measuring anything."""
    rd = "native:recursive_doubling"
    other = "native:nonoverlapping" if bench.mpi == "openmpi" else "native:reduce_scatter_allgather"
    out = tmp_path / "served.txt"
    script = (f"cell MPI_Allreduce 64 {rd}\ncell allreduce 4096 {rd},{other}\ncell MPI_Allreduce 128 {rd}\n"
              f"cell MPI_Allreduce 64 native:nosuch\ncell MPI_Allreduce 64 {rd} nrep=x\ncell MPI_Allreduce 64 {rd} nrep=9\n"
              f"cell MPI_Allreduce 4096 {other} alone\ncell MPI_Allreduce 4096 default nrep=4 alone\n"
              f"cell MPI_Allreduce 4096 {rd},{other} alone\ncell MPI_Allreduce 4096 default alone alone\n"
              f"cell MPI_Allreduce 64 default_control,default,{rd} nrep=5 blocks=2\n"
              f"cell MPI_Allreduce 64 {rd} blocks=2 alone\ncell MPI_Allreduce 64 {rd} blocks=0\nquit\n")
    p = bench.run(["--serve", "--calls=allreduce", "--sizes=64,4096", f"--algorithms=default,{rd},{other},default_control",
                   "--nrep=6", "--no-barrier-rows", f"--output={out}"], np=2, input=script, timeout=120)
    assert p.rc == 0, p.stderr
    answers = [a.split() for a in p.stdout.strip().splitlines()]
    assert [a[:2] for a in answers[:9]] == [["result", "default"], ["result", rd], ["result", "default_control"],
                                             ["done"], ["result", "default"], ["result", rd], ["result", other],
                                             ["result", "default_control"], ["done"]]
    assert all(float(a[2]) > 0 for a in answers[:9] if a[0] == "result")
    # each answer's second figure is the lower quartile of its rows (the race screens on it): the first
    # command's 6 rows per label, linear between order statistics
    first = defaultdict(list)
    run0 = reader.read_file(out)
    for m, a, x in zip(run0.msize, run0.algorithm, run0.runtime):
        if int(m) == 64 and len(first[run0.algorithms[a]]) < 6:
            first[run0.algorithms[a]].append(float(x))
    for a in answers[:3]:
        assert len(a) == 4 and float(a[3]) <= float(a[2])
        assert float(a[3]) == pytest.approx(float(np.quantile(first[a[1]], 0.25)), rel=1e-8)
        assert float(a[2]) == pytest.approx(float(np.median(first[a[1]])), rel=1e-8)
    assert [" ".join(a) for a in answers[9:11]] == ["error 128 B is not among --sizes",
                                                    "error native:nosuch is not among --algorithms for MPI_Allreduce"]
    # nrep=N (a race's second stage): that many repetitions instead of --nrep; anything else refused
    assert " ".join(answers[11]) == ("error expected nrep=<n> (n >= 1), alone or blocks=<k> (k >= 1) after the "
                                     "labels, got 'nrep=x'")
    assert [a[:2] for a in answers[12:16]] == [["result", "default"], ["result", rd], ["result", "default_control"], ["done"]]
    # alone (native_driver's confirmation round): exactly the one label named, nothing next to it
    assert [a[:2] for a in answers[16:20]] == [["result", other], ["done"], ["result", "default"], ["done"]]
    assert " ".join(answers[20]) == f"error alone measures one label, got '{rd},{other}'" and len(answers) == 28
    assert " ".join(answers[21]) == "error expected at most one nrep=<n>, one alone and one blocks=<k> after the labels"
    # blocks=k (the confirmation round): exactly the labels named, each alone in alternating blocks of k
    assert [a[:2] for a in answers[22:26]] == [["result", "default_control"], ["result", "default"], ["result", rd], ["done"]]
    assert " ".join(answers[26]) == "error alone measures one label, blocks=<k> several each alone: not both"
    assert " ".join(answers[27]) == ("error expected nrep=<n> (n >= 1), alone or blocks=<k> (k >= 1) after the labels, "
                                     "got 'blocks=0'")
    run = reader.read_file(out)
    rows = defaultdict(int)
    for m, a in zip(run.msize, run.algorithm):
        rows[(int(m), run.algorithms[a])] += 1
    assert rows == {(64, "default"): 6 + 9 + 5, (64, rd): 6 + 9 + 5, (64, "default_control"): 6 + 9 + 5,
                    (4096, "default"): 6 + 4, (4096, rd): 6, (4096, other): 6 + 6, (4096, "default_control"): 6}
    # one buffer pair per command (--buffers=cell), the blocks command's too: not one per block
    assert sum(str(x).startswith("#@pgmpi buffers MPI_Allreduce 64 ") for x in run.pgmpi_lines) == 3
    served = list(footer.records(run.pgmpi_lines, footer.Served))
    assert served == [footer.Served(1, "MPI_Allreduce", 64, (rd,)), footer.Served(2, "MPI_Allreduce", 4096, (rd, other)),
                      footer.Served(3, "MPI_Allreduce", 64, (rd,)), footer.Served(4, "MPI_Allreduce", 4096, (other,)),
                      footer.Served(5, "MPI_Allreduce", 4096, ("default",)),
                      footer.Served(6, "MPI_Allreduce", 64, ("default_control", "default", rd), blocks=2)]


def test_serve_numbers_each_labels_rows_at_a_cell_as_one_series(bench, tmp_path):
    """A label's rows at a cell are one series over the mpirun (nrep 0..n-1 in the order measured, as an
    interleaved cell's): across a blocks=<k> command's blocks and across the commands on that cell (a race's
    first stage, its second stage, the confirmation), not from 0 again in every block or command: the store
    keeps a series' timings in nrep order (service/store/ingest.py), which put their first rows together.
    Another cell starts its own series.  Fails on the old pgmpi-bench (rd at 64 B: 0 1 2, then 0 1 0 1 0 1 0,
    then 0 1; before 2026-11-26 a blocks= command's blocks restarted too)."""
    rd = "native:recursive_doubling"
    out = tmp_path / "blocks.txt"
    p = bench.run(["--serve", "--calls=allreduce", "--sizes=64,4096", f"--algorithms=default,{rd}", "--nrep=6",
                   "--no-barrier-rows", f"--output={out}"], np=2,
                  input=(f"cell MPI_Allreduce 64 {rd} nrep=3\ncell MPI_Allreduce 64 {rd},default nrep=7 blocks=2\n"
                         f"cell MPI_Allreduce 4096 {rd} nrep=2\ncell MPI_Allreduce 64 {rd} nrep=2 alone\nquit\n"),
                  timeout=120)
    assert p.rc == 0, p.stderr
    run = reader.read_file(out)
    series = defaultdict(list)
    for a, m, i in zip(run.algorithm, run.msize, run.nrep):
        series[(int(m), run.algorithms[a])].append(int(i))
    assert series == {(64, rd): list(range(3 + 7 + 2)), (64, "default"): list(range(3 + 7)),
                      (4096, rd): [0, 1], (4096, "default"): [0, 1]}, dict(series)


def test_search_driver_one_mpirun_per_round_when_the_grid_is_too_large(bench, tmp_path, monkeypatch):
    """scheduler/native_driver.py: a grid beyond what one --serve mpirun takes (MAX_LABELS, here set to 0)
    falls back to one mpirun per round, each round's variants with the default."""
    import json
    import shlex

    from scheduler import native_driver
    r = bench.run(["--list-native"], np=1)
    assert r.rc == 0, r.stderr
    (tmp_path / "native-algorithms.txt").write_text(r.stdout)
    for k, v in bench.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(native_driver, "MAX_LABELS", 0)
    spec = {"prefix": "search-0", "control": False, "bench_args": ["--nrep=5"], "confirm": 0,
            "collectives": {"bcast": {"search": "smgd", "sizes": [8, 2048], "segments": [1024],
                                      "lookahead": 2, "prune": 0.5, "neighbour": "none"}}}
    out = tmp_path / "search-0.json"
    assert native_driver.main(["--spec", json.dumps(spec), "--launcher", shlex.join(bench.mpirun(2)),
                               "--bench", str(bench.exe), "--output", str(out)]) == 0
    rep = json.loads(out.read_text())
    rounds = [rnd for size in ("8", "2048") for rnd in rep["paths"]["bcast"][size]["rounds"]]
    assert rep["mode"] == {"bcast": "mpirun per round"} and rep["mpiruns"] == rep["rounds"] == len(rounds) >= 2
    for name, rnd in zip(rep["files"], rounds):      # each mpirun measured its round and the default
        run = reader.read_file(tmp_path / name)
        assert set(run.algorithms) == {"default", *rnd}


def test_race_searches_in_one_mpirun_and_confirms_every_cell_in_one_per_round(bench, tmp_path, monkeypatch):
    """scheduler/native_driver.py, search: race over two collectives: one --serve mpirun for both, its first
    stage with first_nrep repetitions and no control arm, a second stage repeated only where a variant beat the
    default.  Then the confirmations batched over the cells (here every cell: MIN_GAIN and the control arm's
    spread planted below -100 %): per round one mpirun measuring at each cell the default, its own chosen
    variant and the control arm, each alone ("cell ... alone", one command each, never interleaved), which
    the decision pairs per cell within the mpirun (native_decision.mark_blocks)."""
    import json
    import shlex

    from scheduler import native_driver
    from service.analysis.native_decision import runs_from_files
    r = bench.run(["--list-native"], np=1)
    assert r.rc == 0, r.stderr
    (tmp_path / "native-algorithms.txt").write_text(r.stdout)
    for k, v in bench.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(native_driver, "MIN_GAIN", -1e9)       # every choice counts as faster
    monkeypatch.setattr(native_driver, "null_spread", lambda controls: -1e9)
    monkeypatch.setattr(native_driver, "CONFIRM_BLOCK", 2)     # 5 repetitions per arm: blocks of 2, 2 and 1
    entry = {"search": "race", "sizes": [8, 2048], "segments": [1024], "lookahead": 2, "prune": 0.5,
             "neighbour": "none", "first_nrep": 2}
    spec = {"prefix": "search-0", "control": True, "bench_args": ["--nrep=5", "--mpirun-index=0", "--campaign=rc"],
            "confirm": 2, "collectives": {"bcast": dict(entry), "reduce": dict(entry)}}
    out = tmp_path / "search-0.json"
    assert native_driver.main(["--spec", json.dumps(spec), "--launcher", shlex.join(bench.mpirun(2)),
                               "--bench", str(bench.exe), "--output", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["mpiruns"] == 1 and rep["files"][0] == "search-0-bcast-reduce.txt"
    served = reader.read_file(tmp_path / "search-0-bcast-reduce.txt")
    assert served.header["nrep"] == "2" and "default_control" not in served.algorithms
    rows = defaultdict(int)
    for t, m, a in zip(served.test, served.msize, served.algorithm):
        rows[(served.tests[t], int(m), served.algorithms[a])] += 1
    for key in ("bcast", "reduce"):
        for size, p in rep["paths"][key].items():
            assert len(p["rounds"][0]) == rep["grid"][key][size] and p["repeats"][0] == 1
            second = p["rounds"][1] if len(p["rounds"]) > 1 else []
            assert len(second) <= 2 and p["repeats"][1:] in ([], [3])
            for lab in p["rounds"][0]:       # 2 repetitions in round 0, 3 x 2 more in the second stage
                assert rows[(MPI_NAME[key], int(size), lab)] == 2 + 6 * (lab in second)
            assert p["choice"] in (second or p["rounds"][0])
    # one --serve command per round: the second stage asks for its repetitions at once (nrep=), not per pass
    cmds = list(footer.records(served.pgmpi_lines, footer.Served))
    assert len(cmds) == sum(len(p["rounds"]) for key in ("bcast", "reduce") for p in rep["paths"][key].values())
    conf = rep["confirm"]
    chosen = {(k, int(s)): lab for k, per in conf["rounds"][0].items() for s, lab in per.items()}
    assert len(chosen) == 4 and conf["mpiruns"] == len(conf["rounds"])
    for i in range(len(conf["rounds"])):
        run = reader.read_file(tmp_path / f"search-0-confirm-{i}.txt")
        cells_i = {(k, int(s)): lab for k, per in conf["rounds"][i].items() for s, lab in per.items()}
        got = {(k, int(m), run.algorithms[a]) for t, m, a in zip(run.test, run.msize, run.algorithm)
               for k in ("bcast", "reduce") if run.tests[t] == MPI_NAME[k]}
        got.discard((min(k for k, _ in cells_i), 1, "default"))              # the warm-up's rows
        assert got == {(k, s, a) for (k, s), lab in cells_i.items() for a in ("default", lab, "default_control")}
        rows = defaultdict(int)
        for t, m, a in zip(run.test, run.msize, run.algorithm):
            rows[(run.tests[t], int(m), run.algorithms[a])] += 1
        assert set(rows.values()) == {5}                          # --nrep over the blocks (the warm-up too)
        cmds = [(c.call, c.msize, c.labels, c.blocks) for c in footer.records(run.pgmpi_lines, footer.Served)]
        # one command per cell, its arms alone in alternating blocks of CONFIRM_BLOCK: the control arm, the
        # default in the middle, the variant (odd rounds the other way round)
        orders = [("default_control", "default", "v"), ("v", "default", "default_control")]
        warm = (MPI_NAME[min(k for k, _ in cells_i)], 1, ("default",), 0)     # the warm-up first, on no cell
        assert cmds == [warm] + [(MPI_NAME[k], s, tuple(lab if a == "v" else a for a in orders[i % 2]), 2)
                                 for (k, s), lab in sorted(cells_i.items())]
        # the rows in the order measured: blocks of 2, 2 and 1 repetitions, the order reversed after each pass
        for (k, s), lab in cells_i.items():
            seq = [run.algorithms[a] for t, m, a in zip(run.test, run.msize, run.algorithm)
                   if run.tests[t] == MPI_NAME[k] and int(m) == s]
            o = [lab if a == "v" else a for a in orders[i % 2]]
            assert seq == [x for x in o for _ in (0, 1)] + [x for x in o[::-1] for _ in (0, 1)] + o
    cells = runs_from_files([tmp_path / f for f in rep["files"]])
    for (k, s), lab in chosen.items():
        alone = [x for x in cells[(k, s, 2)] if x.alone]
        measured = sum(str(s) in rnd.get(k, {}) for rnd in conf["rounds"])   # later rounds: cells still ahead
        assert len(alone) == measured and all({"default", lab} <= set(x) for x in alone)
