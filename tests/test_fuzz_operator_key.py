"""The live service fuzzed from its OpenAPI document, operator key mode (see tests/fuzzing.py)."""

import pytest

from memexdb.embedded import EmbeddedPostgres
from tests.fuzzing import OPERATOR_KEY, fuzz

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'


@pytest.mark.timeout(900)
def test_no_server_error_and_no_schema_mismatch(
    pg_server: EmbeddedPostgres, template_db: str
) -> None:
    fuzz(OPERATOR_KEY, pg_server)
