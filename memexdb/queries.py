"""Every SQL statement the Python package sends: calls of public memex.* functions with
named arguments, so the SQL API (sql/*.sql) is the only place with logic."""

from __future__ import annotations

# Results are read by column name (psycopg class_row) into the dataclasses of
# memexdb.types, which mirror the SQL result types: `select *` lists no column here.

STORE = """
select * from memex.store(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_content => %(content)s,
    p_embedding => %(embedding)s, p_embedding_model => %(embedding_model)s,
    p_memory_type => %(memory_type)s::text::memex.memory_type,
    p_importance => %(importance)s, p_metadata => %(metadata)s,
    p_expires_at => %(expires_at)s, p_created_at => %(created_at)s, p_id => %(id)s)
"""

STORE_MANY = """
select * from memex.store_many(
    p_agent_ids => %(agent_ids)s, p_user_ids => %(user_ids)s, p_contents => %(contents)s,
    p_embeddings => %(embeddings)s, p_embedding_model => %(embedding_model)s,
    p_memory_types => %(memory_types)s::text[]::memex.memory_type[],
    p_importances => %(importances)s, p_metadata => %(metadata)s::jsonb[],
    p_expires_at => %(expires_at)s::timestamptz[], p_created_at => %(created_at)s::timestamptz[],
    p_ids => %(ids)s::uuid[])
"""

SEARCH = """
select * from memex.search(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
    p_query_embedding => %(query_embedding)s, p_top_k => %(top_k)s, p_alpha => %(alpha)s,
    p_half_life_days => %(half_life_days)s,
    p_memory_types => %(memory_types)s::text[]::memex.memory_type[],
    p_query_text => %(query_text)s, p_mode => %(mode)s,
    p_embedding_model => %(embedding_model)s, p_now => %(now)s,
    p_context_weight => %(context_weight)s, p_metadata => %(metadata)s,
    p_include_archived => %(include_archived)s)
"""

FORGET = """
select * from memex.forget(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s)
"""

COUNT = """
select memex.count(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
                   p_memory_type => %(memory_type)s::text::memex.memory_type,
                   p_embedding_model => %(embedding_model)s, p_metadata => %(metadata)s)
"""

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

MAINTENANCE = "select * from memex.maintenance()"

# --- The embed queue (memexdb.runtime.embed_worker) and `memexdb reembed` ---

EMBED_QUEUE_TAKE = "select * from memex.embed_queue_take()"
SET_EMBEDDINGS = """
select memex.set_embeddings(
    p_ids => %(ids)s::uuid[], p_contents => %(contents)s::text[],
    p_embeddings => %(embeddings)s::vector[], p_embedding_model => %(embedding_model)s)
"""
EMBED_QUEUE_FAILED = """
select memex.embed_queue_failed(p_ids => %(ids)s::uuid[], p_errors => %(errors)s::text[])
"""
EMBED_QUEUE_DEPTH = "select * from memex.embed_queue_depth()"
STALE_EMBEDDINGS = """
select * from memex.stale_embeddings(
    p_embedding_model => %(embedding_model)s, p_after => %(after)s, p_limit => %(limit)s)
"""
EMBEDDING_MODELS = "select embedding_model, memories from memex.embedding_models()"
AUTHORIZE_EMBEDDING = "select memex._authorize_embedding()"

# The caller of the transaction (memexdb.client.Credentials).
ENTER = "select memex._enter(p_token => %(key)s, p_require_key => %(require_key)s)"
ENTER_OPERATOR = "select memex._enter_operator(p_actor => %(actor)s)"
# After memex._enter, before a batch's statement: its budget grows with its size
BATCH_BUDGET = "select memex._batch_budget(p_items => %(items)s)"
# true when this connection acts as memex_app and so must enter a caller per transaction
ENTERS_CALLER = "select current_user = 'memex_app'"

EMBEDDING_DIMS = "select memex.embedding_dims()"

SET_SETTING = "select memex.set_setting(p_name => %(name)s, p_value => %(value)s)"

