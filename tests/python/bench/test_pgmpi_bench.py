"""pgmpi-bench against the real Open MPI and MPICH builds of lib/.

The output is read with the one raw-results reader (pgmpi_formats.results), plus a strict line-by-line check
of docs/contracts.md (raw results) here, so a format drift on either side fails.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from pgmpi_formats import results as reader

pytestmark = pytest.mark.mpi

ROW = re.compile(r"^(MPI_[A-Za-z_]+) (\d+) (\d+) (\d+\.\d{10}) ([a-z_]+)$")
REQUIRED_HEADER = ("pgmpi_format", "machine", "mpi_library", "mpi_version", "module", "nodes", "ppn", "nprocs",
                   "mpirun_index", "slurm_job_id", "campaign", "clock", "clocktype", "sync", "nrep_policy",
                   "datatype", "operation", "root_proc", "seed", "order")


def strict_parse(text: str):
    """Contract 3, strictly: header '#@k=v' lines, the column line, rows of 5 fields, '#' footer."""
    lines = text.splitlines()
    header, rows, footer = {}, [], []
    i = 0
    while lines[i].startswith("#@"):
        if lines[i].startswith("#@pgmpi "):   # libpgmpitune may print at MPI_Init (e.g. 'config disabled 1')
            footer.append(lines[i])
            i += 1
            continue
        k, v = lines[i][2:].split("=", 1)
        assert k not in header, f"duplicate header key {k}"
        header[k] = v
        i += 1
    assert lines[i] == "test nrep msize runtime_sec algorithm", lines[i]
    i += 1
    while i < len(lines) and not lines[i].startswith("#"):
        m = ROW.match(lines[i])
        assert m, f"bad row {i + 1}: {lines[i]!r}"
        rows.append((m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), m.group(5)))
        i += 1
    for line in lines[i:]:
        assert line.startswith("#"), f"data after the footer started: {line!r}"
        footer.append(line)
    return header, rows, footer


def pgmpi_lines(footer, verb):
    return [ln.split()[2:] for ln in footer if ln.startswith(f"#@pgmpi {verb} ")]


# ------------------------------------------------------------------------------------------ output

def test_output_file_read_by_analysis_with_metadata_and_library_report(bench, tmp_path):
    out = tmp_path / "run3.txt"
    r = bench.run(["--calls=allreduce,bcast", "--sizes=8,1K", "--nrep=5", f"--output={out}", "--machine=testbox",
                   "--campaign=nightly", "--mpirun-index=3", "--module-name=mpi/test-1.0", "--seed=7"],
                  env={"LOADEDMODULES": "gcc/12:mpi/test-1.0"})
    assert r.rc == 0, r.stderr
    assert r.stdout.strip() == "", "with --output nothing belongs on stdout (the library report goes to the file)"
    text = out.read_text()
    header, rows, footer = strict_parse(text)
    for k in REQUIRED_HEADER:
        assert k in header, f"header key {k} missing"
    assert header["pgmpi_format"] == "1"
    assert header["machine"] == "testbox"
    assert header["mpi_library"] == bench.mpi
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", header["mpi_version"]), header["mpi_version"]
    assert header["module"] == "mpi/test-1.0" and header["loaded_modules"] == "gcc/12:mpi/test-1.0"
    assert (header["nodes"], header["ppn"], header["nprocs"]) == ("1", "2", "2")
    assert header["mpirun_index"] == "3" and header["campaign"] == "nightly" and header["slurm_job_id"] == ""
    assert header["clock"] == "MPI_Wtime" and header["clocktype"] == "local" and header["sync"] == "dissem_barrier"
    assert header["nrep_policy"] == "fixed:5" and header["seed"] == "7"
    assert (header["datatype"], header["operation"], header["root_proc"]) == ("MPI_BYTE", "MPI_BOR", "0")

    algs = bench.algorithms()
    expected = {(c, n, a) for c in ("MPI_Allreduce", "MPI_Bcast") for n in (8, 1024) for a in algs[c]}
    expected |= {("MPI_Barrier", n, "default") for n in (8, 1024)}
    got = defaultdict(list)
    for test, nrep, msize, rt, alg in rows:
        got[(test, msize, alg)].append(nrep)
        assert 0 < rt < 1.0
    assert set(got) == expected
    assert all(sorted(v) == [0, 1, 2, 3, 4] for v in got.values())
    # predicted/used nrep per (call, size) and the library's own report in the same file
    assert sorted(map(tuple, pgmpi_lines(footer, "nrep"))) == sorted(
        (c, str(n), "5") for c in ("MPI_Allreduce", "MPI_Bcast", "MPI_Barrier") for n in (8, 1024))
    assert pgmpi_lines(footer, "config"), "libpgmpitune's '#@pgmpi config' lines missing from the file"
    counts = {(c, int(n), a): int(k) for c, n, a, k in pgmpi_lines(footer, "count")}
    assert header["check"] == "yes"
    for (c, n, a) in expected:
        if c != "MPI_Barrier":   # the check round's one call: the 5 timed ones run with the report suspended
            assert counts.get((c, n, a)) == 1, f"library counted {c} {n} {a} {counts.get((c, n, a))} times"
            assert [c, str(n), a, "ok"] in pgmpi_lines(footer, "check")
    assert not pgmpi_lines(footer, "fallback"), "a mock-up fell back: its rows measured the default"

    # the analysis reads it, with the same content
    run = reader.read_file(out)
    assert len(run) == len(rows)
    assert (run.machine, run.library, run.nodes, run.ppn, run.nprocs, run.mpirun_index) == \
        ("testbox", bench.mpi, 1, 2, 2, 3)
    assert set(run.algorithms) == {a for _, _, a in expected}
    np.testing.assert_allclose(np.sort(run.runtime), np.sort([r[3] for r in rows]))


def test_genuine_reprompi_layout_of_the_same_data_is_read_too(bench, tmp_path):
    """The same measurements in genuine ReproMPI's 4-column layout (algorithm from the footer)."""
    out = tmp_path / "ours.txt"
    r = bench.run(["--calls=allreduce", "--algorithms=default", "--sizes=16,4K", "--nrep=4", f"--output={out}"])
    assert r.rc == 0, r.stderr
    _, rows, _ = strict_parse(out.read_text())
    genuine = ["#@operation = MPI_BOR", "#@datatype = MPI_BYTE", "#@root_proc = 0", "#@reproMPIcommitSHA1=unknown",
               "#@nprocs = 2", "#@clocktype=local", "#@clock=MPI_Wtime", "#@sync=BBarrier", "#@nrep=0",
               "test nrep msize runtime_sec"]
    genuine += [f"{t} {k} {n} {rt:.10f}" for t, k, n, rt, a in rows if t != "MPI_Barrier"]
    genuine += ["#@pgmpi alg MPI_Allreduce 16 default", "#@pgmpi alg MPI_Allreduce 4096 default"]
    g = tmp_path / "genuine.txt"
    g.write_text("\n".join(genuine) + "\n")
    a, b = reader.read_file(out), reader.read_file(g)
    sel = np.array([a.tests[t] != "MPI_Barrier" for t in a.test])
    np.testing.assert_allclose(np.sort(a.runtime[sel]), np.sort(b.runtime))
    assert b.algorithms == ["default"] and b.nprocs == 2


