"""A connection to memexdb as one caller: the pool, the embedder, the credentials, and
how one statement runs as that caller (`fetch`: memex._enter and the call in one
transaction and one round trip), in a caller's transaction, and after reserving rate-limit budget.

`Session` knows no operation: the operations (memexdb.memories, memexdb.files, ...) are
functions of a Session and a validated request, and AsyncMemex (memexdb.client) is a
Session with one typed method per operation.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from time import monotonic
from typing import Any, NamedTuple, Self
from uuid import UUID

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import class_row, scalar_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memexdb import metrics
from memexdb.core import sql as core_sql
from memexdb.core.sql_call import SqlCall
from memexdb.db import async_pool
from memexdb.embedding import BatchingEmbedder, Embedder, build_embedder
from memexdb.embedding.none import NoEmbedder
from memexdb.errors import (
    LOST_CONFLICTS,
    DatabaseUnavailable,
    RateLimited,
    SetupError,
    Unauthenticated,
    translate,
)
from memexdb.llm import ChatModel
from memexdb.pipeline import holding
from memexdb.replicas import CONNECT_TIMEOUT_S as REPLICA_CONNECT_S
from memexdb.replicas import (
    PRIMARY_LSN,
    REPLICA_FAILURES,
    REQUIRED_LSN,
    ReplicaRouter,
    lsn,
    token,
)

_OPEN_TRANSACTION = (TransactionStatus.INTRANS, TransactionStatus.INERROR)

# Vectors of recently embedded texts kept per client (~1.5 KiB each at 384-d: ~6 MiB):
# agents repeat queries and contents (bench/RESULTS.md, "Load test").
EMBEDDING_CACHE_ENTRIES = 4096
# A client reserves rate-limit budget before embedding (memex.reserve_rate_limit) only
# for operations the operator limits; which those are is read at most this often. The
# reservation is a round trip (~0.4 ms, a third of a cached search), not worth paying
# when nothing is limited. A limit set meanwhile is still enforced by SQL in the call
# itself; for at most this long it is enforced after the embedding rather than before.
LIMITS_TRUSTED_FOR_S = 2.0
# A call that loses a deadlock or a serialization conflict (errors.LOST_CONFLICTS) to a concurrent
# one was rolled back whole; outside a caller's transaction it is run again, at most this
# many times in all, then answered Busy. Inside one it is answered Busy at once: only the
# caller can re-run its transaction.
CONFLICT_ATTEMPTS = 3


class _Statement(NamedTuple):
    """One statement of `Session.fetch`, as every way of running it takes it."""

    factory: Any  # the row factory
    sql: str
    values: dict[str, Any] | None
    entering: bool  # the caller's entry (memex._enter) before it, in its transaction
    reservation: UUID | None  # the rate-limit budget already paid for it
    batch: int | None  # the memories it writes (memex._batch_budget)


@dataclass
class _Limits:
    """What the clients of one pool last read of the operator's rate limits."""

    read_at: float = float("-inf")
    operations: frozenset[str] = frozenset()


def jsonb_or_none(value: dict[str, Any] | None) -> Jsonb | None:
    return Jsonb(value) if value is not None else None


def _check_dims(dims: int | None, embedder: Embedder) -> None:
    if dims is None:
        raise SetupError("the database is not migrated: run `memexdb migrate`")
    if dims != embedder.dim:
        raise SetupError(
            f"embedder {embedder.model_id} makes {embedder.dim}-d vectors but "
            f"memex.memories.embedding is halfvec({dims})"
        )


@dataclass(frozen=True, slots=True)
class Credentials:
    """Who a client acts as. The service's connections are memex_app: before each call,
    in the same transaction, memex._enter sets the caller from `key` (or refuses it), or
    memex._enter_operator makes it the operator (`operator` names who, e.g. "cli"); SQL
    then enforces the caller's scope (memex._authorize and row-level security). A
    connection as a role bound with memex.bind_sql_role enters nothing: Postgres knows
    its tenant from the login."""

    key: str | None = None
    # refuse calls without a key even while the database has none (a service that
    # listens beyond loopback)
    require_key: bool = False
    operator: str | None = None
    # one of memexdb's own agents writing for this caller (memex._delegate)
    delegate: str | None = None
    # what a 401 tells the caller to do: None keeps SQL's remedy (send Authorization:
    # Bearer), right when the calls come from HTTP requests (the service)
    remedy: str | None = None