PING = "select 1"
# After memex._enter: raise 42501 unless the caller is an admin of its whole scope (every
# agent, or its agent and all of its users), what memex.list_keys asks of its callers.
ADMIN_CALLER = "select memex._authorize(memex._caller() ->> 'agent', null, 'admin')"

# GET /metrics (operator) and GET /health/ready (no caller needed)
METRICS_SNAPSHOT = "select metric, kind, status, value from memex.metrics_snapshot()"
SCHEMA_STATE = "select revision, migrating from memex.schema_state()"
# who waits for a lock on a memex table, and behind whom (readiness)
LOCK_WAITS = (
    "select pid, role, relation, mode, waiting_seconds, blocked_by, blocker_roles"
    " from memex.lock_waits()"
)

# the admin console's overview (operator)
OVERVIEW_STATS = """
select metric, agent_id, user_id, day, kind, value
from memex.overview_stats(p_days => %(days)s, p_tenants => %(tenants)s)
"""

# `memexdb status`
SERVER_VERSION = "show server_version"
SCHEMA_REVISION = (
    "select version_num from memex.alembic_version"
    " where to_regclass('memex.alembic_version') is not null"
)
TENANT_STATS = "select tenants, memories, indexed, waiting from memex.tenant_stats()"

CREATE_KEY = """
select * from memex.create_key(
    p_access => %(access)s, p_agent_id => %(agent_id)s, p_user_ids => %(user_ids)s,
    p_name => %(name)s, p_expires_at => %(expires_at)s)
"""

LIST_KEYS = "select * from memex.list_keys(p_agent_id => %(agent_id)s)"

REVOKE_KEY = "select * from memex.revoke_key(p_key => %(key)s, p_confirm_last => %(confirm_last)s)"

# Requests without a key in again, on a database without a live key (operator only).
ALLOW_KEYLESS = "select memex.allow_keyless()"

AUDIT_EVENTS = "select * from memex.audit_events(p_limit => %(limit)s, p_before => %(before)s)"

# Serializes the first starts of several containers on one database (`memexdb keys
# bootstrap`): a lock on a table no tenant role (nor memex_app) may lock, as an advisory
# lock any role may take on any key would be; self-conflicting, so one bootstrap at a
# time, and bounded: a lock not granted within 10 s fails the bootstrap (55P03).
BOOTSTRAP_LOCK_TIMEOUT = "set local lock_timeout = '10s'"
BOOTSTRAP_KEY_LOCK = "lock table memex.api_keys in share row exclusive mode"

# Whether the database has a key that works (memexdb serve beyond loopback needs one).
LIVE_KEYS = "select memex.has_live_keys()"

GET_MEMORY = """
select * from memex.get_memory(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
                               p_id => %(id)s)
"""

LIST_MEMORIES = """
select * from memex.list_memories(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_limit => %(limit)s,
    p_cursor_created_at => %(cursor_created_at)s, p_cursor_id => %(cursor_id)s,
    p_memory_type => %(memory_type)s::text::memex.memory_type,
    p_created_after => %(created_after)s, p_created_before => %(created_before)s,
    p_metadata => %(metadata)s, p_include_archived => %(include_archived)s)
"""

UPDATE_MEMORY = """
select * from memex.update_memory(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s,
    p_content => %(content)s, p_embedding => %(embedding)s,
    p_embedding_model => %(embedding_model)s, p_importance => %(importance)s,
    p_metadata => %(metadata)s, p_memory_type => %(memory_type)s::text::memex.memory_type,
    p_expires_at => %(expires_at)s, p_clear_expires_at => %(clear_expires_at)s)
"""

ERASE_USER = """
select table_name, deleted
from memex.erase_user(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_confirm => %(confirm)s
)
"""

EXPORT_MEMORIES = """
select * from memex.export_memories(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
    p_include_embeddings => %(embeddings)s, p_after_user_id => %(after_user_id)s,
    p_after_created_at => %(after_created_at)s, p_after_id => %(after_id)s,
    p_limit => %(limit)s)
"""

