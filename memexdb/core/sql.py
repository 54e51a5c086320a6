"""The SQL text of the core (sql/core/ and sql/security/): entering a caller, authorizing,
delegating, rate-limit reservations.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/core/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.core.calls import *  # noqa: F403

# Pay for a store or search before embedding its texts (RESERVE_RATE_LIMIT, generated;
# null: no limit configured); the call that follows names the reservation (a setting local
# to its transaction, not a function) and is not counted again.
USE_RESERVATION = "select set_config('memex.rate_reservation', %(reservation)s, true)"
# Which operations the operator limits now (a client reserves only for those).
LIMITED_OPERATIONS = """
select array_remove(array[
    case when jsonb_typeof(memex._setting('rate_limit_store_per_minute')) = 'number'
         then 'store' end,
    case when jsonb_typeof(memex._setting('rate_limit_search_per_minute')) = 'number'
         then 'search' end], null)
"""

# The private functions (memex._*) the service enters and authorizes its callers with:
# not in the public SQL API, so not generated.
# The caller of the transaction (memexdb.client.Credentials).
ENTER = "select memex._enter(p_token => %(key)s, p_require_key => %(require_key)s)"
ENTER_OPERATOR = "select memex._enter_operator(p_actor => %(actor)s)"
# After memex._enter, before a batch's statement: its budget grows with its size
BATCH_BUDGET = "select memex._batch_budget(p_items => %(items)s)"
# true when this connection acts as memex_app and so must enter a caller per transaction
ENTERS_CALLER = "select current_user = 'memex_app'"

PING = "select 1"
# After memex._enter: raise 42501 unless the caller is an admin of its whole scope (every
# agent, or its agent and all of its users), what memex.list_keys asks of its callers.
ADMIN_CALLER = "select memex._authorize(memex._caller() ->> 'agent', null, 'admin')"

# Raise 28000/42501 unless the caller may act on the tenant with that access.
AUTHORIZE = "select memex._authorize(%(agent_id)s, %(user_id)s, %(need)s)"
DELEGATE = "select memex._delegate(p_actor => %(delegate)s)"

# The vector size of the schema (sql/embeddings/005_embedding_dims.sql): the session checks
# its embedder against it on connect. Written here as memexdb/embeddings/calls.py has it:
# the session is below the domains and may not import them (tests/test_layers.py).
EMBEDDING_DIMS = "select memex.embedding_dims()"
