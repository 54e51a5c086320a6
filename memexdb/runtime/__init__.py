"""The runtime every memexdb process shares (`memexdb serve` and each of its workers,
`memexdb mcp`, `memexdb migrate` / `status` / `dsn`).

| module | what it does |
|---|---|
| `database` | the configured or embedded database: start, share or look; migrate; keep it up |
| `process` | a process's client, database watch and job runner, opened together |
| `watch` | fail requests at once while the database is down; refresh the pool when back |
| `jobs` | scheduled jobs (Job), run by one process per database (JobRunner) |
| `maintenance` | the memex.maintenance() job |
| `dreaming` | the consolidation jobs: condensing (on by default), dreaming over files (opt-in) |
| `embed_worker` | the embed queue's job: embeds what SQL queued (memex.embed_queue) |
| `embedder` | the embedder, built the same way for every frontend |
"""

from memexdb.runtime.database import (
    Attach,
    Database,
    apply_settings,
    embedded_server,
    open_database,
)
from memexdb.runtime.embedder import embedder_for
from memexdb.runtime.jobs import Job, JobRunner
from memexdb.runtime.process import Runtime, default_jobs

__all__ = [
    "Attach",
    "Database",
    "Job",
    "JobRunner",
    "Runtime",
    "apply_settings",
    "default_jobs",
    "embedded_server",
    "embedder_for",
    "open_database",
]