IMPORT_MEMORIES = """
select * from memex.import_memories(
    p_ids => %(ids)s::uuid[], p_agent_ids => %(agent_ids)s, p_user_ids => %(user_ids)s,
    p_contents => %(contents)s, p_embeddings => %(embeddings)s,
    p_embedding_model => %(embedding_model)s,
    p_memory_types => %(memory_types)s::text[]::memex.memory_type[],
    p_importances => %(importances)s, p_metadata => %(metadata)s::jsonb[],
    p_created_at => %(created_at)s::timestamptz[], p_updated_at => %(updated_at)s::timestamptz[],
    p_expires_at => %(expires_at)s::timestamptz[], p_lineage => %(lineage)s::jsonb[],
    p_paths => %(paths)s::text[], p_actors => %(actors)s::text[], p_access => 'admin')
"""

MISSING_MEMORY_IDS = "select * from memex.missing_memory_ids(p_ids => %(ids)s::uuid[])"

EXPORT_HISTORY = """
select * from memex.export_history(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_after_kind => %(after_kind)s,
    p_after_user_id => %(after_user_id)s, p_after_id => %(after_id)s, p_limit => %(limit)s)
"""

# the history of an import, one function per kind (memexdb.moving)
IMPORT_FILE_REVISIONS = "select memex.import_file_revisions(p_records => %(records)s)"
IMPORT_ACCESS_LOG = "select memex.import_access_log(p_records => %(records)s)"
IMPORT_CONSOLIDATION_RUNS = "select memex.import_consolidation_runs(p_records => %(records)s)"
# of an import's access-log entries, those older than the retention window: the next
# memex.maintenance() prunes them (docs/operations.md)
ACCESS_LOG_EXPIRING = """
select count(*)::integer from unnest(%(ats)s::timestamptz[]) a
where a < now() - make_interval(
    days => memex._setting('access_log_retention_days', '90')::integer)
"""

# --- File memory ---

WRITE_FILE = """
select * from memex.write_file(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_content => %(content)s, p_embedding => %(embedding)s,
    p_embedding_model => %(embedding_model)s, p_base_revision => %(base_revision)s)
"""

READ_FILE = """
select * from memex.read_file(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_from_line => %(from_line)s, p_to_line => %(to_line)s, p_as_of => %(as_of)s)
"""

LIST_FILES = """
select * from memex.list_files(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_prefix => %(prefix)s,
    p_limit => %(limit)s, p_after => %(after)s)
"""

PREVIEW_PATCH = """
select * from memex.preview_patch(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_heading => %(heading)s, p_append => %(append)s, p_old_text => %(old_text)s,
    p_new_text => %(new_text)s)
"""

PATCH_FILE = """
select * from memex.patch_file(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_embedding => %(embedding)s, p_embedding_model => %(embedding_model)s,
    p_base_revision => %(base_revision)s, p_heading => %(heading)s, p_append => %(append)s,
    p_old_text => %(old_text)s, p_new_text => %(new_text)s)
"""

DELETE_FILE = """
select * from memex.delete_file(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_base_revision => %(base_revision)s)
"""

LIST_REVISIONS = """
select * from memex.list_revisions(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_limit => %(limit)s, p_before => %(before)s)
"""

GET_REVISION = """
select * from memex.get_revision(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_revision => %(revision)s)
"""

DIFF_REVISIONS = """
select memex.diff_revisions(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_from_revision => %(from_revision)s, p_to_revision => %(to_revision)s)
"""

RESTORE_REVISION = """
select * from memex.restore_revision(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_path => %(path)s,
    p_revision => %(revision)s, p_embedding => %(embedding)s,
    p_embedding_model => %(embedding_model)s, p_base_revision => %(base_revision)s)
"""

SMART_READ = """
select * from memex.smart_read(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_query => %(query)s,
    p_query_embedding => %(query_embedding)s, p_embedding_model => %(embedding_model)s,
    p_budget => %(budget)s)
"""

