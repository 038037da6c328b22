"""The agent's durable state: one SQLite file in the state dir (WAL, one transaction per step).

jobs    -- one row per (campaign, job key): attempt, backend id, state, reason, times
outbox  -- everything owed to the service (job reports, campaign registration, uploads with the
           file contents inlined): the spool. A row is deleted only after the service acknowledged it,
           so a killed agent or an unreachable service loses nothing; upload ids make re-sends harmless.
"""
from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (
  name TEXT PRIMARY KEY, definition TEXT NOT NULL, source TEXT, created_at REAL, state TEXT NOT NULL,
  analysis TEXT);
CREATE TABLE IF NOT EXISTS jobs (
  campaign TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'measure',
  spec TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,
  backend_id TEXT, name TEXT, attempt_dir TEXT, reason TEXT DEFAULT '',
  submitted_at REAL, started_at REAL, ended_at REAL, collected INTEGER NOT NULL DEFAULT 0,
  unknown_polls INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign, key));
CREATE TABLE IF NOT EXISTS attempts (
  campaign TEXT, key TEXT, attempt INTEGER, backend_id TEXT, state TEXT, reason TEXT, ended_at REAL,
  PRIMARY KEY (campaign, key, attempt));
CREATE TABLE IF NOT EXISTS outbox (
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, campaign TEXT, payload TEXT NOT NULL, created_at REAL,
  tries INTEGER NOT NULL DEFAULT 0, next_try REAL NOT NULL DEFAULT 0, last_error TEXT DEFAULT '',
  seq INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS sent (
  id TEXT PRIMARY KEY, kind TEXT, campaign TEXT, sent_at REAL, duplicate INTEGER, response TEXT);
"""

ACTIVE = ("SUBMITTING", "PENDING", "RUNNING")
FINAL = ("COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED")


class State:
    def __init__(self, state_dir: str | Path):
        self.dir = Path(state_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "agent.db"
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self._seq = 0

    def close(self):
        self.db.close()

    @contextmanager
    def tx(self):
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------- campaigns
    def ensure_campaign(self, name: str, definition: dict, source: str | None) -> bool:
        row = self.db.execute("SELECT name FROM campaigns WHERE name=?", (name,)).fetchone()
        if row:
            self.db.execute("UPDATE campaigns SET definition=?, source=? WHERE name=?",
                            (json.dumps(definition), source, name))
            return False
        self.db.execute("INSERT INTO campaigns VALUES (?,?,?,?,?,NULL)",
                        (name, json.dumps(definition), source, time.time(), "ACTIVE"))
        return True

    def campaign(self, name: str):
        return self.db.execute("SELECT * FROM campaigns WHERE name=?", (name,)).fetchone()

    def campaigns(self):
        return self.db.execute("SELECT * FROM campaigns ORDER BY created_at").fetchall()

    def set_campaign_state(self, name: str, state: str, analysis: dict | None = None):
        if analysis is None:
            self.db.execute("UPDATE campaigns SET state=? WHERE name=?", (state, name))
        else:
            self.db.execute("UPDATE campaigns SET state=?, analysis=? WHERE name=?",
                            (state, json.dumps(analysis), name))

    # ------------------------------------------------------------------ jobs
    def add_job(self, campaign: str, key: str, spec: dict, kind: str = "measure") -> bool:
        cur = self.db.execute("INSERT OR IGNORE INTO jobs (campaign, key, kind, spec, state) VALUES (?,?,?,?,?)",
                              (campaign, key, kind, json.dumps(spec), "NEW"))
        return cur.rowcount == 1

    def jobs(self, campaign: str, states=None):
        q = "SELECT * FROM jobs WHERE campaign=?"
        args: list = [campaign]
        if states:
            q += f" AND state IN ({','.join('?' * len(states))})"
            args += list(states)
        return self.db.execute(q + " ORDER BY key", args).fetchall()

    def job(self, campaign: str, key: str):
        return self.db.execute("SELECT * FROM jobs WHERE campaign=? AND key=?", (campaign, key)).fetchone()

    def update_job(self, campaign: str, key: str, **fields):
        cols = ", ".join(f"{k}=?" for k in fields)
        self.db.execute(f"UPDATE jobs SET {cols} WHERE campaign=? AND key=?", (*fields.values(), campaign, key))

    def record_attempt(self, campaign, key, attempt, backend_id, state, reason, ended_at):
        self.db.execute("INSERT OR REPLACE INTO attempts VALUES (?,?,?,?,?,?,?)",
                        (campaign, key, attempt, backend_id, state, reason, ended_at))

    def attempts(self, campaign: str, key: str | None = None):
        if key:
            return self.db.execute("SELECT * FROM attempts WHERE campaign=? AND key=? ORDER BY attempt",
                                   (campaign, key)).fetchall()
        return self.db.execute("SELECT * FROM attempts WHERE campaign=? ORDER BY key, attempt",
                               (campaign,)).fetchall()

    # ---------------------------------------------------------------- outbox
    def enqueue(self, item_id: str, kind: str, campaign: str | None, payload: dict, replace: bool = False):
        """Add an item owed to the service. replace=True: newer payload supersedes (job reports)."""
        if not replace and self.db.execute("SELECT 1 FROM sent WHERE id=?", (item_id,)).fetchone():
            return False
        seq = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox").fetchone()[0]
        if replace:
            self.db.execute("INSERT OR REPLACE INTO outbox (id, kind, campaign, payload, created_at, seq) "
                            "VALUES (?,?,?,?,?,?)", (item_id, kind, campaign, json.dumps(payload), time.time(), seq))
            return True
        cur = self.db.execute("INSERT OR IGNORE INTO outbox (id, kind, campaign, payload, created_at, seq) "
                              "VALUES (?,?,?,?,?,?)", (item_id, kind, campaign, json.dumps(payload), time.time(), seq))
        return cur.rowcount == 1

    def due(self, now: float | None = None):
        now = time.time() if now is None else now
        return self.db.execute("SELECT * FROM outbox WHERE next_try <= ? ORDER BY seq", (now,)).fetchall()

    def outbox(self, campaign: str | None = None):
        if campaign:
            return self.db.execute("SELECT * FROM outbox WHERE campaign=? ORDER BY seq", (campaign,)).fetchall()
        return self.db.execute("SELECT * FROM outbox ORDER BY seq").fetchall()

    def mark_sent(self, row, duplicate: bool, response: dict | None):
        with self.tx():
            cur = self.db.execute("SELECT payload FROM outbox WHERE id=?", (row["id"],)).fetchone()
            # a job report replaced while in flight stays queued
            if cur is not None and cur["payload"] == row["payload"]:
                self.db.execute("DELETE FROM outbox WHERE id=?", (row["id"],))
            self.db.execute("INSERT OR REPLACE INTO sent VALUES (?,?,?,?,?,?)",
                            (row["id"], row["kind"], row["campaign"], time.time(), int(duplicate),
                             json.dumps(response)[:2000] if response is not None else None))

    def defer_all(self, delay: float):
        """The service is unreachable: hold every item back (keeps their order for the next drain)."""
        self.db.execute("UPDATE outbox SET next_try=MAX(next_try, ?)", (time.time() + delay,))

    def mark_failed(self, item_id: str, error: str, delay: float):
        self.db.execute("UPDATE outbox SET tries=tries+1, next_try=?, last_error=? WHERE id=?",
                        (time.time() + delay, error[:500], item_id))

    def sent(self, kind: str | None = None, campaign: str | None = None):
        q, args = "SELECT * FROM sent WHERE 1=1", []
        if kind:
            q += " AND kind=?"
            args.append(kind)
        if campaign:
            q += " AND campaign=?"
            args.append(campaign)
        return self.db.execute(q, args).fetchall()
