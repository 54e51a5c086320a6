"""The operations domain in Python (sql/operations/, the `operations` REST tag): health,
readiness, maintenance, metrics and stats. Named `health` here so that "operation" in
Python means one thing, an entry of the operation table (memexdb.operation)."""