ACCESS_EVENTS = """
select * from memex.access_events(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_since => %(since)s,
    p_until => %(until)s, p_limit => %(limit)s, p_before => %(before)s)
"""

SEARCH_PASSAGES = """
select * from memex.search_passages(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_query => %(query)s,
    p_query_embedding => %(query_embedding)s, p_embedding_model => %(embedding_model)s,
    p_top_k => %(top_k)s, p_passage_chars => %(passage_chars)s)
"""

# Raise 28000/42501 unless the caller may act on the tenant with that access.
AUTHORIZE = "select memex._authorize(%(agent_id)s, %(user_id)s, %(need)s)"
DELEGATE = "select memex._delegate(p_actor => %(delegate)s)"

# --- Consolidation ---

CONSOLIDATE_TENANT = """
select * from memex.consolidate_tenant(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_dry_run => %(dry_run)s,
    p_force => %(force)s, p_summary => %(summary)s, p_source_ids => %(source_ids)s::uuid[])
"""
CONSOLIDATE_DUE = "select * from memex.consolidate_due(p_dry_run => %(dry_run)s)"
DREAM_TENANT = """
select * from memex.dream_tenant(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_dry_run => %(dry_run)s,
    p_force => %(force)s, p_edits => %(edits)s)
"""
DREAM_DUE = "select * from memex.dream_due(p_dry_run => %(dry_run)s, p_edits => %(edits)s)"
DREAM_PLAN = """
select * from memex.dream_plan(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_force => %(force)s)
"""
RESTORE_CONSOLIDATION = (
    "select * from memex.restore_consolidation(p_run_id => %(run_id)s, p_agent_id => %(agent_id)s)"
)
DREAM_CONFIG = "select memex.dream_config()"
SET_DREAM_CONFIG = "select memex.set_dream_config(p_changes => %(changes)s)"
CONSOLIDATION_HISTORY = """
select * from memex.consolidation_history(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_limit => %(limit)s,
    p_before => %(before)s)
"""
DREAM_USERS = """
select * from memex.dream_users(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after_agent_id => %(after_agent_id)s,
    p_after_user_id => %(after_user_id)s)
"""
SET_DREAM_PAUSED = """
select memex.set_dream_paused(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_paused => %(paused)s)
"""
# The admin console's tenant pages (memexdb.console)
AGENT_STATS = """
select * from memex.agent_stats(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after => %(after)s)
"""
USER_STATS = """
select * from memex.user_stats(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after => %(after)s)
"""

# pg_cron (memexdb.pg_cron) in this database: may this role use it, and does its scheduler
# run here? Its launcher connects to the database of cron.database_name, where alone jobs
# run; `running` is null when this role cannot see other roles' backend types (neither a
# superuser nor in pg_read_all_stats). No row: not installed.
PG_CRON = """
select e.extversion as version,
       coalesce(has_schema_privilege(to_regnamespace('cron'), 'usage'), false) as usable,
       (select case when bool_or(a.backend_type = 'pg_cron launcher'
                                 and a.datname = current_database()) then true
                    when bool_and(a.backend_type is not null) then false end
        from pg_stat_activity a) as running
from pg_extension e where e.extname = 'pg_cron'
"""
FUNCTION_EXISTS = "select to_regproc(%(function)s) is not null"
CRON_SCHEDULE = "select cron.schedule(%(name)s, %(schedule)s, %(command)s)"
# The memex jobs in cron.job for this database (a role sees its own; a superuser, all).
CRON_JOBS = """
select jobid, jobname, schedule, command, active, username from cron.job
where jobname = any(%(names)s) and database = current_database()
order by jobname, username
"""
# (materialized: cron.unschedule only for the rows the filter keeps)
CRON_UNSCHEDULE = """
with ours as materialized (
    select jobid, jobname from cron.job
    where jobname = any(%(names)s) and database = current_database())
select jobname from ours where cron.unschedule(jobid) order by jobname
"""
CRON_ACTIVE = """
select jobname from cron.job
where jobname = any(%(names)s) and database = current_database() and active
"""
