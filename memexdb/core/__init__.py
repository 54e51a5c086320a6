"""The core of the SQL API in Python (sql/core/): the SQL call text the session sends for
every domain (entering a caller, authorizing, delegating, rate-limit reservations)."""
