"""`memexdb keys create|list|revoke|allow-keyless`: API keys, managed by the operator.

The command line holds the database credentials, so it acts as the operator (every
agent, admin) through the same SQL functions the admin endpoints call; each action is in
the audit log as operator:cli. Revoking the last live key asks first (or needs
--last-key); a database that has had keys stays closed to requests without one until
`allow-keyless --yes` (memex.allow_keyless).

create, list, revoke and allow-keyless run the key operations of the table
(memexdb.keys.operations) through a Memex client as operator:cli, with no embedding
model loaded (NoEmbedder); only `bootstrap` sends its own SQL (see _bootstrap).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from memexdb.client import Memex
from memexdb.core import sql as core_sql
from memexdb.embedding.none import NoEmbedder
from memexdb.error_models import validated
from memexdb.errors import Conflict, InvalidArgument, SetupError, translate
from memexdb.keys import sql as keys_sql
from memexdb.keys.models import CONFIRM_LAST_KEY, KeyCreate, KeyRef
from memexdb.types import Access

_DURATION_UNITS = {"m": 60, "h": 3600, "d": 86400}


def _expiry(text: str | None) -> datetime | None:
    """--expires-in 90d / 12h / 30m -> a time from now."""
    if text is None:
        return None
    number, unit = text[:-1], text[-1:].lower()
    if unit not in _DURATION_UNITS or not number.isdigit() or int(number) == 0:
        raise InvalidArgument("expires_in", "a duration like 30m, 12h or 90d")
    return datetime.now(UTC) + timedelta(seconds=int(number) * _DURATION_UNITS[unit])


# `keys list --json`: memex.list_keys' columns, in its order
_LISTED = (
    "id",
    "prefix",
    "name",
    "agent_id",
    "user_ids",
    "access",
    "created_at",
    "created_by",
    "expires_at",
    "revoked_at",
    "last_used_at",
)


@contextlib.contextmanager
def _operator(dsn: str) -> Iterator[Memex]:
    """The command line's client: the operator (it holds the database credentials), as
    operator:cli in the audit log; the key operations embed nothing, so no model is
    loaded (NoEmbedder)."""
    with Memex.connect(dsn, embedder=NoEmbedder(), max_size=1) as memex:
        yield memex.as_operator("cli")


def _iso(value: Any) -> Any:
    """json.dumps default: timestamps as ISO 8601, anything else as text."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _confirmed(question: str) -> bool:
    """Asked on a terminal only: a script (stdin not a tty) gets a refusal and says
    --last-key explicitly."""
    if not sys.stdin.isatty():
        return False
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _revoke(args: argparse.Namespace, dsn: str) -> int:
    validated(KeyRef, key=args.key, confirm_last=args.last_key)
    with _operator(dsn) as memex:
        try:
            revoked = memex.revoke_key(args.key, args.last_key)
        except Conflict as exc:
            print(f"memexdb: {exc}", file=sys.stderr)
            if not _confirmed("Revoke it anyway?"):
                print(
                    "memexdb: not revoked (--last-key revokes it without asking)",
                    file=sys.stderr,
                )
                return 2
            revoked = memex.revoke_key(args.key, True)
    print(f"revoked key {revoked.prefix} at {_show(revoked.revoked_at)}")
    return 0


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by this user only, replacing it in one step.

    The scratch file is a fresh one with a random name, created exclusively (O_EXCL,
    and not through a symlink: tempfile.mkstemp), so nothing another local user planted
    in the folder (a file of theirs, a symlink to one) is written through or kept; its
    mode is set on the open descriptor, its content synced, then it is renamed over the
    target (a rename replaces a link, never follows it). A target that is a symlink is
    refused: the token goes where the operator said, or nowhere.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.is_symlink():
        raise SetupError(f"{path} is a symbolic link: not writing the operator's token there")
    fd, scratch = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(scratch)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable, where it can be
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _bootstrap(args: argparse.Namespace, dsn: str) -> int:
    """A first start's operator key: created only on a database that has never had a
    key, its token written to the file before the key is committed (a failed write
    leaves no key behind; a failed commit a token the next start replaces).

    A database with keys is answered before any lock is taken (every start after the
    first); the first starts of several containers are serialized by a table lock on
    memex.api_keys, which no tenant role (nor the service's memex_app) holds a privilege
    to take, waited on for at most BOOTSTRAP_LOCK_TIMEOUT."""
    path = Path(args.token_file)
    # Not through the operation table: the lock is memex.api_keys' table lock, taken as
    # the login role (memex_app, every Session connection's role, may not take it), and
    # the key must be created and its token written inside that one transaction.
    try:
        with psycopg.connect(dsn) as conn, conn.transaction():
            conn.execute(core_sql.ENTER_OPERATOR, {"actor": "cli"})
            rows = conn.cursor(row_factory=dict_row)
            if not rows.execute(keys_sql.LIST_KEYS, {"agent_id": None}).fetchall():
                conn.execute(keys_sql.BOOTSTRAP_LOCK_TIMEOUT)
                conn.execute(keys_sql.BOOTSTRAP_KEY_LOCK)
            if rows.execute(keys_sql.LIST_KEYS, {"agent_id": None}).fetchall():
                print(
                    "memexdb: the database has API keys already: no key created",
                    file=sys.stderr,
                )
                return 0
            request = validated(KeyCreate, access="admin", name=args.name)
            values = {**request.model_dump(), "access": "admin"}
            key = rows.execute(keys_sql.CREATE_KEY, values).fetchone()
            assert key is not None
            _write_private(path, key["token"] + "\n")
    except psycopg.Error as exc:
        raise translate(exc) from exc
    print(
        f"memexdb: created the operator key {key['prefix']} (admin, every agent); its token"
        f" is in {path}, readable by this user only",
        file=sys.stderr,
    )
    return 0


