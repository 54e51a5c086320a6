"""Consolidation ("dreaming") controls for admins: the settings, the tenants' status and
pause flags, the runs, and undoing a run (memexdb.dreaming.operations). The runs
themselves are memexdb.agentic.consolidation's."""
