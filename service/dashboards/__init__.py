"""Dashboards: server-rendered pages (Jinja2, templates/<area>/). One package per area (library, campaigns,
profiles, native, datatypes, alerts), each with pages.py (routes) and data.py (numbers, no Flask); the shared
blueprint and URL helpers are in common.py, the shared numbers in data.py, the list of areas in routes.py.
Publishing and rolling back go through service/workflows/publish.py."""