def test_stdout_output_carries_library_report(bench):
    r = bench.run(["--calls=scan", "--sizes=64", "--nrep=3", "--no-barrier-rows"])
    assert r.rc == 0, r.stderr
    header, rows, footer = strict_parse(r.stdout)
    assert {t for t, *_ in rows} == {"MPI_Scan"}
    assert pgmpi_lines(footer, "config") and pgmpi_lines(footer, "alg")


# ------------------------------------------------------------------------------ bad arguments

@pytest.mark.parametrize("args, needles", [
    (["--calls=allreduce,allredcue"], ["unknown call 'allredcue'", "allreduce (MPI_Allreduce)", "barrier (MPI_Barrier)",
                                       "scatter (MPI_Scatter)"]),
    (["--calls=bcast", "--algorithms=bcast_as_nothing"], ["unknown algorithm 'bcast_as_nothing'", "default",
                                                         "bcast_as_scatter_allgather"]),
    (["--calls=bcast", "--algorithms=allreduce_as_reduce_bcast"], ["mock-up of MPI_Allreduce", "not in --calls"]),
    (["--calls=alltoall", "--sizes=8,1G", "--mem-limit=256M"], ["message size 1073741824 B does not fit in memory",
                                                                "MPI_Alltoall"]),
    (["--calls=allreduce", "--datatype=MPI_DOUBLE"], ["MPI_Allreduce with MPI_BOR on MPI_DOUBLE is not valid"]),
    (["--nrep=10", "--predict=rse"], ["do not combine"]),
    (["--predict=rse,median"], ["unknown rule 'median'", "covmedian"]),
    (["--sizes=8,12Q"], ["bad size '12Q'"]),
    (["--time-rule=b3=4"], ["unknown parameter 'b3'", "b1, b2"]),
    (["--frobnicate"], ["unknown option '--frobnicate'"]),
])
def test_bad_arguments_fail_before_any_measurement(bench, tmp_path, args, needles):
    out = tmp_path / "never.txt"
    r = bench.run(args + [f"--output={out}"], timeout=60)
    assert r.rc != 0
    err = r.stderr
    assert "pgmpi-bench: error:" in err
    for n in needles:
        assert n in err, f"{n!r} not in {err!r}"
    assert err.count("pgmpi-bench: error:") == 1, "one message, from one rank"
    assert not out.exists(), "nothing may be written before the arguments are valid"
    assert "#@" not in r.stdout and "MPI_" not in r.stdout


