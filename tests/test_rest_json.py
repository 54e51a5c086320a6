"""The REST answers' JSON (memexdb.rest.parsing.json_of): encoded by pydantic itself, the
same document as model_dump(mode="json"), as application/json."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from pydantic import BaseModel

from memexdb.rest.parsing import json_of


class _Hit(BaseModel):
    id: uuid.UUID
    content: str
    score: float
    created_at: datetime
    metadata: dict[str, object]
    tags: list[str] | None = None


class _Answer(BaseModel):
    hits: list[_Hit]
    total: int


def test_json_of_writes_the_model_as_json() -> None:
    answer = _Answer(
        hits=[
            _Hit(
                id=uuid.UUID(int=7),
                content='Zoë\'s café, naïve "quotes" and a line\nbreak 🚲',
                score=score,
                created_at=datetime(2026, 12, 6, 16, 5, 30, 123456, tzinfo=UTC),
                metadata={"nested": {"a": [1, 2.5, None, True]}, "text": "ü"},
            )
            for score in (0.1 + 0.2, 1e-07, 123456789.125, 1e16, -0.0, 0.7315841913223267)
        ],
        total=6,
    )
    response = json_of(answer, 201)
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    body = bytes(response.body)
    assert json.loads(body) == answer.model_dump(mode="json")
    assert "Zoë".encode() in body  # UTF-8, not \\u escapes, as before
