"""Every operation of memexdb, by domain: what the REST app serves, the MCP server lists,
the clients are generated from, and tests/test_operations.py checks. A domain's are those
its operations module declares, in the order declared (memexdb.operation.declared), but
for memories and agentic, which list theirs in their own order (OPERATIONS)."""

from __future__ import annotations

from typing import Any

from memexdb.agentic import operations as agentic
from memexdb.consolidation import operations as consolidation
from memexdb.embeddings import operations as embeddings
from memexdb.files import operations as files
from memexdb.health import operations as health
from memexdb.keys import operations as keys
from memexdb.memories import operations as memories
from memexdb.operation import Operation, declared

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    *memories.OPERATIONS,
    *declared(vars(files)),
    *agentic.OPERATIONS,
    *declared(vars(embeddings)),
    *declared(vars(keys)),
    *declared(vars(consolidation)),
    *declared(vars(health)),
)
