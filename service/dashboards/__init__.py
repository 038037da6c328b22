"""Dashboards: server-rendered pages (Jinja2, templates/). The routes are in routes.py, the numbers behind
them in data.py; publishing and rolling back go through service/workflows/publish.py."""
