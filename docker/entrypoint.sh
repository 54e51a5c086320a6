#!/bin/sh
# memexdb image entrypoint: `serve` (the default command) first migrates the database and
# registers memex's periodic SQL jobs with pg_cron (`memexdb migrate --schedule`), then
# becomes the service (exec: it is PID 1's child no more, signals reach it directly). Any
# other command is a memexdb command run as is (`docker compose run memexdb status`).
#
# PG_CRON=off skips the pg_cron step, for a database without pg_cron: the service
# then runs the same jobs itself (docs/operations.md, "Scheduling with pg_cron").
#
# First start: the image listens on 0.0.0.0, where `serve` refuses to run without an API
# key. On a database that has never had a key, `serve` first creates the operator's admin
# key and writes its token to ADMIN_KEY_FILE (default /var/lib/memexdb/admin-key, on the
# stack's memexdb-keys volume), readable by the memexdb user only:
#   docker compose exec memexdb cat /var/lib/memexdb/admin-key
# Any later start leaves the keys alone. ADMIN_KEY_FILE=off skips this step.
set -eu

if [ "$#" -eq 0 ]; then
  set -- serve
fi
if [ "$1" = "serve" ]; then
  if [ "${PG_CRON:-on}" != "off" ]; then
    # Exit code 2 with the setup steps if the server lacks pg_cron; the restart policy
    # tries again (e.g. while PostgreSQL is still starting).
    memexdb migrate --schedule
  fi
  admin_key_file="${ADMIN_KEY_FILE:-/var/lib/memexdb/admin-key}"
  if [ "$admin_key_file" != "off" ]; then
    memexdb keys bootstrap --token-file "$admin_key_file"
  fi
fi
exec memexdb "$@"
