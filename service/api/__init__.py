"""JSON API under /api/v1 (contract 6). Errors: {"error": {"code", "message", "field"?, "details"?}}."""
from flask import Blueprint

api_bp = Blueprint("api", __name__, url_prefix="/api/v1")

from service.api import views  # noqa: E402,F401  (registers the routes)
