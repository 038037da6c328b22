"""The dashboards' routes, one module per area under service/dashboards/<area>/pages.py, all on the one
blueprint of common.py (endpoint names `dash.<page>`); importing an area registers its routes.

| area | pages | numbers |
| --- | --- | --- |
| library | overview, heatmap, detail, trends, glossary | library/data.py |
| campaigns | campaigns | campaigns/data.py |
| profiles | profile sets, a set's versions, publish, rollback | profiles/data.py |
| native | the library's own algorithms | native/data.py |
| datatypes | derived-datatype verdicts and layouts | datatypes/data.py |
| alerts | the alerts page and feed | alerts/data.py (sent by service/notify.py) |
| tuned | what is tuned now per library | service/profiles/live.py |
| usage | where the users' collective time goes | service/workflows/usage.py |

Numbers shared by the areas (lookups, layouts, medians, violation counts) are in data.py.
"""
from __future__ import annotations

from flask import Flask

from service.dashboards import common
from service.dashboards.alerts import pages as _alerts  # noqa: F401  (registers routes)
from service.dashboards.campaigns import pages as _campaigns  # noqa: F401
from service.dashboards.datatypes import pages as _datatypes  # noqa: F401
from service.dashboards.library import pages as _library  # noqa: F401
from service.dashboards.native import pages as _native  # noqa: F401
from service.dashboards.profiles import pages as _profiles  # noqa: F401
from service.dashboards.tuned import pages as _tuned  # noqa: F401
from service.dashboards.usage import pages as _usage  # noqa: F401

bp = common.bp


def init_app(app: Flask) -> None:
    common.register(app)