def test_size_limit_counts_mockup_scratch_and_every_buffer(bench):
    # allgather at 64 MiB on 2 ranks: send 64 MiB + receive 128 MiB (+ mock-up scratch) > 150 MiB
    r = bench.run(["--calls=allgather", "--sizes=64M", "--mem-limit=150M"], timeout=60)
    assert r.rc == 2 and "67108864 B does not fit" in r.stderr and "receive buffer 128.0 MiB" in r.stderr
    r = bench.run(["--calls=allgather", "--sizes=64M", "--mem-limit=600M", "--dry-run"], timeout=60)
    assert r.rc == 0, r.stderr


def test_help_is_complete(bench):
    r = bench.run(["--help"], np=0)
    assert r.rc == 0
    for opt in ("--calls", "--sizes", "--algorithms", "--nrep", "--predict", "--time-rule", "--time-budget", "--sync",
                "--order", "--seed", "--output", "--machine", "--module-name", "--mpirun-index", "--campaign",
                "--dry-run", "--mem-limit", "--datatype", "--operation"):
        assert opt in r.stdout


def test_dry_run_prints_the_plan_and_measures_nothing(bench, tmp_path):
    out = tmp_path / "dry.txt"
    r = bench.run(["--dry-run", "--calls=all", "--sizes=8..1K", "--predict=rse,covmedian", f"--output={out}"])
    assert r.rc == 0, r.stderr
    algs = bench.algorithms()
    for call, names in algs.items():
        assert call in r.stdout
        for n in names:
            assert n in r.stdout
    ntriples = 8 * (sum(len(v) for v in algs.values()) + 1)
    assert f"triples: {ntriples}" in r.stdout
    assert "predict:rse<0.025+covmedian<0.01/w20;min:20;max:1000;step:10" in r.stdout
    assert "estimated buffer memory per rank" in r.stdout
    assert "#@" not in r.stdout and not out.exists()


def test_single_process_runs_every_call(bench):
    r = bench.run(["--calls=all", "--sizes=1K", "--nrep=2"], np=1)
    assert r.rc == 0, r.stderr
    header, rows, footer = strict_parse(r.stdout)
    assert (header["nprocs"], header["nodes"], header["ppn"]) == ("1", "1", "1")
    algs = bench.algorithms()
    got = Counter((t, a) for t, _, _, _, a in rows)
    assert set(got) == {(c, a) for c, names in algs.items() for a in names} | {("MPI_Barrier", "default")}
    assert set(got.values()) == {2}
    assert not pgmpi_lines(footer, "fallback")


