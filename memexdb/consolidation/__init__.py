"""The consolidation domain (sql/consolidation/, the `consolidation` REST tag): its models,
SQL call text and operations for admins (the settings, the tenants' status and pause
flags, the runs, undoing a run). Its two steps are condense (old episodic memories) and
dream (over files); the runs with an LLM are memexdb.agentic.consolidation's."""
