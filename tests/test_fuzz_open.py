"""The live service fuzzed from its OpenAPI document, open mode (see tests/fuzzing.py)."""

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.fuzzing import OPEN, fuzz

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'


@pytest.mark.timeout(900)
def test_no_server_error_and_no_schema_mismatch(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    fuzz(OPEN, pg_server)