def _allow_keyless(args: argparse.Namespace, dsn: str) -> int:
    if not args.yes:
        print(
            "memexdb: allow-keyless lets a loopback service answer requests without an API "
            "key as admin of every agent and user; run it again with --yes to do that",
            file=sys.stderr,
        )
        return 2
    with _operator(dsn) as memex:
        since = memex.allow_keyless()
    print(
        f"requests without an API key are let in since {_show(since)} (loopback"
        " service only; creating a key closes the database again)"
    )
    return 0


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
        with _operator(dsn) as memex:
            key = memex.create_key(
                args.access,
                agent_id=request.agent_id,
                user_ids=request.user_ids,
                name=request.name,
                expires_at=request.expires_at,
            )
        scope = key.agent_id or "every agent"
        if key.user_ids:
            scope += f" (users {','.join(key.user_ids)})"
        print(key.token)
        print(
            f"created key {key.prefix} ({key.access}, {scope}, expires "
            f"{_show(key.expires_at)}); the token above is shown only now: store it",
            file=sys.stderr,
        )
    elif args.keys_command == "list":
        with _operator(dsn) as memex:
            keys = memex.list_keys(args.agent_id)
        rows = [{column: getattr(key, column) for column in _LISTED} for key in keys]
        if args.json:
            print(json.dumps(rows, default=_iso, indent=2))
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
    elif args.keys_command == "revoke":
        return _revoke(args, dsn)
    elif args.keys_command == "bootstrap":
        return _bootstrap(args, dsn)
    else:
        return _allow_keyless(args, dsn)
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
    create.add_argument(
        "--access", required=True, choices=[a.value for a in Access], help=Access.__doc__
    )
    create.add_argument("--agent-id", help="the agent it may act for (default: every agent)")
    create.add_argument(
        "--user-id", action="append", help="limit it to this user (repeat for several)"
    )
    create.add_argument("--name", default="", help="a label: who holds the key")
    create.add_argument("--expires-in", help="e.g. 30m, 12h, 90d (default: never)")
    listing = commands.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--agent-id", help="only this agent's keys")
    listing.add_argument("--json", action="store_true", help="as JSON")
    revoke = commands.add_parser(
        "revoke",
        help="revoke a key at once",
        description="Revoke a key at once. The last live key is revoked only after a yes "
        "on the terminal, or with --last-key.",
    )
    revoke.add_argument("key", help="the key's prefix (as listed) or id")
    revoke.add_argument("--last-key", action="store_true", help=CONFIRM_LAST_KEY.description or "")
    bootstrap = commands.add_parser(
        "bootstrap",
        help="on a database that never had a key: create the operator's admin key into a file",
        description="A first start's key (the container's entrypoint runs this): on a "
        "database that has never had an API key, create an admin key for every agent and "
        "write its token to --token-file, readable by this user only; on any other database "
        "do nothing. Either way the exit code is 0.",
    )
    bootstrap.add_argument("--token-file", required=True, help="where to write the token")
    bootstrap.add_argument("--name", default="operator", help="the key's label")
    allow = commands.add_parser(
        "allow-keyless",
        help="let requests without a key in again (loopback service, no live key left)",
        description="A database that has had API keys refuses requests without one, also "
        "once its keys are all revoked or expired. This lets them in again: a loopback "
        "service then answers a request without a key as admin of every agent and user "
        "(a service beyond loopback still refuses to start without a live key). Refused "
        "while a live key exists; creating a key closes the database again. Recorded in the "
        "audit log (keys.allow_keyless).",
    )
    allow.add_argument("--yes", action="store_true", help="yes: let them in")
