-- privileges: service
-- memex._dream_reads: whether a dream over a tenant's files reads the file at p_path. Logs
-- are records, not notes to tidy, so it skips user/log.md, user/dream-log.md, any file
-- ending in -log.md or .log (MemexAI's rule), and the archives that the memorize fallback
-- and the dream log move a full log to (user/log-<14 digits>.md,
-- user/dream-log-<14 digits>.md). Writes to skipped files do not make a tenant due.
create or replace function memex._dream_reads(p_path text)
returns boolean
language sql immutable set search_path = pg_catalog, pg_temp
as $$
    select p_path not in ('user/log.md', 'user/dream-log.md')
           and p_path !~* '(-log\.md|\.log)$'
           and p_path !~ '^user/(dream-)?log-[0-9]{14}\.md$'
$$;

comment on function memex._dream_reads(text) is
    'Whether dreaming reads a file (logs and their archives are left alone).';
