"""The SQL call text of the keys domain (sql/keys/): API keys, the audit log, bootstrap.

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

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
