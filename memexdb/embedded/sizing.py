"""How much shared memory the embedded PostgreSQL asks for.

PostgreSQL's default `shared_buffers` (128 MB) holds a tenant of some 50,000 short
memories; past that, a big tenant's searches read their rows and HNSW pages through the
operating system's cache, a copy per page (bench/RESULTS.md, "Big tenants": the default
request on 200,000 memories took about 30 % longer). The embedded server takes a quarter
of the memory it may use, as PostgreSQL's tuning guides advise, between 128 MB and 2 GB:
buffers are only touched as pages are read, so an idle server does not hold them. An
operator overrides it with ALTER SYSTEM (postgresql.auto.conf wins over memexdb.conf).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MIN_MB = 128
MAX_MB = 2048
CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)


def usable_memory_bytes() -> int | None:
    """The machine's memory, or a container's limit when that is lower; None if unknown."""
    sizes: list[int] = []
    with contextlib.suppress(ValueError, OSError, AttributeError):  # not on every platform
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for path in CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (v2) means no limit
            sizes.append(int(text))
    return min(sizes) if sizes else None


def shared_buffers_mb(memory_bytes: int | None) -> int:
    """A quarter of `memory_bytes`, in MB, between MIN_MB and MAX_MB (MIN_MB if unknown)."""
    if memory_bytes is None:
        return MIN_MB
    return max(MIN_MB, min(MAX_MB, memory_bytes // 4 // (1024 * 1024)))
