-- Revision 0004, frozen from 0004_ann_recent_candidates.py.
-- ANN path defaults from the scale benchmark (bench/RESULTS.md, "Scale benchmark"):
--
-- - ann_recent_candidates 5000: how many of a large tenant's newest memories memex.search
--   re-ranks next to the nearest neighbours when alpha < 1. At alpha 0.7 the best ten of a
--   200k tenant are mostly recent memories ranked far below the 200 nearest.
-- - ivfflat_probes 10 instead of null (ceil(sqrt(lists))): with iterative scans, recall@10
--   at 1M memories stops improving beyond ~10 probes for 1,000 and 2,000 lists, while
--   latency grows with every probe. A value a DBA has set is kept.
--
-- Revision ID: 0004
-- Revises: 0003
-- Create Date: 2026-12-02

insert into memex.settings (name, value) values ('ann_recent_candidates', '5000')
        on conflict (name) do nothing;

update memex.settings set value = '10', updated_at = now() where name = 'ivfflat_probes' and value = 'null';
