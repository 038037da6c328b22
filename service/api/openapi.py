"""The OpenAPI 3.1 document of /api/v1 (request schemas generated from service.api.schemas)."""
from __future__ import annotations

from functools import lru_cache

from pydantic.json_schema import models_json_schema

from service.api import schemas as S

REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict:
    return {"$ref": REF.format(model=name)}


ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"},
                   "details": {"type": "array", "items": {"type": "object"}}}}}}
OBJ = {"type": "object"}
LIST = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": OBJ}}}


def _resp(desc: str, schema=None) -> dict:
    return {"description": desc, "content": {"application/json": {"schema": schema or OBJ}}}


def _errors(*codes: int) -> dict:
    text = {400: "bad request", 401: "no or unknown token", 403: "role or machine not allowed", 404: "not found",
            409: "conflict", 413: "body larger than the upload limit", 415: "not JSON", 422: "invalid input",
            503: "the service cannot analyse: no pgmpitune-check it can run"}
    return {str(c): _resp(text[c], _ref("Error")) for c in codes}


def _q(name: str, schema: dict, desc: str = "") -> dict:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": desc}


def _p(name: str, schema: dict | None = None) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}


PAGE = [_q("limit", {"type": "integer", "minimum": 1, "maximum": 1000}),
        _q("offset", {"type": "integer", "minimum": 0})]
ML = [_q("machine", {"type": "string"}), _q("library", {"type": "string"}), _q("version", {"type": "string"})]


def _get(summary: str, params=(), schema=None, errors=(400, 401, 403)) -> dict:
    return {"get": {"summary": summary, "parameters": list(params), "responses": {"200": _resp("ok", schema),
                                                                                   **_errors(*errors)}}}


def _write(method: str, summary: str, model: str, role: str, ok=("201",), params=(), errors=()) -> dict:
    responses = {code: _resp("ok") for code in ok}
    responses.update(_errors(400, 401, 403, 409, 413, 415, 422, *errors))
    return {method: {"summary": f"{summary} (role: {role})", "parameters": list(params),
                     "requestBody": {"required": True, "content": {"application/json": {"schema": _ref(model)}}},
                     "responses": responses}}


