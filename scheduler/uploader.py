"""Talking to the service: idempotent uploads, job reports, retry with back-off, spool + drain.

Everything owed to the service sits in the state's outbox (the spool, on disk) until the service
acknowledged it. `drain()` sends what is due, oldest first; when the service is unreachable it
stops, and the items wait with exponential back-off. Upload ids are derived from
(campaign, job, mpirun index, content hash), so a re-send after a crash is answered "duplicate".
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from urllib.parse import quote

import requests

from .state import State


class Unreachable(RuntimeError):
    """Connection refused, timeout, 5xx: try later.  `said`: the service's own message when it answered (a 503
    naming what it lacks, e.g. its pgmpitune-check); "" when nothing answered."""

    def __init__(self, message: str, said: str = ""):
        super().__init__(message)
        self.said = said


class Rejected(RuntimeError):
    """4xx: the service will not take this item as it is."""


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


def upload_id(campaign: str, job_key: str, mpirun_index: int, content: str) -> str:
    h = hashlib.sha256(f"{campaign}\0{job_key}\0{mpirun_index}\0{content_hash(content)}".encode())
    return "up-" + h.hexdigest()[:40]


def read_token(path: str | None) -> str | None:
    if not path:
        return None
    p = Path(path).expanduser()
    try:
        return p.read_text().strip() or None
    except OSError as exc:
        raise RuntimeError(f"{p}: cannot read the service token: {exc.strerror}") from None


class ServiceClient:
    """JSON client of the /api/v1 contract, over HTTP (url) or directly into a Flask app (app)."""

    def __init__(self, url: str | None = None, token: str | None = None, app=None, timeout: float = 20.0):
        if not url and app is None:
            raise ValueError("a service URL or an app is needed")
        self.url = url.rstrip("/") if url else None
        self.token = token
        self.timeout = timeout
        self._client = app.test_client() if app is not None else None
        self.session = requests.Session()

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self._client is not None:
            resp = self._client.open(path, method=method, json=body, headers=headers)
            status, text = resp.status_code, resp.get_data(as_text=True)
        else:
            try:
                resp = self.session.request(method, self.url + path, json=body, headers=headers,
                                            timeout=self.timeout)
            except requests.RequestException as exc:
                raise Unreachable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
            status, text = resp.status_code, resp.text
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {"text": text[:500]}
        if status >= 500 or status in (408, 429, 502, 503, 504):
            err = data.get("error") if isinstance(data, dict) else None
            said = err.get("message") if isinstance(err, dict) else None
            raise Unreachable(f"{method} {path}: HTTP {status}: {text[:300]}",
                              f"HTTP {status}: {said}" if isinstance(said, str) and said else "")
        if status >= 400:
            raise Rejected(f"{method} {path}: HTTP {status}: {text[:500]}")
        return status, data

    def healthy(self) -> bool:
        try:
            self.request("GET", "/healthz")
            return True
        except (Unreachable, Rejected):
            return False

    def send(self, kind: str, payload: dict) -> tuple[bool, dict]:
        """Deliver one outbox item; returns (duplicate, response)."""
        if kind == "upload":
            status, data = self.request("POST", "/api/v1/uploads", payload)
            return bool(data.get("duplicate")) or status == 200, data
        if kind == "job":
            c, k = quote(payload["campaign"], safe=""), quote(payload["key"], safe="")
            body = {k2: v for k2, v in payload.items() if k2 not in ("campaign", "key")}
            _, data = self.request("PUT", f"/api/v1/campaigns/{c}/jobs/{k}", body)
            return False, data
        if kind == "campaign":
            try:
                _, data = self.request("POST", "/api/v1/campaigns", payload)
                return False, data
            except Rejected as exc:
                if "HTTP 409" in str(exc):      # registered before: fine
                    return True, {}
                raise
        if kind == "usage":
            m = quote(payload["machine"], safe="")
            status, data = self.request("POST", f"/api/v1/machines/{m}/usage",
                                        {"name": payload["name"], "record": payload["record"]})
            return bool(data.get("duplicate")) or status == 200, data
        if kind == "validation":
            path = payload.pop("_path")
            _, data = self.request("POST", path, payload)
            return False, data
        raise ValueError(f"unknown outbox kind {kind!r}")


def backoff(tries: int, base: float = 2.0, cap: float = 300.0) -> float:
    return min(cap, base * (2 ** tries))


def send_with_retry(client: ServiceClient, kind: str, payload: dict, attempts: int = 3,
                    first_delay: float = 0.2):
    """A few quick tries with back-off for one request (used outside the outbox, e.g. analyses)."""
    delay = first_delay
    for i in range(attempts):
        try:
            return client.send(kind, dict(payload))
        except Unreachable:
            if i == attempts - 1:
                raise
            time.sleep(delay)
            delay *= 2


def drain(state: State, client: ServiceClient | None, log=None, quick_retries: int = 2,
          base_delay: float = 2.0) -> dict:
    """Send every due outbox item; stop at the first unreachable. Returns counters."""
    out = {"sent": 0, "duplicates": 0, "rejected": 0, "pending": 0, "unreachable": False}
    if client is None:
        out["pending"] = len(state.outbox())
        return out
    now = time.time()
    for row in state.outbox():
        # strict order (campaign before its jobs before their uploads): a deferred item holds back the
        # ones after it; only items the service rejected step aside (they wait for an admin, not for us)
        if row["next_try"] > now:
            if (row["last_error"] or "").startswith("REJECTED"):
                continue
            break
        payload = json.loads(row["payload"])
        delay = 0.1
        for attempt in range(quick_retries + 1):
            try:
                dup, resp = client.send(row["kind"], dict(payload))
                state.mark_sent(row, dup, resp)
                if row["kind"] == "validation":
                    out.setdefault("validations", []).append((payload, resp))
                out["sent"] += 1
                out["duplicates"] += int(dup)
                break
            except Unreachable as exc:
                if attempt < quick_retries:
                    time.sleep(delay)
                    delay *= 3
                    continue
                state.mark_failed(row["id"], str(exc), backoff(row["tries"], base_delay))
                state.defer_all(backoff(row["tries"], base_delay))
                out["unreachable"] = True
                if log:
                    log(f"service unreachable ({exc}); {len(state.outbox())} item(s) spooled")
            except Rejected as exc:
                # kept in the spool (never silently dropped), retried rarely; the reason is visible in status
                state.mark_failed(row["id"], f"REJECTED: {exc}", backoff(row["tries"] + 4, base_delay, 3600))
                out["rejected"] += 1
                if log:
                    log(f"service rejected {row['kind']} {row['id']}: {exc}")
                break
        if out["unreachable"]:
            break
    out["pending"] = len(state.outbox())
    return out


def upload_usage(client: ServiceClient, spool: Path, machine: str, log=None, stale_seconds: float = 86400.0) -> dict:
    """Send the complete usage records of a spool directory (libpgmpitune, PGMPITUNE_USAGE_DIR), oldest first.
    A record the service stored (or had stored: idempotent by content) moves to <spool>/uploaded/; one it
    refused moves to <spool>/rejected/ with the reason next to it; when the service is unreachable the rest
    waits for the next run (resumable). Temporaries of writers killed more than `stale_seconds` ago are
    removed: a record is only ever renamed into place whole."""
    from pgmpi_formats.usage import spooled
    out = {"sent": 0, "duplicates": 0, "rejected": 0, "pending": 0, "stale_removed": 0, "unreachable": False}
    spool = Path(spool)
    now = time.time()
    for t in spool.glob(".*.tmp"):
        try:
            if now - t.stat().st_mtime > stale_seconds:
                t.unlink()
                out["stale_removed"] += 1
        except OSError:
            pass
    files = spooled(spool)
    for i, f in enumerate(files):
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            text, err = None, f"unreadable: {exc}"
        try:
            if text is None:
                raise Rejected(err)
            dup, _ = client.send("usage", {"machine": machine, "name": f.name, "record": text})
            dest = spool / "uploaded"
            out["duplicates" if dup else "sent"] += 1
        except Unreachable as exc:
            out["unreachable"] = True
            out["pending"] = len(files) - i
            if log:
                log(f"usage: service unreachable, {out['pending']} record(s) wait: {exc}")
            break
        except Rejected as exc:
            dest = spool / "rejected"
            dest.mkdir(exist_ok=True)
            (dest / (f.name + ".why")).write_text(str(exc) + "\n")
            out["rejected"] += 1
            if log:
                log(f"usage: {f.name} refused: {exc}")
        dest.mkdir(exist_ok=True)
        f.rename(dest / f.name)
    return out