# What a process that calls the database itself (no HTTP) does about a 401.
IN_PROCESS_REMEDY = (
    "pass key=<API key> to Memex.connect / AsyncMemex.connect (or use .with_key(key)), or, "
    "in a process that holds the database credentials, act as the operator with "
    ".as_operator(name)"
)
# What the user of `memexdb mcp` (stdio: no HTTP, no Python) does about a 401.
STDIO_REMEDY = "set MEMEX_API_KEY=<API key> in the environment of the `memexdb mcp` process"
_HTTP_REMEDY = re.compile(r":? ?send Authorization: Bearer <key>")


def _in_process(error: BaseException, credentials: Credentials) -> BaseException:
    """A 401 says what to do where the caller is (Python, stdio), not in HTTP."""
    if credentials.remedy is None or not isinstance(error, Unauthenticated):
        return error
    message = _HTTP_REMEDY.sub("", str(error)).rstrip(".")
    return Unauthenticated(f"{message}: {credentials.remedy}")


# At most this many syncs read what a failed pipeline still holds (see _drain); a
# pipeline of `fetch` holds at most seven statements.
_DRAIN_SYNCS = 8


async def _drain(pipeline: psycopg.AsyncPipeline) -> None:
    """Read what a pipeline holds after one of its statements failed: the server skipped
    the statements that followed it and answers each with "pipeline
    aborted". psycopg raises the failure as soon as its result arrives, possibly while
    later results are still on the way; left unread, leaving the pipeline reads them and,
    with the failure already raised, logs a warning ("error ignored terminating
    AsyncPipeline ...: pipeline aborted") for what is no news. Each sync raises the first
    error of what it reads; once one reads no error, nothing is left."""
    for _ in range(_DRAIN_SYNCS):
        try:
            await pipeline.sync()
        except psycopg.Error:
            continue
        return


async def _forget_prepared(conn: psycopg.AsyncConnection[Any]) -> None:
    """After a pipeline whose implicit transaction failed: the statements psycopg prepared
    in it (a statement is prepared on its sixth run) went with the transaction, but psycopg
    forgets its prepared statements only on a ROLLBACK of its own, which an implicit
    transaction never gets; left alone, the connection's next run of one fails ("prepared
    statement _pg3_N does not exist"). Forget them all and DEALLOCATE ALL, as psycopg's
    rollback() does (failures only: one round trip more)."""
    async with conn.lock:
        conn._prepared.clear()
        await conn.wait(conn._prepared.maintain_gen(conn))


