"""The SQL text of the keys domain (sql/keys/): API keys, the audit log, bootstrap.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/keys/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.keys.calls import *  # noqa: F403
from memexdb.keys.calls import HAS_LIVE_KEYS

# Serializes the first starts of several containers on one database (`memexdb keys
# bootstrap`): a lock on a table no tenant role (nor memex_app) may lock, as an advisory
# lock any role may take on any key would be; self-conflicting, so one bootstrap at a
# time, and bounded: a lock not granted within 10 s fails the bootstrap (55P03).
BOOTSTRAP_LOCK_TIMEOUT = "set local lock_timeout = '10s'"
BOOTSTRAP_KEY_LOCK = "lock table memex.api_keys in share row exclusive mode"

# Whether the database has a key that works (memexdb serve beyond loopback needs one).
LIVE_KEYS = HAS_LIVE_KEYS
