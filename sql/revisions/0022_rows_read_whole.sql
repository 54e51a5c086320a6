-- Revision 0022, frozen from 0022_rows_read_whole.py.
-- Big tenants' searches read each row once: the tsvector stays in the heap row, and the
-- tenant recency index orders by (created_at, id).
--
-- 1. `toast_tuple_target = 8160` on memex.memories. With the embedding kept inline (0007,
--    storage main), a row of a short memory (about 2.2 kB with a 384-dimension vector) was
--    just over PostgreSQL's default 2 kB target, so its tsvector was moved out to the TOAST
--    table: every text match, BM25 score and neighbour probe of the ANN path fetched it
--    through the TOAST index, twice when an expression read it twice. Rows up to a page now
--    stay whole; longer ones are still compressed and moved out (content and tsvector
--    first, the embedding last). This applies to rows written from now on; rows stored
--    before keep their tsvector out of line until the table is rewritten
--    (`VACUUM FULL memex.memories`, or pg_repack without the lock; docs/scaling.md).
-- 2. memories_tenant_recent_idx becomes (agent_id, user_id, created_at desc, id desc)
--    include (importance): memex._candidates_ann fetches the two memories just before and
--    after each nearest and text-matching memory in memex.search's window order
--    (created_at, id); with id only included each probe read a row more and sorted (an
--    incremental sort per probe), with id a key column it reads its two rows in index
--    order. Index-only reads of the newest entries (created_at, importance, id) and exact
--    per-tenant scans use it as before. The index is rebuilt once, holding a lock that
--    blocks writes to memex.memories for the duration (about a second per 200,000
--    memories).
--
-- bench/RESULTS.md, "Big tenants: rows read whole".
--
-- Revision ID: 0022
-- Revises: 0021
-- Create Date: 2026-12-05

alter table memex.memories set (toast_tuple_target = 8160);

drop index memex.memories_tenant_recent_idx;

create index memories_tenant_recent_idx on memex.memories (agent_id, user_id, created_at desc, id desc) include (importance);
