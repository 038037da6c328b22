"""gunicorn settings for the pgmpi-site service (behind nginx on the same host).

    gunicorn -c deploy/service/gunicorn.conf.py 'service.app:create_app()'

Environment: DATABASE_URL (PostgreSQL), PGMPI_SECRET_KEY, PGMPI_INSTANCE, PGMPI_BIND, PGMPI_WORKERS,
PGMPI_MAX_UPLOAD_BYTES, PGMPI_MAX_UPLOAD_FILE_BYTES.  Logs are JSON lines on stderr (journald keeps them).
Memory: a worker peaks at ~0.41 GiB storing a file at the 32 MiB per-file limit, whatever the body's size
(service/README.md, "Sizing"): workers x 0.41 GiB must fit next to PostgreSQL.
"""
import multiprocessing
import os

bind = os.environ.get("PGMPI_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("PGMPI_WORKERS", max(2, multiprocessing.cpu_count())))
worker_class = "sync"
timeout = 300              # a large upload or an analysis may take a while
graceful_timeout = 30
keepalive = 5
max_requests = 2000        # recycle workers now and then
max_requests_jitter = 200
forwarded_allow_ips = "127.0.0.1"
proxy_allow_ips = "127.0.0.1"
accesslog = None           # the app logs every request as JSON (service.request)
errorlog = "-"
from service.logs import GUNICORN_LOGCONFIG  # noqa: E402  (JSON lines on stderr)

logconfig_dict = GUNICORN_LOGCONFIG