def test_sizes_rounded_to_the_datatype_with_a_header_note(bench):
    r = bench.run(["--calls=reducescatterblock,allreduce", "--algorithms=default", "--sizes=13,4K",
                   "--datatype=MPI_INT", "--operation=MPI_SUM", "--nrep=2"])
    assert r.rc == 0, r.stderr
    header, rows, _ = strict_parse(r.stdout)
    # Reduce_scatter_block needs multiples of 4 B x 2 ranks: 13 -> 8; Allreduce of 4 B: 13 -> 12; 4096 stays
    assert sorted(header["msize_rounding"].split(";")) == ["MPI_Allreduce:13->12", "MPI_Reduce_scatter_block:13->8"]
    assert {(t, n) for t, _, n, _, _ in rows if t != "MPI_Barrier"} == {
        ("MPI_Allreduce", 12), ("MPI_Allreduce", 4096), ("MPI_Reduce_scatter_block", 8),
        ("MPI_Reduce_scatter_block", 4096)}


# ------------------------------------------------------------------------------ nrep policies

def nrep_of(footer):
    return {(c, int(n)): int(k) for c, n, k in pgmpi_lines(footer, "nrep")}


def rows_per(rows):
    return Counter((t, n, a) for t, _, n, _, a in rows)


def test_predict_stops_at_min_when_rules_pass_and_records_nrep(bench):
    r = bench.run(["--calls=allreduce,bcast", "--algorithms=default", "--sizes=8,4K", "--predict=rse,covmean,covmedian",
                   "--rse-thres=100", "--covmean-thres=100", "--covmedian-thres=100", "--covmean-window=5",
                   "--covmedian-window=5", "--pred-params=min=12,max=60,step=4"])
    assert r.rc == 0, r.stderr
    header, rows, footer = strict_parse(r.stdout)
    assert header["nrep_policy"].startswith("predict:rse<100+covmean<100/w5+covmedian<100/w5;min:12;max:60;step:4")
    assert set(nrep_of(footer).values()) == {12}
    assert set(rows_per(rows).values()) == {12}
    assert any("stop=rules" in ln for ln in footer)


def test_predict_all_rules_must_pass_else_max(bench):
    # RSE passes at once, the COV of medians (threshold 0) never: the combination runs to max
    r = bench.run(["--calls=allreduce", "--algorithms=default", "--sizes=8", "--predict=rse,covmedian",
                   "--rse-thres=100", "--covmedian-thres=0", "--covmedian-window=3", "--pred-params=min=5,max=23,step=5"])
    assert r.rc == 0, r.stderr
    _, rows, footer = strict_parse(r.stdout)
    assert nrep_of(footer)[("MPI_Allreduce", 8)] == 23
    assert rows_per(rows)[("MPI_Allreduce", 8, "default")] == 23
    assert any(ln.startswith("# nrep MPI_Allreduce 8 23 stop=max") for ln in footer)


def test_time_rule_nrep_bounds(bench):
    # tnrep1 given: tiny -> nrep = K; huge -> nrep = max
    for tn, expect in (("1e-9", 7), ("100", 40)):
        r = bench.run(["--calls=allreduce", "--sizes=8,64K", f"--time-rule=tnrep1={tn},b1=3,b2=2,K=7,max=40"])
        assert r.rc == 0, r.stderr
        _, rows, footer = strict_parse(r.stdout)
        assert set(nrep_of(footer).values()) == {expect}
        assert set(rows_per(rows).values()) == {expect}, "pilot batches must not be written as rows"


