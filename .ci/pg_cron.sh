#!/usr/bin/env bash
# A PostgreSQL with pg_cron and pgvector for tests/test_pg_cron.py, from Debian packages
# only. Idempotent: .ci/run calls it before the tests; run it once by hand to run those
# tests locally (as root). Downloads and the build stay in .ci/pg_cron/ (not in git).
#
# Why PostgreSQL 15 and not the embedded PostgreSQL 18: Debian packages pg_cron 1.6.5
# (trixie) and 1.6.8 (sid, with PostgreSQL 18 support), but the archive we reach serves
# neither their source packages (the .dsc and .orig.tar.gz of every pg-cron version answer
# 404) nor a binary this machine can load (sid's postgresql-18-cron needs glibc 2.38;
# bookworm has 2.36). Bookworm has postgresql-15 with postgresql-15-cron 1.4.2, and no
# pgvector: pgvector is built here from Debian's source package (trixie's 0.8.0; apt
# checks it against the signed Sources index, and we against a pinned sha256) with PGXS,
# and installed into PostgreSQL 15 the way its README's `make install` does.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_MAJOR=15
PG_CRON_DEB=1.4.2-2+b1 # bookworm's postgresql-15-cron
PGVECTOR=0.8.0
PGVECTOR_DEB=0.8.0-1 # trixie's pgvector source package
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
CACHE=.ci/pg_cron
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config

installed_version() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^install ok installed //p'; }

# 1. Debian packages: the server, pg_cron (pinned), and what PGXS builds with.
missing=()
for pkg in "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" gcc make; do
  [ -n "$(installed_version "$pkg")" ] || missing+=("$pkg")
done
[ "$(installed_version "postgresql-$PG_MAJOR-cron")" = "$PG_CRON_DEB" ] ||
  missing+=("postgresql-$PG_MAJOR-cron=$PG_CRON_DEB")
if ((${#missing[@]})); then
  echo "+ apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. pgvector, built against PostgreSQL 15.
control="$("$PG_CONFIG" --sharedir)/extension/vector.control"
if grep -qx "default_version = '$PGVECTOR'" "$control" 2>/dev/null &&
  [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]; then
  echo "pg_cron $PG_CRON_DEB and pgvector $PGVECTOR are installed in PostgreSQL $PG_MAJOR"
  exit 0
fi
mkdir -p "$CACHE"
tarball="$CACHE/pgvector_$PGVECTOR.orig.tar.gz"
if ! echo "$PGVECTOR_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
  # apt itself fetches the source package, from the Debian mirror this machine's apt
  # uses, with its own lists and caches (the system's stay as they are).
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Origin: Debian' 'Label: Debian' | head -n 1)
  [ -n "$mirror" ] || { echo "no Debian mirror in apt's sources" >&2; exit 1; }
  mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
    >"$CACHE/apt/sources.list"
  apt=(-qq -o "Dir::Etc::SourceList=$PWD/$CACHE/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$PWD/$CACHE/apt/lists" -o "Dir::Cache=$PWD/$CACHE/apt/cache"
    -o APT::Sandbox::User=root)
  echo "+ apt-get source --download-only pgvector=$PGVECTOR_DEB"
  apt-get "${apt[@]}" update
  (cd "$CACHE" && apt-get "${apt[@]}" source --download-only "pgvector=$PGVECTOR_DEB")
  echo "$PGVECTOR_SHA256  $tarball" | sha256sum -c --quiet
fi
build="$CACHE/pgvector-$PGVECTOR"
rm -rf "$build" && mkdir -p "$build"
tar -xzf "$tarball" -C "$build" --strip-components=1
# OPTFLAGS= : no -march=native (pgvector's README for builds that may move); with_llvm=no:
# no JIT bitcode, which would need clang and twice the compile time.
echo "+ make pgvector $PGVECTOR (PGXS, PostgreSQL $PG_MAJOR)"
make -s -C "$build" -j2 PG_CONFIG="$PG_CONFIG" OPTFLAGS= with_llvm=no >/dev/null
make -s -C "$build" install PG_CONFIG="$PG_CONFIG" with_llvm=no >/dev/null
echo "pg_cron $PG_CRON_DEB and pgvector $PGVECTOR are installed in PostgreSQL $PG_MAJOR"
