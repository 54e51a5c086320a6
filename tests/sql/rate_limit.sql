-- Rate limits: memex.rate_limit_hit (an exact sliding window, at fixed times p_now), the
-- operator's per-minute limits in memex.settings (written with memex.set_setting, which
-- checks names and values and is audited), and memex.store refused with MX429 past them.
\set VERBOSITY terse
\set SHOW_CONTEXT never
-- 3 hits per 60 s on key k1: three allowed, the fourth refused (not counted)
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:00:10+00');
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:00:10+00');
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:00:10+00');
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:00:10+00');
-- 50 s on (past a fixed minute's boundary) the three hits at 00:00:10 are still in the
-- last 60 s: refused, until 00:01:10, when they have left it
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:01:00+00');
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:01:10+00');
-- a window after its last hit the key starts afresh
select allowed, hits, remaining
from memex.rate_limit_hit('k1', 3, 60, '2026-01-01 00:03:00+00');
-- a batch is all or nothing; one larger than the limit never fits (a whole window to wait)
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k2', 3, 60, '2026-01-01 00:00:00+00', p_hits => 2);
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k2', 3, 60, '2026-01-01 00:00:00+00', p_hits => 2);
select allowed, hits, remaining, round(retry_after_seconds::numeric, 3) as retry_after
from memex.rate_limit_hit('k3', 3, 60, '2026-01-01 00:00:00+00', p_hits => 4);
-- arguments are checked
select allowed from memex.rate_limit_hit('k4', 3, 0);
\echo :LAST_ERROR_SQLSTATE

-- memex.set_setting: known names, checked values
select memex.set_setting('rate_limit_store_per_minute', '2');
select memex.set_setting('rate_limit_store_per_minute', '2');  -- no change: not audited
select memex.set_setting('rate_limit_search_per_minute', 'null');
select memex.set_setting('rate_limit_store_per_minut', '2');
\echo :LAST_ERROR_SQLSTATE
select memex.set_setting('rate_limit_store_per_minute', '"2"');
select memex.set_setting('rate_limit_store_per_minute', '1.5');
select memex.set_setting('rate_limit_store_per_minute', '-1');
select memex.set_setting('hybrid_vector_weight', '2');
select memex.set_setting('exact_scan_max_rows', 'null');
select memex.set_setting('vector_index', '{"kind": "none"}');
select name, value from memex.settings where name like 'rate_limit%' order by name;
select action, details ->> 'name' as name, details -> 'old' as old, details -> 'new' as new
from memex.audit_log where action = 'setting.set' order by id;

-- the store limit (2 a minute, per agent without a key): the third store is refused
select content from memex.store('limited', 'u', 'one',
    (array[1]::real[] || array_fill(0::real, array[383]))::public.vector, 'hand-made');
select content from memex.store('limited', 'u', 'two',
    (array[1]::real[] || array_fill(0::real, array[383]))::public.vector, 'hand-made');
select content from memex.store('limited', 'u', 'three',
    (array[1]::real[] || array_fill(0::real, array[383]))::public.vector, 'hand-made');
\echo :LAST_ERROR_SQLSTATE
-- the refused call wrote nothing; another agent has its own budget
select count(*) from memex.memories where agent_id = 'limited';
select content from memex.store('unlimited', 'u', 'one',
    (array[1]::real[] || array_fill(0::real, array[383]))::public.vector, 'hand-made');
-- a batch counts one per memory, all or nothing
select count(*) from memex.store_many(array['batch', 'batch', 'batch'], array['u', 'u', 'u'],
    array['a', 'b', 'c'],
    array[(array[1]::real[] || array_fill(0::real, array[383]))::public.vector,
          (array[1]::real[] || array_fill(0::real, array[383]))::public.vector,
          (array[1]::real[] || array_fill(0::real, array[383]))::public.vector],
    'hand-made');
\echo :LAST_ERROR_SQLSTATE
-- no limit: null
select memex.set_setting('rate_limit_store_per_minute', 'null');
select content from memex.store('limited', 'u', 'three',
    (array[1]::real[] || array_fill(0::real, array[383]))::public.vector, 'hand-made');
