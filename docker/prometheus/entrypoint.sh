#!/bin/sh
# Prometheus entrypoint for docker-compose.yml: writes MEMEX_METRICS_TOKEN (required) to
# the file prometheus.yml's scrape reads its bearer token from, readable by this user only,
# then becomes Prometheus with the arguments given (the compose file's command).
# PROMETHEUS (default /bin/prometheus, the image's binary) and PROMETHEUS_TOKEN_FILE
# (default /prometheus/.memex_metrics_token, in the data volume this user owns) let a
# test run it outside the image.
set -eu

token_file="${PROMETHEUS_TOKEN_FILE:-/prometheus/.memex_metrics_token}"
if [ -z "${MEMEX_METRICS_TOKEN:-}" ]; then
  echo "MEMEX_METRICS_TOKEN is not set: it is the bearer token Prometheus scrapes memexdb's /metrics with" >&2
  exit 2
fi
umask 077
printf '%s' "$MEMEX_METRICS_TOKEN" >"$token_file.tmp"
mv -f "$token_file.tmp" "$token_file"
unset MEMEX_METRICS_TOKEN
exec "${PROMETHEUS:-/bin/prometheus}" "$@"
