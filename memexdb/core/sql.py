"""The SQL call text of the core (sql/core/): entering a caller, authorizing, delegating,
rate-limit reservations.

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

# Pay for a store or search before embedding its texts (null: no limit configured); the
# call that follows names the reservation (USE_RESERVATION, local to its transaction) and
# is not counted again.
RESERVE_RATE_LIMIT = """
select memex.reserve_rate_limit(
    p_operation => %(operation)s, p_agent_ids => %(agent_ids)s::text[],
    p_user_ids => %(user_ids)s::text[])
"""
USE_RESERVATION = "select set_config('memex.rate_reservation', %(reservation)s, true)"
# Which operations the operator limits now (a client reserves only for those).
LIMITED_OPERATIONS = """
select array_remove(array[
    case when jsonb_typeof(memex._setting('rate_limit_store_per_minute')) = 'number'
         then 'store' end,
    case when jsonb_typeof(memex._setting('rate_limit_search_per_minute')) = 'number'
         then 'search' end], null)
"""

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
# its embedder against it on connect.
EMBEDDING_DIMS = "select memex.embedding_dims()"