def test_time_rule_measures_tnrep1_at_one_byte(bench):
    r = bench.run(["--calls=bcast", "--algorithms=default", "--sizes=32K", "--no-barrier-rows",
                   "--time-rule=rse1=100,min1=20,max1=50,b1=3,b2=0,K=2,max=100000"])
    assert r.rc == 0, r.stderr
    _, rows, footer = strict_parse(r.stdout)
    (call, n, t, k), = pgmpi_lines(footer, "tnrep1")
    assert (call, n, k) == ("MPI_Bcast", "1", "20")      # RSE < 100 passes at min1
    t = float(t)
    assert t > 0
    nrep = nrep_of(footer)[("MPI_Bcast", 32768)]
    assert nrep == len(rows) >= 2
    # nrep = max(ceil(t_nrep1 / l), K), l the minimum of the 3 pilot latencies (the footer's `# pilot` line;
    # the pilot rows are not recorded); the written figures are rounded, so ceil may move by one
    (lat,) = [float(ln.split("latency_min_sec=")[1]) for ln in footer
              if ln.startswith("# pilot MPI_Bcast 32768 default ")]
    assert lat > 0 and abs(nrep - max(int(np.ceil(t / lat)), 2)) <= 1, (nrep, t, lat)


def test_time_budget_stops_early(bench):
    r = bench.run(["--calls=allreduce", "--algorithms=default", "--sizes=1K", "--nrep=1000000", "--time-budget=0.2"])
    assert r.rc == 0, r.stderr
    header, rows, footer = strict_parse(r.stdout)
    n = nrep_of(footer)[("MPI_Allreduce", 1024)]
    assert 10 <= n < 1000000 and len([x for x in rows if x[0] == "MPI_Allreduce"]) == n
    assert any("stop=budget" in ln for ln in footer)
    assert header["time_budget_sec"] == "0.2"


# ------------------------------------------------------------------------------ order

def sequence(rows, size):
    return [(t, a) for t, _, n, _, a in rows if n == size]


def test_interleaving_every_round_measures_each_pair_once_in_seeded_order(bench):
    args = ["--calls=allreduce,bcast", "--sizes=8,1K", "--nrep=6", "--interleave=size"]
    r1 = bench.run(args + ["--seed=11"])
    r2 = bench.run(args + ["--seed=11"])
    r3 = bench.run(args + ["--seed=12"])
    for r in (r1, r2, r3):
        assert r.rc == 0, r.stderr
    h1, rows1, _ = strict_parse(r1.stdout)
    _, rows2, _ = strict_parse(r2.stdout)
    _, rows3, _ = strict_parse(r3.stdout)
    assert h1["seed"] == "11" and h1["order"] == "shuffle" and h1["interleave"] == "size"
    algs = bench.algorithms()
    pairs = {(c, a) for c in ("MPI_Allreduce", "MPI_Bcast") for a in algs[c]} | {("MPI_Barrier", "default")}
    for size in (8, 1024):
        seq = sequence(rows1, size)
        assert len(seq) == 6 * len(pairs)
        rounds = [seq[i:i + len(pairs)] for i in range(0, len(seq), len(pairs))]
        for rnd in rounds:
            assert set(rnd) == pairs, "a round must measure every (call, algorithm) once"
        assert len({tuple(rnd) for rnd in rounds}) > 1, "shuffle: the order changes between rounds"
    assert [x[:3] + x[4:] for x in rows1] == [x[:3] + x[4:] for x in rows2], "same seed, same order"
    assert [x[4] for x in rows1] != [x[4] for x in rows3], "another seed, another order"


def test_default_interleaves_the_algorithms_of_one_call_at_a_time(bench):
    """--interleave=cell (default): a (call, size) is measured as one block of rounds over its algorithms,
    as ReproMPI measures one job at a time; calls do not run between each other's measurements."""
    r = bench.run(["--calls=allreduce,bcast", "--sizes=8,1K", "--nrep=6", "--seed=3"])
    assert r.rc == 0, r.stderr
    h, rows, _ = strict_parse(r.stdout)
    assert h["interleave"] == "cell"
    algs = bench.algorithms()
    blocks = []   # (call, size) in execution order, one entry per contiguous block
    for test, _, msize, _, _ in rows:
        if not blocks or blocks[-1] != (test, msize):
            blocks.append((test, msize))
    assert blocks == [(c, n) for n in (8, 1024) for c in ("MPI_Allreduce", "MPI_Bcast", "MPI_Barrier")]
    for c in ("MPI_Allreduce", "MPI_Bcast"):
        seq = [a for t, _, m, _, a in rows if t == c and m == 8]
        k = len(algs[c])
        rounds = [seq[i:i + k] for i in range(0, len(seq), k)]
        assert len(rounds) == 6 and all(set(rnd) == set(algs[c]) for rnd in rounds)


