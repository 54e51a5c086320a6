"""File memory: documents of a tenant at virtual paths, with every revision and an access
log (memexdb.files.operations)."""
