"""Issue 32: the command line after `make demo` finds the demo and says what it found (one listing style,
messages instead of silent empty answers, the words pgmpi-bench accepts)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from service.cli import main

ROOT = Path(__file__).resolve().parents[3]


def _db(tmp_path) -> list[str]:
    url = f"sqlite:///{tmp_path / 'pgmpi.sqlite'}"
    r = CliRunner().invoke(main, ["db", "upgrade", "--database-url", url])
    assert r.exit_code == 0, r.output
    return ["--database-url", url]


def test_db_current_creates_no_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "nothing.sqlite"
    r = CliRunner().invoke(main, ["db", "current", "--database-url", f"sqlite:///{path}"])
    assert r.exit_code == 1 and "does not exist" in r.output, r.output
    assert not path.exists()


def test_listings_have_a_header_and_json(tmp_path):
    opt = _db(tmp_path)
    run = CliRunner().invoke
    assert run(main, ["user", "add", "ann", "--role", "admin", "--password", "pw-pw-pw-pw-pw", *opt]).exit_code == 0
    r = run(main, ["user", "list", *opt])
    assert r.output.splitlines()[0] == "username\trole\tstate\tcreated" and "ann\tadmin\tactive" in r.output
    assert json.loads(run(main, ["user", "list", "--json", *opt]).output)[0]["username"] == "ann"
    assert run(main, ["token", "create", "ci", "--role", "admin", *opt]).exit_code == 0
    r = run(main, ["token", "list", *opt])
    assert r.output.splitlines()[0] == "id\tname\trole\tmachine\tprefix\tcreated\tstate\texpires"
    toks = json.loads(run(main, ["token", "list", "--json", *opt]).output)
    assert toks[0]["name"] == "ci" and toks[0]["state"] == "active" and "token" not in toks[0]
    r = run(main, ["machine", "list", *opt])
    assert r.exit_code == 0 and r.output.splitlines()[0] == "machine\tnodes\tlibraries\tcampaigns"
    assert json.loads(run(main, ["machine", "list", "--json", *opt]).output) == []
    r = run(main, ["profile", "list", "--root", str(tmp_path / "profiles"), "--json", *opt])
    assert r.exit_code == 0 and json.loads(r.stdout) == []


def test_profile_status_fails_with_a_message(tmp_path):
    run = CliRunner().invoke
    args = ["profile", "status", "--machine", "vsc5", "--mpi", "openmpi", "--mpi-version", "4.1.4"]
    r = run(main, [*args, "--root", str(tmp_path / "absent")])
    assert r.exit_code == 1 and "does not exist" in r.output, r.output
    (tmp_path / "root" / "other" / "mpich-4.0.2").mkdir(parents=True)
    (tmp_path / "root" / "other" / "mpich-4.0.2" / "current").symlink_to("versions/0")
    r = run(main, [*args, "--root", str(tmp_path / "root")])
    assert r.exit_code == 1 and "nothing published for machine 'vsc5'" in r.output and "other" in r.output


def test_explain_reads_names_and_sizes_as_pgmpi_bench(tmp_path):
    from pgmpi_formats.words import collective_key, parse_bytes
    assert collective_key("MPI_Scan") == "scan" and collective_key("Reduce_scatter_block") == "reducescatterblock" \
        or collective_key("Reduce_scatter_block").startswith("reduce")
    assert (parse_bytes("1KiB"), parse_bytes("64K"), parse_bytes("8"), parse_bytes("1M")) == (1024, 65536, 8, 1 << 20)
    opt = _db(tmp_path)
    r = CliRunner().invoke(main, ["explain", "nowhere", "mpich", "MPI_Scan", "1KiB", "2", *opt])
    # the arguments were accepted: the answer is about the machine, not the words
    assert r.exit_code == 1 and "unknown machine 'nowhere'" in r.output, r.output
    r = CliRunner().invoke(main, ["explain", "nowhere", "mpich", "MPI_Scn", "1KiB", "2", *opt])
    assert r.exit_code == 2 and "valid: " in r.output


def test_min_gain_has_one_name_and_fdr_is_the_services_default():
    from service.analysis.cli import analyze
    for cmd in ("profile", "datatypes", "native-files"):
        h = CliRunner().invoke(analyze, [cmd, "--help"]).output
        assert "--min-gain" in h and "--gain" not in h.replace("--min-gain", "") and "--min-effect" not in h, cmd
    h = CliRunner().invoke(analyze, ["violations", "--help"]).output
    assert "--fdr / --no-fdr" in h and "default: fdr" in h
    # the old names still work
    from service.analysis.cli import profile_cmd
    ctx = profile_cmd.make_context("profile", ["x.txt", "--out", "o", "--gain", "0.2"], resilient_parsing=True)
    assert ctx.params["min_gain"] == 0.2


def test_campaign_list(tmp_path):
    from scheduler.state import State
    st = State(tmp_path / "agent")
    st.ensure_campaign("nightly-7", {}, None)
    st.close()
    r = CliRunner().invoke(main, ["campaign", "list", "--state-dir", str(tmp_path / "agent")])
    assert r.exit_code == 0 and r.output.splitlines()[0] == "campaign\tstate\tjobs\tcreated"
    assert "nightly-7\tACTIVE\t0/0" in r.output
    r = CliRunner().invoke(main, ["campaign", "list", "--state-dir", str(tmp_path / "none")])
    assert r.exit_code == 1 and not (tmp_path / "none").exists()


def test_demo_env_file_lets_the_cli_find_the_demo(tmp_path):
    """What `make demo` writes: sourcing pgmpi.env points every pgmpi command at the demo's database and
    profile root (no options)."""
    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        import demo as demo_mod
    finally:
        sys.path.pop(0)
    opt = _db(tmp_path)
    CliRunner().invoke(main, ["user", "add", "admin", "--role", "admin", "--password", "pw-pw-pw-pw-pw", *opt])
    (tmp_path / "profiles").mkdir()
    env = demo_mod.write_env(tmp_path, opt[1], tmp_path / "profiles", tmp_path / "modules")
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PGMPI_SITE_CONFIG")}
    out = subprocess.run(["bash", "-c", f". {env} && pgmpi user list && pgmpi profile fsck && "
                          "pgmpi profile list --json && echo MODULEPATH=$MODULEPATH && type module"],
                         capture_output=True, text=True, env=clean, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "admin\tadmin\tactive" in out.stdout
    assert f"0 problem(s) in {tmp_path / 'profiles'}" in out.stdout
    assert f"MODULEPATH={tmp_path / 'modules'}" in out.stdout and "module is a function" in out.stdout