def test_roundrobin_rotates(bench):
    r = bench.run(["--calls=allreduce", "--sizes=8", "--nrep=4", "--order=roundrobin", "--no-barrier-rows"])
    assert r.rc == 0, r.stderr
    _, rows, _ = strict_parse(r.stdout)
    k = len(bench.algorithms()["MPI_Allreduce"])
    seq = [a for *_, a in rows]
    rounds = [seq[i:i + k] for i in range(0, len(seq), k)]
    assert all(rounds[i + 1] == rounds[i][1:] + rounds[i][:1] for i in range(len(rounds) - 1))


def test_mockup_that_would_fall_back_for_a_small_pool_is_refused(bench, tmp_path):
    # the allgather mock-ups need scratch from libpgmpitune's message pool (every rank's staging for
    # its own layout, rule 3 of lib/src/core/pgmpitune_core.h); with a 1000-byte pool one would
    # silently run the default under the mock-up's name
    out = tmp_path / "never.txt"
    env = {"PGMPITUNE_MSG_POOL_BYTES": "1000"}
    args = ["--calls=allgather", "--sizes=8,64K", "--nrep=2", f"--output={out}"]
    r = bench.run(args, env=env)   # local ranks inherit mpirun's environment
    assert r.rc == 2, r.stderr
    assert re.search(r"allgather_as_\w+ at 65536 B needs", r.stderr) and "would fall back" in r.stderr
    assert not out.exists()


def test_sync_option_and_measured_layout_in_header(bench):
    # the layout is measured inside the run; Slurm's variables never relabel it
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--sync=mpi_barrier"],
                  env={"SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS": "2"})
    assert r.rc == 0, r.stderr
    h, _, _ = strict_parse(r.stdout)
    assert (h["sync"], h["procsync"]) == ("MPI_Barrier", "MPI_Barrier")
    assert (h["nodes"], h["ppn"], h["nodes_source"], h["placement"]) == ("1", "2", "measured", "0:2")
    assert h["hosts"] == h["hostname"]


def test_layout_other_than_requested_is_an_error(bench, tmp_path):
    out = tmp_path / "never.txt"
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", f"--output={out}"], env={"PGMPI_EXPECT_LAYOUT": "2x1"})
    assert r.rc == 3, r.stderr
    assert "requested 2x1, the launcher made 1 node(s) x 2 ppn" in r.stderr
    assert not out.exists() or out.stat().st_size == 0
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2"], env={"PGMPI_EXPECT_LAYOUT": "1x2"})
    assert r.rc == 0, r.stderr


@pytest.mark.slurm
def test_under_slurm_records_the_job(bench, slurm_env, tmp_path):
    out = tmp_path / "slurm.txt"
    launch = " ".join(
        ["mpirun.openmpi --allow-run-as-root -np 2" if bench.mpi == "openmpi" else "mpirun.mpich -np 2",
         str(bench.exe), "--calls=allreduce", "--sizes=8", "--nrep=3", f"--output={out}", "--mpirun-index=2"])
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nexport OMPI_MCA_mpi_yield_when_idle=1\n{launch}\n")
    env = {k: v for k, v in slurm_env.items() if not k.startswith("PGMPI")}
    import subprocess
    p = subprocess.run(["sbatch", "--parsable", "--wait", "-n", "2", "-o", str(tmp_path / "job.log"), str(script)],
                       capture_output=True, text=True, env=env, timeout=180)
    assert p.returncode == 0, p.stderr + (tmp_path / "job.log").read_text()
    job = p.stdout.strip().split(";")[0]
    h, rows, _ = strict_parse(out.read_text())
    assert h["slurm_job_id"] == job and h["mpirun_index"] == "2" and h["nprocs"] == "2"
    assert rows


