"""The SQL call text of the memories domain (sql/memories/).

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types: `select *` lists no
column here.
"""

from __future__ import annotations

STORE = """
select * from memex.store(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_content => %(content)s,
    p_embedding => %(embedding)s, p_embedding_model => %(embedding_model)s,
    p_memory_type => %(memory_type)s::text::memex.memory_type,
    p_importance => %(importance)s, p_metadata => %(metadata)s,
    p_expires_at => %(expires_at)s, p_created_at => %(created_at)s, p_id => %(id)s,
    p_supersedes => %(supersedes)s::uuid[], p_valid_from => %(valid_from)s,
    p_valid_to => %(valid_to)s)
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
    p_include_archived => %(include_archived)s,
    p_include_superseded => %(include_superseded)s, p_as_of => %(as_of)s,
    p_valid_at => %(valid_at)s, p_created_after => %(created_after)s,
    p_created_before => %(created_before)s)
"""

FORGET = """
select * from memex.forget(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s)
"""

COUNT = """
select memex.count(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
                   p_memory_type => %(memory_type)s::text::memex.memory_type,
                   p_embedding_model => %(embedding_model)s, p_metadata => %(metadata)s)
"""

GET_MEMORY = """
select * from memex.get_memory(p_agent_id => %(agent_id)s, p_user_id => %(user_id)s,
                               p_id => %(id)s, p_as_of => %(as_of)s)
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
    p_expires_at => %(expires_at)s, p_clear_expires_at => %(clear_expires_at)s,
    p_supersedes => %(supersedes)s::uuid[], p_valid_from => %(valid_from)s,
    p_valid_to => %(valid_to)s, p_clear_valid_to => %(clear_valid_to)s)
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
    p_after_id => %(after_id)s, p_limit => %(limit)s)
"""

LIST_MEMORY_REVISIONS = """
select * from memex.list_memory_revisions(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s,
    p_limit => %(limit)s, p_before => %(before)s)
"""

DIFF_MEMORY_REVISIONS = """
select memex.diff_memory_revisions(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s,
    p_from_revision => %(from_revision)s, p_to_revision => %(to_revision)s)
"""

REVERT_MEMORY = """
select * from memex.revert_memory(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_id => %(id)s,
    p_revision => %(revision)s)
"""
