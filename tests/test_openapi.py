"""The OpenAPI document as generators and /docs read it: every operation tagged with its
domain and named by a unique operationId, and an example for every request body and
parameter that the service accepts (what "Try it out" sends). No database needed."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from memexdb.operation import Domain
from memexdb.operation_table import OPERATIONS
from memexdb.rest.app import ENDPOINTS
from memexdb.rest.docs import TAGS, openapi_document
from memexdb.rest.endpoint import Endpoint

METHODS = {"get", "post", "put", "patch", "delete"}
DOCUMENT = openapi_document(ENDPOINTS)


def documented() -> list[tuple[Endpoint, dict[str, Any]]]:
    """Each endpoint with its operation of the document."""
    return [(e, DOCUMENT["paths"][e.openapi_path][e.method.lower()]) for e in ENDPOINTS]


def test_every_operation_is_tagged_and_named_once() -> None:
    ids = []
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            assert method in METHODS
            assert operation.get("tags"), f"{method} {path} has no tag"
            assert len(operation["tags"]) == 1
            assert operation["tags"][0] in TAGS
            assert operation.get("operationId"), f"{method} {path} has no operationId"
            ids.append(operation["operationId"])
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(ids) == len(ENDPOINTS)


def test_operation_ids_are_the_operation_names() -> None:
    by_path = {(e.method, e.path): e for e in ENDPOINTS}
    for operation in OPERATIONS:
        if operation.rest is None:
            continue
        endpoint = by_path[operation.rest.method, operation.rest.path]
        assert endpoint.operation_id == operation.name
        assert endpoint.tag == operation.domain
    handwritten = {e.operation_id for e in ENDPOINTS} - {op.name for op in OPERATIONS}
    assert handwritten == {
        "export",
        "import_memories",
        "health",
        "health_live",
        "health_ready",
        "metrics",
    }


def test_every_domain_is_a_described_tag() -> None:
    assert set(TAGS) == set(get_args(Domain))
    tags = DOCUMENT["tags"]
    assert [t["name"] for t in tags] == [t for t in TAGS if any(e.tag == t for e in ENDPOINTS)]
    assert all(t["description"] for t in tags)
    # each domain has at least one operation
    assert {t["name"] for t in tags} == set(get_args(Domain))


def test_every_body_and_parameter_has_an_example() -> None:
    missing = []
    for _, operation in documented():
        for parameter in operation.get("parameters", []):
            if "example" not in parameter:
                missing.append(f"{operation['operationId']}: {parameter['name']}")
        if "requestBody" in operation:
            # JSON, or a streamed body (POST /v1/import: application/x-ndjson)
            (content,) = operation["requestBody"]["content"].values()
            if "example" not in content:
                missing.append(f"{operation['operationId']}: body")
    assert not missing, missing


def _example_request(operation: dict[str, Any]) -> dict[str, Any]:
    values = {p["name"]: p["example"] for p in operation.get("parameters", [])}
    if "requestBody" in operation:
        values.update(operation["requestBody"]["content"]["application/json"]["example"])
    return values


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.rest], ids=lambda op: op.name)
def test_examples_validate_as_the_request(operation: Any) -> None:
    # The body (and path and query) examples together are a valid request of the model
    # the service validates: "Try it out" gets past validation.
    route = operation.rest
    (documented_op,) = [d for e, d in documented() if e.operation_id == operation.name]
    operation.request.model_validate(_example_request(documented_op))
    if route.source == "body" and route.wire is not None:
        body = documented_op["requestBody"]["content"]["application/json"]["example"]
        route.wire.model_validate(body)


def test_handwritten_examples_validate() -> None:
    for endpoint, operation in documented():
        model = endpoint.query or endpoint.body
        if model is not None and endpoint.operation_id not in {op.name for op in OPERATIONS}:
            model.model_validate(_example_request(operation))


def test_path_parameters_state_the_request_fields_bounds() -> None:
    """A path the document allows is one the request model accepts (the fuzzer sent a
    24-digit run id the schema allowed and the model refused)."""
    for op in OPERATIONS:
        if op.rest is None or not op.rest.path_params:
            continue
        path = op.rest.path.replace(":uuid", "").replace(":int", "")
        document = DOCUMENT["paths"][path][op.rest.method.lower()]
        stated = {p["name"]: p["schema"] for p in document["parameters"] if p["in"] == "path"}
        fields = op.request.model_json_schema()["properties"]
        for name in op.rest.path_params:
            for keyword in ("minimum", "maximum", "minLength", "maxLength", "pattern"):
                assert stated[name].get(keyword) == fields[name].get(keyword), (op.name, name)
    run_id = DOCUMENT["paths"]["/v1/admin/dream/runs/{run_id}/restore"]["post"]["parameters"][0]
    assert run_id["schema"]["maximum"] == 2**63 - 1
