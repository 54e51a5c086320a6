-- privileges: tenant
-- memex.dream_config: the consolidation ("dreaming") settings, each from memex.settings
-- (name dream_<key>) or its default here: the one definition of the defaults.
--   enabled           master switch of every consolidation job (pg_cron's and the service's;
--                     MEMEX_CONDENSE_ENABLED / MEMEX_DREAM_ENABLED say which one runs)
--   interval_seconds  how often the service's scheduler runs a tick (pg_cron: its schedule)
--   grace_minutes     condensing takes a batch once all of it is this old (a busy tenant's
--                     oldest memories too); dreaming leaves a tenant's files alone until
--                     it has been quiet this long
--   threshold         episodic memories (live) a tenant must exceed to be condensed
--   batch_size        the oldest episodic memories condensed into one summary
--   summary_chars     longest extractive summary (sentences are kept whole)
--   write_budget      most summaries and file rewrites one tick writes, over all tenants
--   concurrency       most tenants one tick works on
create or replace function memex.dream_config()
returns jsonb
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$
    select '{"enabled": true, "interval_seconds": 300, "grace_minutes": 60,
             "threshold": 100, "batch_size": 50, "summary_chars": 4000,
             "write_budget": 20, "concurrency": 4}'::jsonb
           || coalesce((select jsonb_object_agg(substr(s.name, 7), s.value)
                        from memex.settings s where s.name like 'dream\_%'), '{}')
$$;

comment on function memex.dream_config() is
    'Consolidation settings (dream_* in memex.settings, else their defaults) as jsonb.';