@lru_cache(maxsize=1)
def document() -> dict:
    _, defs = models_json_schema([(m, "validation") for m in S.REQUEST_MODELS], ref_template=REF)
    schemas = dict(defs.get("$defs", {}))
    schemas["Error"] = ERROR
    paths = {
        "/machines": {**_get("list machines", PAGE, LIST),
                      **_write("post", "register a machine", "MachineIn", "admin")},
        "/machines/{machine}": _get("one machine with its MPI libraries", [_p("machine")], errors=(401, 403, 404)),
        "/machines/{machine}/libraries": {
            **_get("MPI libraries of a machine", [_p("machine")], LIST, errors=(401, 403, 404)),
            **_write("post", "register an MPI library", "LibraryIn", "admin", ("200", "201"), [_p("machine")], (404,))},
        "/campaigns": {**_get("list campaigns", PAGE + [_q("machine", {"type": "string"})], LIST),
                       **_write("post", "create (or re-register) a campaign", "CampaignIn", "admin; agent of the machine",
                                ("200", "201"), errors=(404,))},
        "/campaigns/{campaign}": _get("one campaign with job counts per state", [_p("campaign")], errors=(401, 403, 404)),
        "/campaigns/{campaign}/jobs": _get("jobs of a campaign", [_p("campaign")] + PAGE, LIST, errors=(400, 401, 403, 404)),
        "/campaigns/{campaign}/jobs/{job_key}": {
            **_get("one job", [_p("campaign"), _p("job_key")], errors=(401, 403, 404)),
            **_write("put", "create or update a job (idempotent upsert)", "JobIn", "agent of the machine; admin",
                     ("200", "201"), [_p("campaign"), _p("job_key")], (404,))},
        "/uploads": _write("post", "upload raw-result files: all-or-nothing, idempotent by upload_id (the same "
                           "content again: 200 duplicate; other content: 409)",
                           "UploadIn", "agent of the files' machine; admin", ("200", "201")),
        "/uploads/{upload_id}": _get("one upload", [_p("upload_id")], errors=(401, 403, 404)),
        "/runs": _get("runs (one per mpirun)", PAGE + ML + [_q("campaign", {"type": "string"}), _q("layout", {"type": "string"}),
                                                            _q("upload_id", {"type": "string"})], LIST),
        "/runs/{run_id}": _get("one run with headers and its series", [_p("run_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})],
                               errors=(401, 403, 404)),
        "/series": _get("measurement series", PAGE + [_q("run", {"type": "integer"}), _q("call", {"type": "string"}),
                                                      _q("algorithm", {"type": "string"}),
                                                      _q("msize", {"type": "integer"}),
                                                      _q("values", {"type": "string", "enum": ["0", "1"]})], LIST),
        "/series/{series_id}": _get("one series with its raw timings", [_p("series_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})],
                                    errors=(401, 403, 404)),
        "/analyses": {**_get("analyses", PAGE + ML, LIST),
                      **_write("post", "run an analysis: verdicts, violations and candidate profiles", "AnalysisIn",
                               "agent of the machine; admin", errors=(404, 503))},
        "/analyses/{analysis_id}": _get("one analysis with its violations", [_p("analysis_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})],
                                        errors=(401, 403, 404)),
        "/violations": _get("violations of the latest analysis per machine x library",
                            PAGE + ML + [_q("analysis", {"type": "integer"}), _q("collective", {"type": "string"}),
                                         _q("layout", {"type": "string"})], LIST),
        "/alerts": _get("alerts: new and contradicted violations, regressions of defaults across nights (5 % within "
                        "two nights, at most one false alarm per machine x library a month), each with what changed "
                        "since the last night and whether a live profile covers it; also at /alerts.json",
                        (), {"type": "object", "required": ["generated_at", "alerts", "libraries"],
                             "properties": {"generated_at": {"type": "string"},
                                            "alerts": {"type": "array", "items": OBJ},
                                            "libraries": {"type": "array", "items": OBJ}}}, errors=(401,)),
        "/violations/overview": _get("per machine x library: latest analysis summary and history",
                                     ML + [_q("days", {"type": "integer", "minimum": 1, "maximum": 3660})], LIST),
        "/profiles": _get("profile sets and their versions", ML, LIST),
        "/profiles/{version_id}": _get("one profile version with its files", [_p("version_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})],
                                       errors=(401, 403, 404)),
        "/profiles/{version_id}/validation": _write(
            "post", "store a validation run's figures; the candidate becomes validated when tuned is not "
            "slower than default (within the tolerance) at every size it redirects", "ValidationIn",
            "agent of the machine; admin", ("200",),
            [_p("version_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})], (404,)),
        "/native/validations": {
            **_get("recorded validations of native decision files", ML, LIST),
            **_write("post", "judge and record a native decision file's validation job (refused with the reason "
                     "when the file's readers refuse it)", "NativeValidationIn", "agent of the machine; admin",
                     ("201",), errors=(404, 422))},
        "/native/candidates": _write(
            "post", "the nightly native chain: a campaign's decision file of one library (failed cells of the "
            "given native validation records refused) as a candidate version of the library's profile set, "
            "with decided_at: the [collective, size, nprocs] cells its decision measured (its validation job "
            "measures each rule there); 200 with id null when nothing of the library's own wins",
            "NativeCandidateIn",
            "agent of the machine; admin", ("200", "201"), errors=(404, 422)),
        "/native/candidates/{version_id}/job-failed": _write(
            "post", "a native candidate's validation job failed in the resource manager after its retries (no "
            "verdict): the candidate is marked failed with the reason", "NativeJobFailedIn",
            "agent of the machine; admin", ("200",),
            [_p("version_id", {"type": "integer", "minimum": 0, "maximum": 2147483647})], (404, 422)),
        "/me": _get("who am I", (), errors=(401,)),
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "pgmpi-site API", "version": "1",
                 "description": "Results database of pgmpi-site. Bearer tokens (pgmpi token create); roles "
                                "viewer < agent < admin; an agent token acts for one machine. Errors: "
                                '{"error": {"code", "message", "field", "details"}}.'},
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
