#!/usr/bin/env python3
"""A local SMTP server that keeps every message it receives, for the alert tests and for trying the
alerts on a machine without a mail server (aiosmtpd, from PyPI: a test dependency).

    .venv/bin/python deploy/mailsink.py --dir build/mail --port 8025        # foreground; Ctrl-C stops it
    # site.conf: alerts_smtp = 127.0.0.1:8025

Each message is written to <dir>/<n>.eml as received (RFC 5322); the line "mailsink: listening on
127.0.0.1:<port>" on stdout says it is ready (--port 0: a free port, printed there).
"""
from __future__ import annotations

import argparse
import signal
import socket
import threading
from pathlib import Path


class Keep:
    def __init__(self, folder: Path):
        self.folder = folder
        self.n = len(list(folder.glob("*.eml")))
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.n += 1
            path = self.folder / f"{self.n:06d}.eml"
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(envelope.original_content or envelope.content)
        tmp.rename(path)                   # a reader never sees half a message
        return "250 OK"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8025)
    a = ap.parse_args()
    from aiosmtpd.controller import Controller
    a.dir.mkdir(parents=True, exist_ok=True)
    port = a.port
    if port == 0:
        with socket.socket() as s:
            s.bind((a.host, 0))
            port = s.getsockname()[1]
    ctl = Controller(Keep(a.dir), hostname=a.host, port=port)
    ctl.start()
    print(f"mailsink: listening on {a.host}:{port}, messages in {a.dir}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    ctl.stop()


if __name__ == "__main__":
    main()