def test_nrep_from_earlier_predictions_takes_the_maximum(bench, tmp_path):
    f1, f2, out = tmp_path / "pred1.txt", tmp_path / "pred2.txt", tmp_path / "measure.txt"
    f1.write_text("#@pgmpi nrep MPI_Allreduce 8 7\n#@pgmpi nrep MPI_Allreduce 1024 3\n"
                  "#@pgmpi nrep MPI_Barrier 8 2\n#@pgmpi nrep MPI_Barrier 1024 2\n")
    f2.write_text("#@pgmpi nrep MPI_Allreduce 8 4\n#@pgmpi nrep MPI_Allreduce 1024 9\n")
    r = bench.run(["--calls=allreduce", "--algorithms=default", "--sizes=8,1K", f"--nrep-from={f1},{f2}",
                   f"--output={out}"])
    assert r.rc == 0, r.stderr
    h, rows, footer = strict_parse(out.read_text())
    assert h["nrep_policy"] == f"from:{f1},{f2}"
    assert nrep_of(footer) == {("MPI_Allreduce", 8): 7, ("MPI_Allreduce", 1024): 9, ("MPI_Barrier", 8): 2,
                               ("MPI_Barrier", 1024): 2}
    assert rows_per(rows)[("MPI_Allreduce", 1024, "default")] == 9
    # a size the files do not cover, and an existing output file, fail before measuring
    r = bench.run(["--calls=allreduce", "--sizes=64K", f"--nrep-from={f1}"])
    assert r.rc == 2 and "no '#@pgmpi nrep MPI_Allreduce 65536 <n>' line" in r.stderr and "#@" not in r.stdout
    before = out.read_text()
    r = bench.run(["--calls=allreduce", "--sizes=8", "--nrep=2", f"--output={out}"])
    assert r.rc == 2 and "exists and is not empty" in r.stderr and out.read_text() == before


def test_disabled_library_cannot_measure_mockups(bench):
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2"], env={"PGMPITUNE_DISABLE": "1"})
    assert r.rc == 2 and "PGMPITUNE_DISABLE=1 switches libpgmpitune off" in r.stderr and "#@" not in r.stdout
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--algorithms=default"], env={"PGMPITUNE_DISABLE": "1"})
    assert r.rc == 0, r.stderr
    assert {a for *_, a in strict_parse(r.stdout)[1]} == {"default"}


def test_tuned_rows_measure_what_the_profile_selects(bench, tmp_path):
    """--algorithms=tuned forces nothing: the library follows PGMPITUNE_PROFILE_DIR, as a user's job
    would. Validation jobs measure exactly that against the forced default."""
    pdir = tmp_path / "profiles"
    pdir.mkdir()
    (pdir / "allreduce_p2.prf").write_text(
        "#@pgmpi profile_version 1\nMPI_Allreduce\n2\n1\n1 allreduce_as_reduce_bcast\n1\n1024 1024 1\n")
    out = tmp_path / "tuned.txt"
    r = bench.run(["--calls=allreduce", "--sizes=8,1K", "--nrep=5", "--algorithms=default,tuned",
                   "--no-barrier-rows", f"--output={out}"], env={"PGMPITUNE_PROFILE_DIR": str(pdir)})
    assert r.rc == 0, r.stderr
    _header, rows, footer = strict_parse(out.read_text())
    assert Counter((m, a) for _, _, m, _, a in rows) == {(8, "default"): 5, (8, "tuned"): 5,
                                                         (1024, "default"): 5, (1024, "tuned"): 5}
    algs = [tuple(f[:3]) for f in pgmpi_lines(footer, "alg")]
    assert ("MPI_Allreduce", "1024", "allreduce_as_reduce_bcast") in algs
    assert ("MPI_Allreduce", "8", "allreduce_as_reduce_bcast") not in algs
    # without the profile, tuned is the default everywhere
    out2 = tmp_path / "untuned.txt"
    r = bench.run(["--calls=allreduce", "--sizes=1K", "--nrep=3", "--algorithms=tuned", "--no-barrier-rows",
                   f"--output={out2}"])
    assert r.rc == 0, r.stderr
    _h, _rows, footer2 = strict_parse(out2.read_text())
    assert all(f[2] == "default" for f in pgmpi_lines(footer2, "alg") if f[0] == "MPI_Allreduce")
