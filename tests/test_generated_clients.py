"""The OpenAPI document feeds standard generators, as a user runs them against a live
service's /openapi.json: `openapi-python-client` (PyPI) generates every operation, and
the generated client stores, searches, writes a file and reads it back, and reads the
service's JSON errors; `openapi-typescript` (npm, the TypeScript client's devDependency)
writes types that `tsc --strict` compiles. (A recursive metadata schema made the first
drop store, store_many and search, and the second write a type tsc refused, TS2502.)
Generation runs once per module; skipped without node/npm, except with CI set."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database
from tests.live_service import Service, required
from tests.test_mcp_support import create_admin_key, serve
from tests.test_typescript_client import PACKAGE, npm_env, run

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE_NAME = "memexdb_generated_api"
# openapi-python-client knows no JSON Lines: export and import take and give bytes (its
# documented option for a media type it does not know; docs/rest.md says so)
CONFIG = """\
content_type_overrides:
  application/x-ndjson: application/octet-stream
post_hooks: []
"""
AGENT, USER = "generated-agent", "ivy"


@dataclass
class Live:
    service: Service
    token: str
    document: Path  # the served /openapi.json, as a file


@pytest.fixture(scope="module")
def live(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    dsn = new_database(pg_server)
    root = tmp_path_factory.mktemp("generated-clients")
    try:
        token = create_admin_key(dsn, "generated clients")
        with serve(root, dsn=dsn) as service:
            served = httpx.get(f"{service.base_url}/openapi.json", timeout=30)
            assert served.status_code == 200
            document = root / "openapi.json"
            document.write_text(served.text)
            yield Live(service, token, document)
            assert "Traceback" not in service.output(), service.output()[-4000:]
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def generated(live: Live, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client openapi-python-client generates from the served document, imported."""
    out = tmp_path_factory.mktemp("python-client")
    config = out / "config.yml"
    config.write_text(CONFIG)
    res = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(live.document),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(out / PACKAGE_NAME),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = res.stdout + res.stderr
    assert res.returncode == 0, output[-6000:]
    # a schema or an endpoint it cannot read is a warning, and left out of the client
    assert "Warning" not in output and "will not be generated" not in output, output[-6000:]
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE_NAME)
    finally:
        sys.path.remove(str(out))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE_NAME]:
            del sys.modules[name]


def _operation(package: ModuleType, tag: str, operation_id: str) -> Any:
    return importlib.import_module(f"{package.__name__}.api.{tag}.{operation_id}")


def test_every_operation_is_generated(live: Live, generated: ModuleType) -> None:
    document = json.loads(live.document.read_text())
    operations = [
        (operation["tags"][0], operation["operationId"])
        for item in document["paths"].values()
        for operation in item.values()
    ]
    assert len(operations) >= 40
    missing = []
    for tag, operation_id in operations:
        try:
            module = _operation(generated, tag, operation_id)
        except ModuleNotFoundError:
            missing.append(f"{tag}.{operation_id}")
            continue
        assert callable(module.sync_detailed), operation_id
    assert not missing, missing


def test_the_generated_client_stores_searches_writes_and_reads(
    live: Live, generated: ModuleType
) -> None:
    models = importlib.import_module(f"{generated.__name__}.models")
    api = generated.AuthenticatedClient(
        base_url=live.service.base_url, token=live.token, raise_on_unexpected_status=True
    )
    with api as client:
        metadata = models.MemoryStoreMetadataType0.from_dict(
            {"source": "chat", "nested": {"levels": [1, {"two": None}]}}
        )
        stored = _operation(generated, "memories", "store").sync(
            client=client,
            body=models.MemoryStore(
                agent_id=AGENT,
                user_id=USER,
                content="Ivy keeps her bicycle in the garden shed.",
                metadata=metadata,
            ),
        )
        assert isinstance(stored, models.MemoryOut), stored
        assert stored.metadata.to_dict() == metadata.to_dict()

        found = _operation(generated, "memories", "search").sync(
            client=client,
            body=models.MemorySearchRequest(
                agent_id=AGENT, user_id=USER, query="Where is Ivy's bike?"
            ),
        )
        assert isinstance(found, models.SearchResponse), found
        assert [hit.id for hit in found.results][:1] == [stored.id]

        text = "# Ivy\n\nPrefers trains to planes.\n"
        written = _operation(generated, "files", "write_file").sync(
            client=client,
            body=models.FileWrite(agent_id=AGENT, user_id=USER, path="user/ivy.md", content=text),
        )
        assert isinstance(written, models.FileOut), written
        read = _operation(generated, "files", "read_file").sync(
            client=client, agent_id=AGENT, user_id=USER, path="user/ivy.md"
        )
        assert isinstance(read, models.FileOut), read
        assert read.content == text and read.revision == written.revision

        # an error reply is the service's JSON error, parsed (the 404 of get declared no
        # body, so a generated client could not read it)
        missing = _operation(generated, "memories", "get").sync_detailed(
            uuid.uuid4(), client=client, agent_id=AGENT, user_id=USER
        )
        assert missing.status_code == 404
        assert isinstance(missing.parsed, models.ErrorResponse), missing.content
        assert missing.parsed.error.code == "not_found"


@pytest.fixture(scope="module")
def node_tools() -> Path:
    """clients/typescript's node_modules/.bin (`npm ci` from its lockfile if missing)."""
    npm = required(shutil.which("npm"), "npm is not installed")
    required(shutil.which("node"), "node is not installed")
    bin_dir = PACKAGE / "node_modules" / ".bin"
    if not (bin_dir / "openapi-typescript").exists() or not (bin_dir / "tsc").exists():
        run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], PACKAGE)
    return bin_dir


USAGE = """\
import type { components, operations, paths } from "./openapi.js";

type Schemas = components["schemas"];
// metadata: any JSON object, nested values included
export const metadata: NonNullable<Schemas["MemoryStore"]["metadata"]> = {
  source: "chat",
  nested: { levels: [1, { two: null }], flag: true },
};
// every error reply has the service's JSON error as its body
type NotFound =
  operations["get"]["responses"][404]["content"]["application/json"]["error"]["code"];
export const code: NotFound = "not_found";
type Store = paths["/v1/memories"]["post"]["requestBody"];
export const store: NonNullable<Store>["content"]["application/json"]["content"] = "x";
"""


def test_openapi_typescript_output_compiles_strict(
    live: Live, node_tools: Path, tmp_path: Path
) -> None:
    """openapi-typescript with its defaults, then `tsc --strict` over its output and a
    file that uses the metadata and error types."""
    run(
        [str(node_tools / "openapi-typescript"), str(live.document), "-o", "openapi.ts"],
        tmp_path,
        npm_env(),
    )
    (tmp_path / "usage.ts").write_text(USAGE)
    run(
        [
            str(node_tools / "tsc"),
            "--strict",
            "--noEmit",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "openapi.ts",
            "usage.ts",
        ],
        tmp_path,
        npm_env(),
    )
