"""`memexdb keys create|list|revoke`: API keys, managed by the operator.

The command line holds the database credentials, so it acts as the operator (every
agent, admin) through the same SQL functions the admin endpoints call; each action is in
the audit log as operator:cli.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from memexdb import queries
from memexdb.errors import InvalidArgument, translate
from memexdb.params import KeyCreate, validated

_DURATION_UNITS = {"m": 60, "h": 3600, "d": 86400}


def _expiry(text: str | None) -> datetime | None:
    """--expires-in 90d / 12h / 30m -> a time from now."""
    if text is None:
        return None
    number, unit = text[:-1], text[-1:].lower()
    if unit not in _DURATION_UNITS or not number.isdigit() or int(number) == 0:
        raise InvalidArgument("expires_in", "a duration like 30m, 12h or 90d")
    return datetime.now(UTC) + timedelta(seconds=int(number) * _DURATION_UNITS[unit])


def _call(dsn: str, sql: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        with psycopg.connect(dsn) as conn, conn.transaction():
            conn.execute(queries.ENTER_OPERATOR, {"actor": "cli"})
            return conn.cursor(row_factory=dict_row).execute(sql, values).fetchall()
    except psycopg.Error as exc:
        raise translate(exc) from exc


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def run(args: argparse.Namespace, dsn: str) -> int:
    if args.keys_command == "create":
        request = validated(
            KeyCreate,
            access=args.access,
            agent_id=args.agent_id,
            user_ids=args.user_id or None,
            name=args.name,
            expires_at=_expiry(args.expires_in),
        )
        (key,) = _call(dsn, queries.CREATE_KEY, {**request.model_dump(), "access": args.access})
        scope = key["agent_id"] or "every agent"
        if key["user_ids"]:
            scope += f" (users {','.join(key['user_ids'])})"
        print(key["token"])
        print(
            f"created key {key['prefix']} ({key['access']}, {scope}, expires "
            f"{_show(key['expires_at'])}); the token above is shown only now: store it",
            file=sys.stderr,
        )
    elif args.keys_command == "list":
        rows = _call(dsn, queries.LIST_KEYS, {"agent_id": args.agent_id})
        if args.json:
            print(json.dumps(rows, default=str, indent=2))
            return 0
        columns = (
            "prefix",
            "access",
            "agent_id",
            "user_ids",
            "name",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
        )
        print("\t".join(columns))
        for row in rows:
            print("\t".join(_show(row[c]) for c in columns))
    else:
        (revoked,) = _call(dsn, queries.REVOKE_KEY, {"key": args.key})
        print(f"revoked key {revoked['prefix']} at {_show(revoked['revoked_at'])}")
    return 0


def add_parser(sub: Any) -> None:
    keys = sub.add_parser(
        "keys",
        help="create, list and revoke API keys",
        description="Manage API keys (as the operator: this command holds the database "
        "credentials). Once a database has a live key, every request needs one.",
    )
    commands = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = commands.add_parser(
        "create",
        help="create a key and print its token (once)",
        description="Create an API key and print its token on stdout, the only time it is "
        "shown. Example: memexdb keys create --access write --agent-id assistant",
    )
    create.add_argument("--access", required=True, choices=["read", "write", "admin"])
    create.add_argument("--agent-id", help="the agent it may act for (default: every agent)")
    create.add_argument(
        "--user-id", action="append", help="limit it to this user (repeat for several)"
    )
    create.add_argument("--name", default="", help="a label: who holds the key")
    create.add_argument("--expires-in", help="e.g. 30m, 12h, 90d (default: never)")
    listing = commands.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--agent-id", help="only this agent's keys")
    listing.add_argument("--json", action="store_true", help="as JSON")
    revoke = commands.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key", help="the key's prefix (as listed) or id")
