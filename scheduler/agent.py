"""The campaign agent: plan -> submit -> track -> collect -> upload, resumable at every step.

    agent = Agent(campaign, state_dir, backend=make_backend(campaign), client=ServiceClient(url, token))
    agent.run()                 # cycles until every job is final and the spool is empty
    agent.run_once()            # one cycle (what `pgmpi agent run-once` does)

Each step commits to the SQLite state before and after it touches the outside world:
a job is marked SUBMITTING (with a unique Slurm job name) before sbatch, so a restarted agent adopts
the job instead of submitting it twice; a finished job's results go into the outbox in the same
transaction that marks it collected, so nothing is lost and nothing is collected twice.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from pgmpi_formats.native import DiscoveryError, parse_listing
from pgmpi_formats.results import ResultsFormatError

from . import nrep_history
from .backends import Backend, BackendUnavailable, Status, collect_pairs
from .campaign import Campaign, Layout, Module
from .planner import JobSpec, Launch, plan, sync_argv
from .state import ACTIVE, FINAL, State
from .uploader import Rejected, ServiceClient, Unreachable, drain, upload_id
from .native_validation import FILE_FOR, NativeValidationJob, arm_figures
from .validation import figures, validation_job


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat() if ts else None


def spec_to_json(job: JobSpec) -> dict:
    return {"key": job.key, "module": job.module.model_dump(mode="json"),
            "layout": job.layout.model_dump(mode="json"),
            "launches": [asdict(ln) for ln in job.launches], "walltime_seconds": job.walltime_seconds,
            "kind": job.kind, "env": job.env, "estimate_seconds": job.estimate_seconds}


def spec_from_json(d: dict) -> JobSpec:
    return JobSpec(d["key"], Module.model_validate(d["module"]), Layout.model_validate(d["layout"]),
                   [Launch(**ln) for ln in d["launches"]], d["walltime_seconds"], d.get("kind", "measure"),
                   d.get("env", {}), d.get("estimate_seconds", 0.0))


def log_tail(attempt_dir: Path, n: int = 30) -> str:
    parts = []
    for pat in ("slurm-*.out", "local.out"):
        for f in sorted(attempt_dir.glob(pat)):
            try:
                parts += f.read_text(errors="replace").splitlines()[-n:]
            except OSError:
                pass
    return "\n".join(parts[-n:])


NATIVE_BENCH = Path("pgmpi-bench")      # a native validation job's: the one the pgmpitunelib module puts on PATH
NATIVE_VALIDATIONS = "/api/v1/native/validations"

VALIDATION_REPEATS = 2   # an inconclusive validation is measured again at most this many times


def mark_validation(content: str, role: str, key: str) -> str:
    """Tag a validation launch's raw file so it is never mistaken for campaign data."""
    first, _, rest = content.partition("\n")
    tag = f"#@pgmpi_validation={role}\n#@validation_job={key}\n"
    return (first + "\n" + tag + rest) if first.startswith("#@") else tag + content


