"""A request field named as a parameter of its SQL call reaches it with no edit of the
caller (memexdb.core.sql_call.SqlCall.arguments), and the field tables of the docs are
the request models' (tools/generate_field_docs.py)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from memexdb.memories import operations as memories
from memexdb.memories.models import ListQuery
from tools import generate_field_docs


class _ListAsOf(ListQuery):
    # memex.list_memories has p_now; the list request does not offer it (yet)
    now: datetime | None = None


async def test_a_new_request_field_reaches_its_sql_parameter(amemex: Any) -> None:
    a, u = "fields", uuid.uuid4().hex
    soon = datetime.now(UTC) + timedelta(hours=1)
    stored = await amemex.store(a, u, "Alice is in Lisbon this week.", expires_at=soon)
    listing = dataclasses.replace(memories.LIST, request=_ListAsOf)
    now = await amemex.call(listing, agent_id=a, user_id=u)
    assert [m.id for m in now.memories] == [stored.id]
    # a later `now` passes the expiry: the memory is not live then
    later = await amemex.call(listing, agent_id=a, user_id=u, now=soon + timedelta(hours=1))
    assert later.memories == []


def test_the_field_tables_are_the_request_models() -> None:
    assert generate_field_docs.main(["--check"]) == 0


def test_a_field_table_lists_every_field_of_its_model() -> None:
    from memexdb.memories.models import MemorySearchRequest

    rows = generate_field_docs.table("search").split("\n")[2:-1]
    assert [row.split("`")[1] for row in rows] == list(MemorySearchRequest.model_fields)
    assert "| `top_k` | integer 1\N{EN DASH}100 | 10 |" in rows[3]
