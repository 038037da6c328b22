"""Property-based fuzzing of every operation of the OpenAPI document (schemathesis strategies driven
by hypothesis): the API never answers 5xx -- bad input is a 4xx with the error shape. Bounded: a few
examples per operation, so it runs in seconds on each backend.

(schemathesis.pytest.from_fixture does not work with pytest 9 here -- 'Function' has no '_nodeid' --
so the operations are iterated explicitly.)"""
from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

MAX_EXAMPLES = 10


def test_api_never_answers_5xx(app, seeded):
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    seen: dict[str, set[int]] = {}

    for op in operations:
        @given(case=op.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case):
            # as admin, so writes pass access control and reach validation and the database
            response = case.call_and_validate(headers=seeded["admin"], checks=[not_a_server_error])
            assert response.status_code < 500, (case.method, case.formatted_path, response.text)
            if response.status_code >= 400:
                assert "error" in response.json(), response.text
            seen.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)

        fuzz()
    assert len(seen) == len(operations)
    # the fuzzer got past validation at least somewhere (not only 4xx everywhere)
    assert any(code < 300 for codes in seen.values() for code in codes if codes)
