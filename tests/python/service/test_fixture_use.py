"""The service tests make a campaign with uploaded runs through one fixture (conftest.campaign_with_runs), not
each with its own copy of the two API calls: a change of either body (a new required field, another agent) is
then made once.  Only tests whose subject is those endpoints call both themselves."""
from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).parent
ENDPOINTS = {"/api/v1/campaigns", "/api/v1/uploads"}
# tests of the two endpoints themselves: who may call them, what an upload links to
SUBJECT = {"conftest.py": {"campaign_with_runs", "create"},
           "test_api.py": {"test_agent_refused_for_another_machine", "test_upload_links_campaign_and_job"}}


def _posts(fn: ast.FunctionDef) -> set[str]:
    return {n.args[0].value for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "post" and n.args
            and isinstance(n.args[0], ast.Constant) and n.args[0].value in ENDPOINTS}


def test_service_tests_create_campaigns_with_runs_through_the_fixture():
    copies = [f"{f.name}:{fn.lineno} {fn.name}" for f in sorted(HERE.glob("*.py"))
              for fn in ast.walk(ast.parse(f.read_text())) if isinstance(fn, ast.FunctionDef)
              and fn.name not in SUBJECT.get(f.name, ()) and _posts(fn) == ENDPOINTS]
    assert copies == [], "create the campaign and upload its runs with the campaign_with_runs fixture: " + ", ".join(copies)
