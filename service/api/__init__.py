"""JSON API under /api/v1 (docs/contracts.md, 8). Errors: {"error": {"code", "message", "field"?, "details"?}}.

One module per resource; service/api/common.py holds what they share (errors, role checks, JSON forms)."""
from flask import Blueprint

api_bp = Blueprint("api", __name__, url_prefix="/api/v1")

# importing the modules registers their routes and the error handlers
from service.api import common, machines, campaigns, results, analyses, profiles, native, usage  # noqa: E402,F401
