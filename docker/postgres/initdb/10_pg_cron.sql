-- First start of an empty data volume (the postgres image runs docker-entrypoint-initdb.d/
-- as POSTGRES_USER in POSTGRES_DB, with pg_cron preloaded by the image's command):
-- the extensions memexdb uses. `memexdb migrate --schedule` then registers its jobs.
create extension if not exists pg_cron;
create extension if not exists vector;
