"""API keys and the audit log: create, list and revoke keys, read the audit log (admin
callers; memexdb.keys.operations)."""
