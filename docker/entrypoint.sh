#!/bin/sh
# memexdb image entrypoint: `serve` (the default command) first migrates the database and
# registers memex's periodic SQL jobs with pg_cron (`memexdb migrate --schedule`), then
# becomes the service (exec: it is PID 1's child no more, signals reach it directly). Any
# other command is a memexdb command run as is (`docker compose run memexdb status`).
#
# PG_CRON=off skips the pg_cron step, for a database without pg_cron: the service
# then runs the same jobs itself (docs/operations.md, "Scheduling with pg_cron").
set -eu

if [ "$#" -eq 0 ]; then
  set -- serve
fi
if [ "$1" = "serve" ] && [ "${PG_CRON:-on}" != "off" ]; then
  # Exit code 2 with the setup steps if the server lacks pg_cron; the restart policy
  # tries again (e.g. while PostgreSQL is still starting).
  memexdb migrate --schedule
fi
exec memexdb "$@"
