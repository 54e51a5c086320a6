"""The SQL call text of the files domain (sql/files/): file memory, its revisions, the
access log and passages.

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

# the history of an import, one function per kind (memexdb.moving)
IMPORT_FILE_REVISIONS = "select memex.import_file_revisions(p_records => %(records)s)"
IMPORT_ACCESS_LOG = "select memex.import_access_log(p_records => %(records)s)"
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
