"""The paging rule every listing shares: a page as long as its limit may have a next one,
which starts after its last row; a shorter page is the last. (SQL callers page the same
way: docs/sql-api.md.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

Row = TypeVar("Row")
Key = TypeVar("Key")


def next_key(rows: Sequence[Row], limit: int, key: Callable[[Row], Key]) -> Key | None:
    """`key` of the last row when the page is full (where the next page starts), else None."""
    return key(rows[-1]) if rows and len(rows) >= limit else None


def after_params(after: Sequence[Any] | None, *names: str) -> dict[str, Any]:
    """A page's start key (None: the first page) as the SQL call's `after_*` parameters,
    one name a component: after_params(("u1", 7), "after_user_id", "after_id")."""
    return dict(zip(names, after or (None,) * len(names), strict=True))
