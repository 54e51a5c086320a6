"""The OpenAPI document as generators and /docs read it: every operation tagged with its
domain and named by a unique operationId, and an example for every request body and
parameter that the service accepts (what "Try it out" sends). No database needed."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from openapi_spec_validator import validate
from pydantic import ValidationError

from memexdb.fields import METADATA_MAX_BYTES, METADATA_MAX_DEPTH
from memexdb.memories.models import MemoryCreate
from memexdb.operation import Domain
from memexdb.operation_table import OPERATIONS
from memexdb.rest.app import ENDPOINTS
from memexdb.rest.docs import TAGS, _reply, openapi_document, served_document
from memexdb.rest.endpoint import Endpoint, Reply

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


def parameter_example(parameter: dict[str, Any]) -> Any:
    """A parameter's example: its own beside `schema`, or its media type's beside
    `content` (a JSON value in the query string; OpenAPI allows no `example` there)."""
    if "content" in parameter:
        (media,) = parameter["content"].values()
        return media.get("example", _MISSING)
    return parameter.get("example", _MISSING)


_MISSING = object()


def test_every_body_and_parameter_has_an_example() -> None:
    missing = []
    for _, operation in documented():
        for parameter in operation.get("parameters", []):
            if parameter_example(parameter) is _MISSING:
                missing.append(f"{operation['operationId']}: {parameter['name']}")
        if "requestBody" in operation:
            # JSON, or a streamed body (POST /v1/import: application/x-ndjson)
            (content,) = operation["requestBody"]["content"].values()
            if "example" not in content:
                missing.append(f"{operation['operationId']}: body")
    assert not missing, missing


def _example_request(operation: dict[str, Any]) -> dict[str, Any]:
    # headers (the session token, Memex-Min-LSN) are read by the route, not the model
    values = {
        p["name"]: parameter_example(p)
        for p in operation.get("parameters", [])
        if p["in"] != "header"
    }
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


def test_the_document_is_valid_openapi() -> None:
    """openapi-spec-validator accepts the document, as written and as a service serves it
    (with its model): it refused an `example` beside a query parameter's `content`."""
    validate(DOCUMENT)
    validate(served_document(ENDPOINTS, ("all-MiniLM-L6-v2-int8", 384)))


def test_every_error_reply_declares_its_json_body() -> None:
    """Generated clients read an error only if the document says it has a body: every
    4xx/5xx reply declares one (five 404/409 replies of get, update, forget and
    revoke_key declared none)."""
    bodies = {"ErrorResponse", "OpenAIErrorResponse", "HealthResponse", "ReadyResponse"}
    missing = []
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            for status, reply in operation["responses"].items():
                if int(status) < 400:
                    continue
                schema = reply.get("content", {}).get("application/json", {}).get("schema", {})
                if schema.get("$ref", "").rsplit("/", 1)[-1] not in bodies:
                    missing.append(f"{method.upper()} {path} {status}")
    assert not missing, missing
    # at the source: a reply declared without a model still documents the JSON error
    assert _reply(Reply(404, "No such thing"))["content"] == {
        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}
    }
    assert "content" not in _reply(Reply(204, "Deleted"))


def test_the_openai_compatible_errors_are_openai_shaped() -> None:
    responses = DOCUMENT["paths"]["/v1/embeddings"]["post"]["responses"]
    errors = {s: r for s, r in responses.items() if int(s) >= 400}
    assert {"401", "404", "413", "422", "429"} <= set(errors)
    for reply in errors.values():
        schema = reply["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/OpenAIErrorResponse"}
    body = DOCUMENT["components"]["schemas"]["OpenAIErrorBody"]
    assert {"message", "type", "param", "code"} <= set(body["required"])


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {v.rsplit("/", 1)[-1] for k, v in value.items() if k == "$ref"}
        return found.union(*(_refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value))
    return set()


def test_no_schema_refers_to_itself() -> None:
    """A recursive schema (the JSON value of metadata, MetadataValue) made
    openapi-python-client drop store, store_many and search and openapi-typescript write a
    type tsc refuses (TS2502): no schema reaches itself through its references."""
    schemas = DOCUMENT["components"]["schemas"]
    for name in schemas:
        seen: set[str] = set()
        todo = _refs(schemas[name])
        while todo:
            ref = todo.pop()
            assert ref != name, f"{name} refers to itself"
            if ref not in seen:
                seen.add(ref)
                todo |= _refs(schemas[ref])
    # and every schema is one an operation uses
    assert set(schemas) == {n for n in schemas if n in _reached()}


def _reached() -> set[str]:
    schemas = DOCUMENT["components"]["schemas"]
    reached: set[str] = set()
    todo = _refs(DOCUMENT["paths"])
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo |= _refs(schemas[name])
    return reached


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    "metadata",
    [
        {"k\x00": 1},
        {"k": ["a", {"b": "\x00"}]},
        {"k": float("nan")},
        _nested(METADATA_MAX_DEPTH + 1),
        {"k": "x" * METADATA_MAX_BYTES},
    ],
    ids=["nul-key", "nested-nul", "nan", "too-deep", "too-large"],
)
def test_metadata_is_checked_as_before(metadata: dict[str, Any]) -> None:
    """The document describes metadata as any JSON object (no recursive schema); the
    service still refuses what its description rules out (Metadata)."""
    with pytest.raises(ValidationError):
        MemoryCreate.model_validate({**_TENANT, "content": "x", "metadata": metadata})
    assert MemoryCreate.model_validate(
        {**_TENANT, "content": "x", "metadata": _nested(METADATA_MAX_DEPTH - 1)}
    ).metadata


_TENANT = {"agent_id": "a", "user_id": "u"}