class Agent:
    def __init__(self, campaign: Campaign, state_dir: str | Path, backend: Backend,
                 client: ServiceClient | None = None, source: str | None = None, log=print,
                 unknown_limit: int = 20):
        self.c = campaign
        self.state = State(state_dir)
        self.backend = backend
        self.client = client
        self.log = log or (lambda *_: None)
        self.unknown_limit = unknown_limit
        self.tag = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:6]
        self.root = Path(state_dir) / "campaigns" / campaign.name
        self.costs: dict[str, float] = {}
        with self.state.tx():
            if self.state.ensure_campaign(campaign.name, campaign.definition(), source):
                self.state.enqueue(f"campaign:{campaign.name}", "campaign", campaign.name, {
                    "name": campaign.name, "machine": campaign.machine, "definition": campaign.definition(),
                    "schedule": campaign.schedule or "manual"})
            # the jobs are planned once (a restarted agent finds them in the state): only then the earlier nights
            earlier = nrep_history.find(self.state, campaign, self.root) if not self.state.jobs(campaign.name) else {}
            for job in plan(campaign, earlier):
                if self.state.add_job(campaign.name, job.key, spec_to_json(job)) and job.key in earlier:
                    self.log(f"{job.key}: repetitions of campaign {earlier[job.key].campaign} "
                             f"({earlier[job.key].path}) where they cover the cells, no pilot")

    # --------------------------------------------------------------- helpers
    def _cost(self, key: str, dt: float):
        self.costs[key] = self.costs.get(key, 0.0) + dt
        self.state.db.execute("UPDATE jobs SET cost=cost+? WHERE campaign=? AND key=?", (dt, self.c.name, key))

    def job_name(self, key: str, attempt: int) -> str:
        return f"pgmpi-{self.tag}-{self.c.name}-{key}-a{attempt}"[:200]

    def _report(self, row, state: str | None = None, reason: str | None = None, tail: str | None = None):
        spec = json.loads(row["spec"])
        payload = {
            "campaign": self.c.name, "key": row["key"],
            "slurm_job_id": row["backend_id"] if self.backend.name == "slurm" else None,
            "library": spec["module"]["mpi"], "module": spec["module"]["name"] or "",
            "nodes": spec["layout"]["nodes"], "ppn": spec["layout"]["ppn"],
            "state": state or row["state"], "reason": reason if reason is not None else (row["reason"] or ""),
            "submitted_at": iso(row["submitted_at"]), "started_at": iso(row["started_at"]),
            "ended_at": iso(row["ended_at"]), "log_tail": tail or "",
        }
        if payload["state"] not in ("PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL",
                                    "CANCELLED"):
            payload["state"] = "PENDING"
        self.state.enqueue(f"job:{self.c.name}:{row['key']}", "job", self.c.name, payload, replace=True)

    # ----------------------------------------------------------------- steps
    def submit_new(self) -> int:
        n = 0
        for row in self.state.jobs(self.c.name, ("NEW", "SUBMITTING")):
            t0 = time.perf_counter()
            job = spec_from_json(json.loads(row["spec"]))
            key = row["key"]
            if row["state"] == "SUBMITTING":           # crashed around sbatch last time: adopt if it exists
                attempt, name, adir = row["attempt"], row["name"], Path(row["attempt_dir"])
                found = self.backend.find(name, adir)
                if found:
                    with self.state.tx():
                        self.state.update_job(self.c.name, key, state="PENDING", backend_id=found)
                        self._report(self.state.job(self.c.name, key))
                    self.log(f"{key}: adopted {self.backend.name} job {found} submitted before a restart")
                    continue
            else:
                attempt = row["attempt"] + 1
                name = self.job_name(key, attempt)
                adir = self.root / key / f"attempt-{attempt}"
                with self.state.tx():
                    self.state.update_job(self.c.name, key, state="SUBMITTING", attempt=attempt, name=name,
                                          attempt_dir=str(adir), unknown_polls=0, started_at=None,
                                          ended_at=None)
            # a native validation runs the pgmpi-bench the pgmpitunelib module puts on PATH, as users do
            bench = NATIVE_BENCH if job.kind == "native-validate" else self.c.bench_for(job.module)
            try:
                bid = self.backend.submit(job, adir, name, bench)
            except BackendUnavailable as exc:
                self.log(f"{key}: {self.backend.name} unavailable, will submit later: {exc}")
                return n
            except RuntimeError as exc:                 # rejected by the resource manager
                with self.state.tx():
                    self.state.update_job(self.c.name, key, state="FAILED", reason=f"submission rejected: {exc}",
                                          ended_at=time.time())
                    self.state.record_attempt(self.c.name, key, attempt, None, "FAILED", str(exc), time.time())
                    self._report(self.state.job(self.c.name, key))
                self.log(f"{key}: submission rejected: {exc}")
                continue
            with self.state.tx():
                self.state.update_job(self.c.name, key, state="PENDING", backend_id=bid, submitted_at=time.time())
                self._report(self.state.job(self.c.name, key))
                self._cost(key, time.perf_counter() - t0)
            self.log(f"{key}: submitted attempt {attempt} as {self.backend.name} job {bid}")
            n += 1
        return n

    def track(self) -> int:
        rows = self.state.jobs(self.c.name, ("PENDING", "RUNNING"))
        if not rows:
            return 0
        t0 = time.perf_counter()
        try:
            statuses = self.backend.poll({r["backend_id"]: Path(r["attempt_dir"]) for r in rows})
        except BackendUnavailable as exc:
            self.log(f"{self.backend.name} unavailable, tracking later: {exc}")
            return 0
        per_job = (time.perf_counter() - t0) / len(rows)
        changed = 0
        for row in rows:
            st = statuses.get(row["backend_id"]) or Status("UNKNOWN")
            key = row["key"]
            t1 = time.perf_counter()
            if st.state == "UNKNOWN":
                with self.state.tx():
                    self.state.update_job(self.c.name, key, unknown_polls=row["unknown_polls"] + 1)
                    if row["unknown_polls"] + 1 >= self.unknown_limit:
                        st = Status("FAILED", f"job {row['backend_id']} vanished from {self.backend.name}")
                if st.state == "UNKNOWN":
                    continue
            if st.state == row["state"] and st.state in ("PENDING", "RUNNING"):
                continue
            changed += 1
            if st.state in ("PENDING", "RUNNING"):
                with self.state.tx():
                    self.state.update_job(self.c.name, key, state=st.state,
                                          started_at=st.started_at or row["started_at"] or
                                          (time.time() if st.state == "RUNNING" else None), reason=st.reason)
                    self._report(self.state.job(self.c.name, key))
                continue
            self.finish(row, st)
            self._cost(key, per_job + time.perf_counter() - t1)
        return changed

    def finish(self, row, st: Status):
        """A job attempt ended: collect it (COMPLETED) or record the failure and maybe retry."""
        key, adir = row["key"], Path(row["attempt_dir"])
        job = spec_from_json(json.loads(row["spec"]))
        ended = st.ended_at or time.time()
        started = st.started_at or row["started_at"]
        tail = log_tail(adir)
        state, reason = st.state, st.reason
        uploads = []
        extra = []
        if state == "COMPLETED":
            try:
                self._record_native(job, adir)
                pairs = []
                if job.kind == "native-validate":
                    extra.append(self._native_figures(row, adir))
                    collect = []
                else:
                    collect = collect_pairs(adir, job)
                for ln, path in collect:
                    content = path.read_text(errors="replace")
                    if job.kind == "validate":
                        pairs.append((ln.role, content))
                        content = mark_validation(content, ln.role, key)
                    uid = upload_id(self.c.name, key, ln.index, content)
                    uploads.append((uid, {"upload_id": uid,
                                          "campaign": self.c.name if job.kind == "measure" else None,
                                          "files": [{"name": f"{key}-a{row['attempt']}-{path.name}",
                                                     "content": content}]}))
                if job.kind == "validate":
                    figs = figures(pairs, job.nodes * job.ppn)
                    vid = json.loads(row["spec"]).get("profile_version")
                    extra.append((f"validation:{self.c.name}:{key}", "validation", {
                        "_path": f"/api/v1/profiles/{vid}/validation", "campaign": self.c.name, "job": key,
                        "library": job.module.family.name, "module": job.module.name, "figures": figs,
                        "all_or_nothing": self.c.validation.all_or_nothing,
                        "upload_ids": [u for u, _ in uploads]}))
            except (OSError, ResultsFormatError, DiscoveryError, KeyError) as exc:
                state, reason = "FAILED", f"collection failed: {exc}"
        history = [a for a in self.state.attempts(self.c.name, key) if a["attempt"] < row["attempt"]]
        # a native validation job is retried once: its candidate waits on it (then job_failed, below)
        retry = (state in self.c.retry.states and row["kind"] in ("measure", "native-validate")
                 and row["attempt"] < (self.c.retry.max_attempts if row["kind"] == "measure"
                                       else min(2, self.c.retry.max_attempts)))
        full_reason = reason
        if history:
            full_reason = "; ".join([reason] + [f"attempt {a['attempt']} {a['state']}: {a['reason']}"
                                                for a in history])
        if row["attempt"] > 1 or retry:
            full_reason = f"attempt {row['attempt']}/{self.c.retry.max_attempts}: {full_reason}"
        if row["kind"] == "native-validate" and state != "COMPLETED" and not retry:
            extra.append(self._native_job_failed(row, state, full_reason))
        with self.state.tx():
            self.state.record_attempt(self.c.name, key, row["attempt"], row["backend_id"], state, reason, ended)
            for uid, payload in uploads:
                self.state.enqueue(uid, "upload", self.c.name, payload)
            for iid, kind, payload in extra:
                self.state.enqueue(iid, kind, self.c.name, payload)
            self.state.update_job(self.c.name, key, state="NEW" if retry else state, reason=full_reason,
                                  started_at=started, ended_at=ended, collected=int(bool(uploads)))
            fresh = dict(self.state.job(self.c.name, key))
            fresh["state"] = state
            self._report(fresh, state, full_reason + (" (will retry)" if retry else ""), tail)
        verb = ("collected %d result file(s)" % len(uploads) if uploads
                else "collected the validation figures" if extra and state == "COMPLETED" else f"{state}: {reason}")
        self.log(f"{key}: attempt {row['attempt']} {verb}{' -- retrying' if retry else ''}")

    def _record_native(self, job, adir: Path) -> None:
        """The MPI library's own algorithms as the job's pgmpi-bench discovered them (native-algorithms.txt,
        written when the job measures native algorithms): kept with the campaign as
        <state>/campaigns/<name>/native-<module key>.json (pgmpi_formats.native.Discovery)."""
        listing = adir / "native-algorithms.txt"
        if listing.exists():
            d = parse_listing(listing.read_text())
            (self.root / f"native-{job.module.key}.json").write_text(d.dumps() + "\n")
        for ln in job.launches:          # every search's path: its rounds, times and choice per cell
            if ln.role == "search" and (adir / ln.output).is_file():
                (self.root / f"search-{job.key}-{ln.index}.json").write_text((adir / ln.output).read_text())

    def upload(self) -> dict:
        t0 = time.perf_counter()
        res = drain(self.state, self.client, self.log)
        for payload, resp in res.pop("validations", []):
            if payload.get("_path") == NATIVE_VALIDATIONS:
                self.native_verdict(payload, resp)
            elif payload.get("_path", "").endswith("/job-failed"):
                self.log(f"{payload['library']}-{payload['version']}: native candidate {resp.get('id')} "
                         f"{resp.get('state')}: its validation job failed ({payload['reason'][:300]})")
            else:
                self.repeat_inconclusive(payload, resp)
        dt = time.perf_counter() - t0
        if res["sent"]:
            self.costs["_upload"] = self.costs.get("_upload", 0.0) + dt
        return res

    def repeat_inconclusive(self, payload: dict, resp: dict) -> None:
        """An inconclusive validation (the sizes the candidate leaves alone did not come out at 1.0) is no
        verdict: plan the same validation again, up to VALIDATION_REPEATS more times."""
        verdict = (resp or {}).get("validation") or {}
        if verdict.get("state") != "inconclusive":
            return
        key, vid = payload.get("job", ""), resp.get("id")
        base, _, n = key.partition("-r")
        n = int(n) if n.isdigit() else 0
        if n >= VALIDATION_REPEATS or vid is None:
            self.log(f"{key}: validation inconclusive, {n} repeat(s) done; the candidate stays unvalidated")
            return
        pdir = self.root / "profiles" / f"v{vid}"
        files = {p.name: p.read_text() for p in sorted(pdir.glob("*.prf"))} if pdir.is_dir() else {}
        row = self.state.job(self.c.name, key)      # measured again with the module that measured it
        module_key = Module.model_validate(json.loads(row["spec"])["module"]).key if row else None
        job = validation_job(self.c, {"id": vid, "library": payload.get("library"), "files": files,
                                      "module_key": module_key},
                             pdir.resolve(), self.c.slurm.walltime_seconds)
        if job is None:
            return
        job = dataclasses.replace(job, key=f"{base}-r{n + 1}")
        spec = spec_to_json(job)
        spec["profile_version"] = vid
        with self.state.tx():
            if self.state.add_job(self.c.name, job.key, spec, kind="validate"):
                self.log(f"{job.key}: validation of candidate {vid} inconclusive; measured again")

    # ------------------------------------------------------- the within-night looks
    def advance_looks(self) -> int:
        """A sequential campaign (scheduler/looks.py): for every look chain whose last look has been collected,
        the stopping rule per cell; the next look's job for the undecided cells only. Returns the jobs added."""
        if self.c.sequential is None or self.state.campaign(self.c.name)["state"] != "ACTIVE" \
                or (self.root / "looks.done").exists():
            return 0
        from . import looks
        rows = self.state.jobs(self.c.name)
        measure = [r for r in rows if r["kind"] == "measure"]
        spent = sum(looks.node_hours(r) for r in measure)
        bases = sorted({looks.base_of(r["key"])[0] for r in measure})
        found, added = [], 0
        for base in bases:
            try:
                lk = looks.next_look(self.c, rows, base, spent)
            except (OSError, ResultsFormatError, KeyError) as exc:
                self.log(f"{base}: the looks cannot read the collected results ({exc}); no further look")
                continue
            if lk is None:
                continue
            found.append(lk)
            if lk.next_job is None:
                continue
            with self.state.tx():
                if self.state.add_job(self.c.name, lk.next_job.key, spec_to_json(lk.next_job)):
                    added += 1
                    opened = lk.open_cells()
                    self.log(f"{lk.next_job.key}: look {lk.taken + 1} for {len(opened)} undecided cell(s) of "
                             f"{len(lk.cells)} ({', '.join(f'{c} {m} B' for c, m in sorted(opened))}); "
                             f"{sum(1 for o in lk.cells.values() if not o.open)} decided after look {lk.taken}")
        if found:
            report = looks.write_report(self.root, found)
            if len(found) == len(bases) and all(lk.next_job is None for lk in found):
                # every chain stopped: said once (a restarted agent finds the marker and reads no file again)
                (self.root / "looks.done").write_text("\n".join(f"{lk.base}: {lk.why_stop}" for lk in found) + "\n")
                self.log(f"looks: {'; '.join(f'{lk.base}: {lk.why_stop}' for lk in found)}; "
                         f"{spent:.3g} node-hours ran ({report})")
        return added

    # ------------------------------------------------------- analysis + validation
    def analysis_due(self) -> bool:
        row = self.state.campaign(self.c.name)
        if row["state"] != "ACTIVE" or self.client is None or not self.c.validation.enabled:
            return False
        measure = [r for r in self.state.jobs(self.c.name) if r["kind"] == "measure"]
        if not all(r["state"] in FINAL for r in measure):
            return False
        pending = [r for r in self.state.outbox(self.c.name) if r["kind"] == "upload"
                   and not (r["last_error"] or "").startswith("REJECTED")]
        return not pending and any(r["state"] == "COMPLETED" for r in measure)

    def identities(self) -> dict[tuple[str, str], list[str]]:
        """(library, version) as the campaign's results name them (#@mpi_library, #@mpi_version, from
        MPI_Get_library_version) -> the keys of the modules that measured it.  Two modules of one family
        (openmpi 4.1.4 and openmpi5 5.0.11) are two libraries to the service; a module whose results say
        nothing counts under its family's name and no version (the service takes the newest)."""
        out: dict[tuple[str, str], list[str]] = {}
        for row in self.state.jobs(self.c.name, ("COMPLETED",)):
            if row["kind"] != "measure":
                continue
            job = spec_from_json(json.loads(row["spec"]))
            ident = (job.module.family.name, "")
            try:
                first = collect_pairs(Path(row["attempt_dir"]), job)[0][1]
                head = dict(line[2:].rstrip("\n").split("=", 1) for line in first.open(errors="replace")
                            if line.startswith("#@") and "=" in line)
                ident = (head.get("mpi_library") or ident[0], head.get("mpi_version", ""))
            except (OSError, IndexError, ValueError):
                pass
            keys = out.setdefault(ident, [])
            if job.module.key not in keys:
                keys.append(job.module.key)
        return out

    def analyse(self) -> dict:
        """Ask the service for verdicts + candidate profiles per (library, version); plan validation jobs."""
        results = {}
        for (lib, ver), module_keys in sorted(self.identities().items()):
            body = {"machine": self.c.machine, "library": lib, "campaign": self.c.name,
                    "confirmations": self.c.validation.confirmations}
            if ver:
                body["version"] = ver
            lib = f"{lib}-{ver}" if ver else lib       # the key of this library's results, e.g. intelmpi-2021.13
            try:
                _, data = self.client.request("POST", "/api/v1/analyses", body)
            except Unreachable as exc:
                if exc.said:    # it answered: it cannot analyse now (e.g. its pgmpitune-check is missing)
                    self.log(f"analysis of {lib}: the service cannot analyse it now, asked again later: {exc.said}")
                else:
                    self.log(f"analysis of {lib}: service unreachable, later: {exc}")
                return {}
            except Rejected as exc:
                results[lib] = {"error": str(exc)}
                self.log(f"analysis of {lib} rejected: {exc}")
                continue
            results[lib] = {"analysis_id": data.get("id"), "violations": data.get("n_violations"),
                            "profiles": [p.get("id") for p in data.get("profiles", [])]}
            for version in data.get("profiles", []):
                if version.get("state", "candidate") != "candidate":
                    continue
                version.setdefault("library", body["library"])
                version.setdefault("module_key", module_keys[0])
                pdir = self.root / "profiles" / f"v{version.get('id')}"
                pdir.mkdir(parents=True, exist_ok=True)
                for name, text in (version.get("files") or {}).items():
                    (pdir / Path(name).name).write_text(text)
                job = validation_job(self.c, version, pdir.resolve(), self.c.slurm.walltime_seconds)
                if job is None:
                    continue
                spec = spec_to_json(job)
                spec["profile_version"] = version.get("id")
                with self.state.tx():
                    if self.state.add_job(self.c.name, job.key, spec, kind="validate"):
                        self.log(f"{job.key}: validation of candidate profile {version.get('id')} planned")
            if self.c.native is not None and ver and self.c.measures_native():
                results[lib]["native"] = self.plan_native(body["library"], ver, module_keys[0], [])
        with self.state.tx():
            self.state.set_campaign_state(self.c.name, "ANALYSED", results)
        return results

    # ------------------------------------------------------- the nightly native chain
    def plan_native(self, library: str, version: str, module_key: str, refused: list[int]) -> dict:
        """Ask the service for this library's decision file of the campaign (a candidate version of its
        profile set; the cells of the `refused` validation records taken out) and plan its validation job:
        the file as users load it (scheduler/native_validation.py), through the campaign's backend."""
        module = next((m for m in self.c.modules if m.key == module_key), None)
        # Intel MPI has no native vocabulary of pgmpi_formats.native (its presets are variables), but a file
        if module is None or (module.family.native or module.family.name) not in FILE_FOR:
            return {"why": f"{module_key}: no native decision file for this family"}
        n = len(refused) + 1
        if n > self.c.native.candidates:
            self.log(f"{library}-{version}: {len(refused)} native candidate(s) failed validation; none more "
                     f"tonight (native.candidates = {self.c.native.candidates})")
            return {"why": "no more candidates tonight"}
        body = {"machine": self.c.machine, "library": library, "version": version, "campaign": self.c.name,
                "refused": refused}
        try:
            _, data = self.client.request("POST", "/api/v1/native/candidates", body)
        except (Unreachable, Rejected) as exc:
            self.log(f"native candidate of {library}-{version}: {exc}")
            return {"error": str(exc)}
        if not data.get("id"):
            self.log(f"native candidate of {library}-{version}: none ({data.get('why')})")
            return {"why": data.get("why")}
        vid = data["id"]
        job = NativeValidationJob(
            self.root / "native" / f"v{vid}", self.c.machine, module.mpi, version, data["name"], data["text"],
            module.name, self.c.native.tunelib_module, [*module.modulepath, *self.c.native.modulepath],
            nprocs=self.c.native_nprocs(), rounds=self.c.native.rounds, nrep=self.c.native.nrep,
            walltime_seconds=self.c.slurm.walltime_seconds, extra_lines=list(module.prologue), env=dict(module.env),
            job_key=f"native-{module.key}-c{n}", decided_at=data.get("decided_at"), sync_argv=sync_argv(self.c, 1))
        try:
            job.stage()
        except (ValueError, OSError) as exc:        # the agent's own readers refuse it: never submitted
            self.log(f"native candidate {vid} of {library}-{version} refused before submitting: {exc}")
            return {"candidate": vid, "refused": str(exc)}
        spec = spec_to_json(job.spec())
        spec["native"] = {"profile_version": vid, "library": library, "version": version, "name": job.name,
                          "mpi": module.mpi, "nprocs": job.nprocs, "rounds": job.rounds,
                          "directory": str(job.directory), "refused": refused, "module_key": module.key}
        with self.state.tx():
            if self.state.add_job(self.c.name, job.key, spec, kind="native-validate"):
                self.log(f"{job.key}: validation of native candidate {vid} ({job.name}, {len(job.cells)} cells) "
                         "planned")
        return {"candidate": vid, "job": job.key}

    def _native_figures(self, row, adir: Path) -> tuple[str, str, dict]:
        """The outbox item of a finished native validation job: the file, its figures, the candidate."""
        nat = json.loads(row["spec"])["native"]
        text = (Path(nat["directory"]) / "profiles" / self.c.machine / f"{nat['library']}-{nat['version']}"
                / "versions" / "1" / nat["name"]).read_text()
        return (f"native-validation:{self.c.name}:{row['key']}", "validation", {
            "_path": NATIVE_VALIDATIONS, "machine": self.c.machine, "library": nat["library"],
            "version": nat["version"], "name": nat["name"], "text": text, "nprocs": nat["nprocs"],
            "figures": arm_figures(adir, nat["rounds"]), "job": f"{self.backend.name}:{row['backend_id']}",
            "profile_version": nat["profile_version"], "publish": self.c.native.publish,
            "refused": nat["refused"], "module_key": nat["module_key"]})

    def _native_job_failed(self, row, state: str, reason: str) -> tuple[str, str, dict]:
        """The outbox item of a native validation job that failed in the resource manager after its retry: no
        figures, no verdict; the service marks the candidate failed with the reason (it never stays one)."""
        nat = json.loads(row["spec"])["native"]
        return (f"native-job-failed:{self.c.name}:{row['key']}", "validation", {
            "_path": f"/api/v1/native/candidates/{nat['profile_version']}/job-failed", "machine": self.c.machine,
            "library": nat["library"], "version": nat["version"],
            "job": f"{self.backend.name}:{row['backend_id']}", "reason": f"{state}: {reason}"[:2000]})

    def native_verdict(self, payload: dict, resp: dict) -> None:
        """The service judged a native candidate: passed (published when the campaign asks), or failed: its
        failed cells are refused and the rest decided and validated again."""
        lib = f"{payload['library']}-{payload['version']}"
        cand = (resp or {}).get("candidate") or {}
        if (resp or {}).get("ok"):
            pubd = cand.get("published")
            self.log(f"{lib}: native candidate {payload['profile_version']} passed validation {resp.get('id')}; "
                     + (f"published as version {pubd['version']}" if pubd else cand.get("why") or "not published "
                        "(native.publish is off: an admin publishes it)"))
            return
        failed = [c for c in (resp or {}).get("cells", []) if c.get("problems")]
        self.log(f"{lib}: native candidate {payload['profile_version']} failed validation {resp.get('id')} in "
                 f"{len(failed)} cell(s); deciding again without them: "
                 + "; ".join(f"{c.get('collective')} {c.get('msize')} B {c.get('label')}: "
                             + "; ".join(map(str, c.get("problems") or []))[:300] for c in failed[:5]))
        if resp.get("id"):
            self.plan_native(payload["library"], payload["version"], payload["module_key"],
                             [*payload.get("refused", []), resp["id"]])

    # ------------------------------------------------------------ the cycle
    def run_once(self) -> dict:
        self.submit_new()
        self.track()
        if self.advance_looks():
            self.submit_new()
        up = self.upload()
        if self.analysis_due():
            self.analyse()
            self.submit_new()
        s = self.summary()
        s["upload"] = up
        return s

    def jobs_final(self) -> bool:
        return all(r["state"] in FINAL for r in self.state.jobs(self.c.name))

    def done(self) -> bool:
        """Every job final and everything delivered (without a service: nothing more to run)."""
        if not self.jobs_final():
            return False
        if self.client is None:
            return True
        if self.analysis_due():
            return False
        return all((r["last_error"] or "").startswith("REJECTED") for r in self.state.outbox(self.c.name))

    def run(self, interval: float = 2.0, timeout: float | None = None, on_cycle=None) -> dict:
        end = time.time() + timeout if timeout else None
        while True:
            s = self.run_once()
            if on_cycle:
                on_cycle(s)
            if s["done"]:
                return s
            if end and time.time() > end:
                s["timed_out"] = True
                return s
            time.sleep(interval)

    def cancel(self) -> int:
        n = 0
        for row in self.state.jobs(self.c.name, ACTIVE + ("NEW",)):
            if row["backend_id"] and row["state"] != "NEW":
                try:
                    self.backend.cancel(row["backend_id"])
                except BackendUnavailable as exc:
                    self.log(f"{row['key']}: cannot cancel now: {exc}")
                    continue
            with self.state.tx():
                self.state.update_job(self.c.name, row["key"], state="CANCELLED", reason="cancelled by admin",
                                      ended_at=time.time())
                self._report(self.state.job(self.c.name, row["key"]))
            n += 1
        with self.state.tx():
            self.state.set_campaign_state(self.c.name, "CANCELLED")
        return n

    def summary(self) -> dict:
        rows = self.state.jobs(self.c.name)
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        return {"campaign": self.c.name, "jobs": len(rows), "states": counts,
                "spooled": len(self.state.outbox(self.c.name)),
                "rejected": sum(1 for r in self.state.outbox(self.c.name)
                                if (r["last_error"] or "").startswith("REJECTED")),
                "uploaded": len(self.state.sent("upload", self.c.name)),
                "done": self.done()}