class Session:
    """One caller's way into the database (`await AsyncMemex.connect(dsn)` opens one).

    `with_key(key)` and `as_operator(name)` return sessions of the same pool and embedder
    that act as someone else (see Credentials)."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        embedder: BatchingEmbedder,
        *,
        owns_embedder: bool = False,
        credentials: Credentials = Credentials(),
        enters: bool = True,
        owns_pool: bool = True,
        llm: ChatModel | None = None,
        owns_llm: bool = False,
        limits: _Limits | None = None,
        scheduled: frozenset[str] = frozenset(),
        router: ReplicaRouter | None = None,
    ) -> None:
        self.pool = pool
        # the read replicas (MEMEX_READ_DATABASE_URLS) and what routes a read to one
        self.router = router
        # set by `reading(operation)`: this session's calls are that read operation's,
        # which a replica may answer (memexdb.replicas)
        self._reads: str | None = None
        # the consolidation jobs this process's runtime offers to run ("condense",
        # "dream"; memexdb.runtime.consolidation), which dream_config reports; none for a
        # client outside a service
        self.scheduled = scheduled
        # the optional chat model of memorize and search_passages' answers (memexdb.llm)
        self.llm = llm
        self._owns_llm = owns_llm
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.credentials = credentials
        self._owns_embedder = owns_embedder
        self._owns_pool = owns_pool
        self._enters = enters
        # set inside `transaction()`: every call runs on this connection, in its transaction
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._limits = limits or _Limits()

    def _acting_as(self, credentials: Credentials) -> Self:
        return type(self)(
            self.pool,
            self.embedder,
            credentials=credentials,
            enters=self._enters,
            owns_pool=False,
            llm=self.llm,
            limits=self._limits,
            scheduled=self.scheduled,
            router=self.router,
        )

    def reading(self, operation: str) -> Self:
        """This client running read operation `operation` (Operation.replica), whose
        calls a read replica may answer (memexdb.replicas decides)."""
        if self.router is None or self._conn is not None:
            return self
        session = self._acting_as(self.credentials)
        session._reads = operation
        return session

    def _caller(self) -> str:
        """Who the calls act as, for read-your-writes and last_used_at (memexdb.replicas)."""
        who = self.credentials
        if who.operator is not None:
            return f"operator:{who.operator}"
        return f"key:{who.key}"

    def with_key(self, key: str | None) -> Self:
        """This client acting with API key `key` (None: no key, which an open loopback
        database without keys accepts)."""
        return self._acting_as(replace(self.credentials, key=key, operator=None))

    def as_operator(self, name: str) -> Self:
        """This client acting as the operator (every tenant, admin): the command line and
        scheduled jobs, which hold the database credentials themselves."""
        return self._acting_as(replace(self.credentials, key=None, operator=name))

    def delegated(self, actor: str) -> Self:
        """This client's caller, writing as one of memexdb's own agents (`memorize-agent`,
        `dream-agent`): same scope and access; revisions, access-log entries and memories
        record the agent as actor and the caller as on_behalf_of (memex._delegate)."""
        return self._acting_as(replace(self.credentials, delegate=actor))

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        embedder: Embedder | BatchingEmbedder | None = None,
        min_size: int = 1,
        max_size: int = 10,
        key: str | None = None,
        require_key: bool = False,
        llm: ChatModel | None = None,
        open_timeout: float = 30.0,
        remedy: str | None = IN_PROCESS_REMEDY,
        replicas: Sequence[str] = (),
        replica_max_lag: float = 5.0,
        writes_table: str | Path | None = None,
    ) -> Self:
        """Open a pool on a migrated database and check the embedder fits its schema.

        `key` is the API key calls are made with; `require_key` refuses calls without
        one even while the database has no keys. `llm` (the client closes it) is the chat
        model memorize and search_passages' answers use; None: their LLM-free forms.
        DatabaseUnavailable when no connection opens within `open_timeout` seconds.
        `remedy`: what a refused call's error tells the caller to do (None: send an
        Authorization header, for a service's HTTP callers). `replicas`: DSNs of read
        replicas of `dsn` that read operations may use (memexdb.replicas), skipped
        while down or more than `replica_max_lag` seconds behind; `writes_table`: the
        file of the callers' last writes shared with other processes of the service
        (memexdb.replicas.WriteTable; None: this process's own)."""
        if embedder is None:
            embedder = build_embedder("minilm")
        owns = not isinstance(embedder, BatchingEmbedder)
        batching = (
            embedder
            if isinstance(embedder, BatchingEmbedder)
            else BatchingEmbedder(embedder, cache_entries=EMBEDDING_CACHE_ENTRIES)
        )
        pool = async_pool(dsn, min_size=min_size, max_size=max_size)
        try:
            try:
                await pool.open(wait=True, timeout=open_timeout)
            except PoolTimeout as exc:
                # not one connection could be made: the database is down (and waited
                # for at startup), not a busy pool (translate's reading of a PoolTimeout)
                raise DatabaseUnavailable("database is unavailable") from exc
            async with pool.connection() as conn:
                cur = conn.cursor(row_factory=scalar_row)
                try:
                    dims = await (await cur.execute(core_sql.EMBEDDING_DIMS)).fetchone()
                except psycopg.errors.UndefinedFunction:
                    dims = None
                enters = bool(await (await cur.execute(core_sql.ENTERS_CALLER)).fetchone())
            if isinstance(batching.embedder, NoEmbedder) and dims is not None:
                batching.embedder.dim = dims  # a client that embeds nothing fits any schema
            _check_dims(dims, batching.embedder)
            router = None
            if replicas:
                router = await ReplicaRouter.open(
                    dsn,
                    replicas,
                    max_lag_s=replica_max_lag,
                    pool_size=max_size,
                    writes_table=writes_table,
                )
        except BaseException as exc:
            await pool.close()
            if owns:
                await batching.aclose()
            raise translate(exc) from exc
        return cls(
            pool,
            batching,
            owns_embedder=owns,
            credentials=Credentials(key=key, require_key=require_key, remedy=remedy),
            enters=enters,
            llm=llm,
            owns_llm=llm is not None,
            router=router,
        )

    async def aclose(self) -> None:
        if self._owns_pool:
            if self.router is not None:
                await self.router.aclose()
            await self.pool.close()
        if self._owns_embedder:
            await self.embedder.aclose()
        if self._owns_llm and self.llm is not None:
            await self.llm.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def fetch(
        self,
        row_type: type[Any] | None,
        sql: str,
        values: dict[str, Any] | None = None,
        *,
        enter: bool = True,
        reservation: UUID | None = None,
        batch: int | None = None,
        primary: bool = False,
    ) -> list[Any]:
        """Run one statement as this client's caller. `reservation` (from `reserve`)
        names the rate-limit budget already paid for it, so it is not counted again.
        `batch` (the number of memories the statement writes) widens the request's
        statement and lock timeouts for it (memex._batch_budget). A generated call
        (SqlCall) names only the optional parameters `values` has keys for: the others
        take their SQL defaults. `primary`: never on a read replica."""
        if isinstance(sql, SqlCall):
            sql = sql.given(values)
        factory = class_row(row_type) if row_type else scalar_row
        if self._conn is not None:
            batch = batch if self._enters else None
            return await self._fetch_in_transaction(
                self._conn, _Statement(factory, sql, values, False, reservation, batch)
            )
        statement = _Statement(factory, sql, values, enter and self._enters, reservation, batch)
        if self.router is None:
            return await self._fetch_on(self.pool, statement)
        router, caller = self.router, self._caller()
        if self._reads is not None and not primary and reservation is None:
            if await self._limited(self._reads):
                replica = None  # a limited call counts itself: it writes
            else:
                replica = router.pick(
                    caller, entering=statement.entering, min_lsn=REQUIRED_LSN.get()
                )
            if replica is not None:
                try:
                    rows = await self._fetch_once_on(replica.pool, statement)
                except REPLICA_FAILURES as exc:
                    router.failed(replica, exc)  # the primary answers instead
                except Exception as exc:
                    raise _in_process(translate(exc), self.credentials) from exc
                else:
                    replica.served += 1
                    return rows
        try:
            return await self._fetch_on(self.pool, statement)
        finally:
            router.used_primary(caller, wrote=self._reads is None, entered=statement.entering)

    async def write_position(self) -> str | None:
        """The session token of this client's writes so far (None without read
        replicas): the primary's WAL write position now, at or past every commit already
        acknowledged (memexdb.replicas.PRIMARY_LSN). A read whose REQUIRED_LSN is set to
        it goes to a replica only once that replica has replayed it."""
        if self.router is None:
            return None
        try:
            async with self.pool.connection() as conn:
                row = await (await conn.execute(PRIMARY_LSN)).fetchone()
        except Exception as exc:
            raise _in_process(translate(exc), self.credentials) from exc
        assert row is not None
        return token(lsn(row[0]))

    async def _limited(self, operation: str) -> bool:
        """Whether the operator rate-limits `operation` (read at most every
        LIMITS_TRUSTED_FOR_S, on the primary)."""
        if monotonic() - self._limits.read_at > LIMITS_TRUSTED_FOR_S:
            limited: list[list[str]] = await self.fetch(
                None, core_sql.LIMITED_OPERATIONS, enter=False, primary=True
            )
            self._limits.operations = frozenset(limited[0])
            self._limits.read_at = monotonic()
        return operation in self._limits.operations

    async def _fetch_once_on(self, pool: AsyncConnectionPool, statement: _Statement) -> list[Any]:
        """One attempt on a replica's pool, its errors as psycopg's (memexdb.replicas
        reads them: which ones go to the primary)."""
        async with pool.connection(timeout=REPLICA_CONNECT_S) as conn:
            with metrics.sql_call(statement.sql):
                return await self._fetch_once(conn, statement)

    async def _fetch_on(self, pool: AsyncConnectionPool, statement: _Statement) -> list[Any]:
        try:
            async with pool.connection() as conn:
                with metrics.sql_call(statement.sql):
                    attempt = 1
                    while True:
                        try:
                            return await self._fetch_once(conn, statement)
                        except LOST_CONFLICTS:
                            # the whole transaction was rolled back (the winner goes on):
                            # running it again applies it once
                            if attempt == CONFLICT_ATTEMPTS:
                                raise
                        await asyncio.sleep(0.01 * attempt)
                        attempt += 1
        except Exception as exc:
            error = _in_process(translate(exc), self.credentials)
            if isinstance(error, RateLimited):
                metrics.rate_limited(error.operation)
            raise error from exc

    async def _fetch_once(
        self, conn: psycopg.AsyncConnection[Any], statement: _Statement
    ) -> list[Any]:
        """One attempt of `fetch` outside a caller's transaction: the statement alone
        (autocommit), or the caller, (a batch's budget,) and the call in one pipeline,
        whose implicit transaction commits at its Sync."""
        _, sql, values, entering, reservation, batch = statement
        cur = conn.cursor(row_factory=statement.factory)
        if not entering and reservation is None:
            return await (await cur.execute(sql, values)).fetchall()
        try:
            # The caller and the call go out together: one round trip, one transaction
            # (the pipeline's implicit one: the statements up to its Sync commit together
            # or not at all; conn.transaction() would add a round trip). Each statement
            # starts its own statement_timeout (memex._enter sets it for the call), and
            # what _enter sets with set_config(..., true) ends with the transaction, as
            # with an explicit BEGIN and COMMIT, which cost two statements more each way
            # (bench/RESULTS.md, "Per-request cost"). All of it goes out in one send, at
            # the Sync (memexdb.pipeline).
            holding(conn)
            async with conn.pipeline() as pipeline:
                try:
                    if entering:
                        await conn.execute(*self._entry())
                    if entering and self.credentials.delegate is not None:
                        await conn.execute(
                            core_sql.DELEGATE, {"delegate": self.credentials.delegate}
                        )
                    if entering and batch is not None:
                        await conn.execute(core_sql.BATCH_BUDGET, {"items": batch})
                    if reservation is not None:
                        await conn.execute(
                            core_sql.USE_RESERVATION, {"reservation": str(reservation)}
                        )
                    await cur.execute(sql, values)
                except psycopg.Error:
                    await _drain(pipeline)
                    raise
        except BaseException as exc:
            # an error skips the rest of the pipeline and rolls its transaction back
            if conn.info.transaction_status in _OPEN_TRANSACTION:
                await conn.rollback()
            elif isinstance(exc, psycopg.Error) and not conn.broken:
                await _forget_prepared(conn)
            failed = exc.__context__
            if isinstance(exc, psycopg.errors.PipelineAborted) and isinstance(
                failed, psycopg.Error
            ):
                # leaving the pipeline raised the failure, then, reading the results after
                # it, "pipeline aborted" over it: the failure is the answer (a NotFound,
                # not a 503)
                raise failed from None
            raise
        return await cur.fetchall()

    @staticmethod
    async def _fetch_in_transaction(
        conn: psycopg.AsyncConnection[Any], statement: _Statement
    ) -> list[Any]:
        factory, sql, values, _, reservation, batch = statement
        try:
            # a savepoint: a call that fails (a Conflict that is retried) leaves the
            # transaction's other work in place
            async with conn.transaction():
                with metrics.sql_call(sql):
                    if batch is not None:  # (for the rest of the caller's transaction)
                        await conn.execute(core_sql.BATCH_BUDGET, {"items": batch})
                    if reservation is not None:
                        await conn.execute(
                            core_sql.USE_RESERVATION, {"reservation": str(reservation)}
                        )
                    cur = conn.cursor(row_factory=factory)
                    return await (await cur.execute(sql, values)).fetchall()
        except Exception as exc:
            error = translate(exc)
            if isinstance(error, RateLimited):
                metrics.rate_limited(error.operation)
            raise error from exc

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Self]:
        """This client, with every call it makes inside the block in one database
        transaction: all of them applied when the block ends, none if it raises (e.g.
        memorize's memory and its log entry). Embedding still happens before each call."""
        if self._conn is not None:
            yield self
            return
        async with self.connection() as conn:
            bound = self._acting_as(self.credentials)
            bound._conn = conn
            yield bound

    async def reserve(self, operation: str, tenants: Sequence[tuple[str, str]]) -> UUID | None:
        """Pay for a store or search of these tenants' items (one per memory) before
        embedding anything (memex.reserve_rate_limit): over the limit this raises
        RateLimited and nothing is embedded. None when the operation has no limit."""
        if not await self._limited(operation):
            return None
        rows: list[UUID | None] = await self.fetch(
            None,
            core_sql.RESERVE_RATE_LIMIT,
            {
                "operation": operation,
                "agent_ids": [agent for agent, _ in tenants],
                "user_ids": [user for _, user in tenants],
            },
            primary=True,
        )
        return rows[0]

    def _entry(self) -> tuple[str, dict[str, Any]]:
        who = self.credentials
        if who.operator is not None:
            return core_sql.ENTER_OPERATOR, {"actor": who.operator}
        return core_sql.ENTER, {"key": who.key, "require_key": who.require_key}

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection in a transaction whose caller is this client's, for work that
        spans several statements (the embed queue's batch: its entries stay locked until
        the end). Commits when the block ends, rolls back if it raises; database errors
        come out as memexdb's."""
        try:
            async with self.pool.connection() as conn, conn.transaction():
                if self._enters:
                    await conn.execute(*self._entry())
                    if self.credentials.delegate is not None:
                        await conn.execute(
                            core_sql.DELEGATE, {"delegate": self.credentials.delegate}
                        )
                yield conn
        except Exception as exc:
            translated = _in_process(translate(exc), self.credentials)
            if translated is exc:
                raise
            raise translated from exc
        finally:
            if self.router is not None:  # whatever it wrote, the caller's reads see
                self.router.used_primary(self._caller(), wrote=True, entered=self._enters)
