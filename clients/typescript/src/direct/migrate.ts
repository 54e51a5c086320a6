/** `migrate()` in Node: brings a database to the schema this package ships, as
 * `memexdb migrate` (memexdb/migrations.py) does, from the same files: the package's
 * `sql/` folder is a copy of the repository's (`scripts/copy-sql.mjs`, run by every build;
 * tests/test_typescript_client.py checks the packed copy), read in the order of its
 * `manifest.txt`.
 *
 * One transaction under the same lock as Python's: an advisory lock while the database has
 * no `memex.alembic_version` yet, then a share row exclusive lock on that table (no tenant
 * role may take it). The revisions not yet applied run in order, each recorded in
 * `memex.alembic_version` as alembic records it (the same table, the same ids), then the
 * SQL layer is re-applied unless `memex.sql_layer_state` shows it unchanged (the same
 * sha256 of the files and the same catalog fingerprint as Python computes). A database
 * migrated by either is therefore at the same revision with the same catalog, and a second
 * or concurrent run of either is a no-op. Another migration is waited on for at most 120
 * s, every other lock for `lockTimeoutMs` (2 s), then the whole migration is rolled back
 * and tried again, `attempts` times (5), before a `BusyError` names who holds memexdb's
 * tables. */

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import pg from "pg";

import { BusyError, DatabaseUnavailableError, MemexError } from "../errors.js";
import { firstMigrateRefusal, firstMigrateSteps, missingRoleWarnings, readMigrationRoles } from "./roles.js";

export interface MigrateOptions {
  /** How long any lock but another migration's is waited for, in milliseconds (2000). */
  lockTimeoutMs?: number;
  /** Tries before giving up with a `BusyError` (5). */
  attempts?: number;
  /** Called with each warning of a migrate that succeeded (an optional role it could not
   * give its functions: what runs slower without it, where to read how to add it), as
   * `memexdb migrate` logs them; `console.warn` unless given. */
  onWarning?: (message: string) => void;
}

/** The schema's files, in load order (`sql/manifest.txt`). */
export interface Schema {
  /** The revisions: alembic's id (the file name's prefix) and the frozen SQL. */
  revisions: { id: string; file: string; sql: string }[];
  /** The SQL layer: `folder/name.sql` and its text. */
  layer: { file: string; sql: string }[];
}

const MANIFEST = "manifest.txt";
const REVISIONS = "revisions";
const SERIALIZE_TIMEOUT_MS = 120_000;
const LOCK_TIMEOUT_MS = 2_000;
const ATTEMPTS = 5;
const BOOTSTRAP_LOCK_KEY = 0x6d656d6578; // "memex": only before memex.alembic_version exists
const MIN_SERVER_VERSION = 150000;
const PRIVILEGE_CLASSES = ["tenant", "tenant-helper", "service", "definer-helper"];

/** The package's copy of the repository's `sql/`: `sql/` at the package's root, found
 * upwards from this module (dist/direct/ for ESM, dist/cjs/direct/ for CommonJS). */
export function schemaDir(): string {
  // @ts-ignore -- import.meta in the ESM build; scripts/cjs-package.mjs rewrites it for CommonJS
  const here: string = import.meta.url;
  let dir = path.dirname(fileURLToPath(here));
  for (let level = 0; level < 5; level++) {
    const candidate = path.join(dir, "sql");
    if (existsSync(path.join(candidate, MANIFEST))) return candidate;
    dir = path.dirname(dir);
  }
  throw new MemexError("migrate: this package has no sql/manifest.txt (a build copies it from the repository's sql/)");
}

function sqlFilesOf(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".sql") && statSync(path.join(dir, name)).isFile())
    .sort();
}

function everySqlFile(root: string, relative = ""): string[] {
  const found: string[] = [];
  for (const name of readdirSync(path.join(root, relative)).sort()) {
    const rel = relative ? `${relative}/${name}` : name;
    if (statSync(path.join(root, rel)).isDirectory()) found.push(...everySqlFile(root, rel));
    else if (name.endsWith(".sql")) found.push(rel);
  }
  return found;
}

/** Read `manifest.txt` as memexdb.migrations.read_manifest does, with the same refusals. */
export function readSchema(root: string = schemaDir()): Schema {
  const entries = readFileSync(path.join(root, MANIFEST), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const explicit = new Set(entries.filter((e) => !e.endsWith("/")));
  const revisions: Schema["revisions"] = [];
  const layer: string[] = [];
  const refuse = (why: string): never => {
    throw new MemexError(`migrate: ${MANIFEST} ${why}`);
  };
  for (const entry of entries) {
    const full = path.join(root, entry);
    if (entry.startsWith(`${REVISIONS}/`)) {
      if (layer.length) refuse(`lists the revision ${entry} after the SQL layer`);
      if (!entry.endsWith(".sql") || !existsSync(full) || entry.split("/").length !== 2) {
        refuse(`lists ${entry}, which is not a revision`);
      }
      const name = entry.slice(REVISIONS.length + 1);
      revisions.push({ id: name.split("_")[0] as string, file: entry, sql: readFileSync(full, "utf8") });
    } else if (entry.endsWith("/")) {
      if (!existsSync(full) || !statSync(full).isDirectory()) refuse(`lists ${entry}, which is not a folder`);
      const all = sqlFilesOf(full).map((name) => `${entry}${name}`);
      if (!all.length) refuse(`lists ${entry}, which holds no .sql file`);
      layer.push(...all.filter((file) => !explicit.has(file)));
    } else if (!entry.endsWith(".sql") || !existsSync(full)) {
      refuse(`lists ${entry}, which is not a .sql file`);
    } else {
      layer.push(entry);
    }
  }
  const every = [...revisions.map((r) => r.file), ...layer];
  const twice = [...new Set(every.filter((file, i) => every.indexOf(file) !== i))];
  const ids = revisions.map((r) => r.id);
  twice.push(...new Set(ids.filter((id, i) => ids.indexOf(id) !== i).map((id) => `revision ${id}`)));
  if (twice.length) refuse(`loads ${twice.sort().join(", ")} more than once`);
  const reached = new Set(every);
  const unreached = everySqlFile(root).filter((file) => !reached.has(file));
  if (unreached.length) refuse(`does not reach ${unreached.join(", ")}`);
  return {
    revisions,
    layer: layer.map((file) => ({ file, sql: readFileSync(path.join(root, file), "utf8") })),
  };
}

const DECLARATION = /^-- privileges:\s*(\S*)\s*$/gm;
const FUNCTION = /create or replace (?:function|procedure)\s+memex\.(\w+)\s*\(/gi;

/** Each memex function's privileges class, from its file's `-- privileges:` line
 * (memexdb.migrations.function_privileges, with the same refusals). */
export function functionPrivileges(layer: Schema["layer"]): Record<string, string> {
  const declared: Record<string, string> = {};
  for (const { file, sql } of layer) {
    const name = path.basename(file);
    const functions = [...sql.matchAll(FUNCTION)].map((m) => m[1] as string);
    const classes = [...sql.matchAll(DECLARATION)].map((m) => m[1] as string);
    if (!functions.length) {
      if (classes.length) throw new MemexError(`migrate: ${name} declares privileges but creates no function`);
      continue;
    }
    if (functions.length !== 1) throw new MemexError(`migrate: ${name} creates ${functions.length} functions, not one`);
    if (classes.length !== 1 || !PRIVILEGE_CLASSES.includes(classes[0] as string)) {
      throw new MemexError(
        `migrate: ${name} needs exactly one line '-- privileges: <class>' with a class among ${PRIVILEGE_CLASSES.join(", ")}`,
      );
    }
    const fn = functions[0] as string;
    if (fn in declared) throw new MemexError(`migrate: memex.${fn} is created by more than one file`);
    declared[fn] = classes[0] as string;
  }
  return declared;
}

/** `json.dumps(declared, sort_keys=True)`: Python's text, since the digest covers it. */
function pythonJson(declared: Record<string, string>): string {
  const keys = Object.keys(declared).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}: ${JSON.stringify(declared[k])}`).join(", ")}}`;
}

/** The sha256 of the SQL layer as memexdb.migrations._layer_digest computes it. */
export function layerDigest(layer: Schema["layer"], declared: Record<string, string>): string {
  const digest = createHash("sha256").update(pythonJson(declared));
  for (const { file, sql } of layer) {
    digest.update(`\0${file.split("/").slice(-2).join("/")}\0`);
    digest.update(sql);
  }
  return digest.digest("hex");
}

// memexdb.migrations._CATALOG_FINGERPRINT, the same text: what the SQL layer produced.
// tests/test_typescript_client.py checks that a migrate by one finds the other's layer in place.
const CATALOG_FINGERPRINT = `
select md5(string_agg(line, E'\\n' order by line)) from (
    select 'f ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc) || ' '
           || p.proowner::regrole::text || ' ' || coalesce(p.proacl::text, '') || ' '
           || coalesce(array_to_string(p.proconfig, ','), '') || ' ' || p.prosecdef::text
           || ' ' || p.provolatile::text || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '')
    from pg_proc p where p.pronamespace = 'memex'::regnamespace
    union all
    select 't ' || c.relname || ' ' || c.relowner::regrole::text || ' '
           || coalesce(c.relacl::text, '') || ' ' || c.relrowsecurity::text || ' '
           || c.relforcerowsecurity::text
    from pg_class c where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p')
    union all
    select 'p ' || pol.polrelid::regclass::text || ' ' || pol.polname || ' '
           || pol.polcmd::text || ' ' || coalesce(pg_get_expr(pol.polqual, pol.polrelid), '')
           || ' ' || coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '')
    from pg_policy pol join pg_class c on c.oid = pol.polrelid
    where c.relnamespace = 'memex'::regnamespace
    union all
    select 'g ' || tg.tgrelid::regclass::text || ' ' || tg.tgname || ' '
           || pg_get_triggerdef(tg.oid)
    from pg_trigger tg join pg_class c on c.oid = tg.tgrelid
    where c.relnamespace = 'memex'::regnamespace and not tg.tgisinternal
    union all
    select 'n ' || coalesce(n.nspacl::text, '') from pg_namespace n where n.nspname = 'memex'
    union all
    select 'd ' || pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d
    where d.adrelid = 'memex.memories'::regclass
) lines(line)
`;

// memexdb.migrations._LOCK_HOLDERS: who a migration that timed out waited for.
const LOCK_HOLDERS = `
select a.pid, coalesce(a.usename::text, '?') as role, coalesce(a.state, '?') as state,
       string_agg(distinct c.relname || ' ' || l.mode, ', ') as locks
from pg_locks l
join pg_class c on c.oid = l.relation
join pg_stat_activity a on a.pid = l.pid
where l.granted and c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p')
  and l.database = (select d.oid from pg_database d where d.datname = current_database())
  and l.pid <> pg_backend_pid()
group by a.pid, a.usename, a.state, a.xact_start
order by coalesce(a.state, '') like 'idle in transaction%' desc, a.xact_start nulls last
limit 5
`;

// What alembic creates for its version table (alembic.runtime.migration), so that the
// catalog is the same whichever runner made it.
const VERSION_TABLE =
  "CREATE TABLE memex.alembic_version (version_num VARCHAR(32) NOT NULL," +
  " CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))";

type Client = pg.Client;

/** The first column of the first row (undefined: no row). */
async function value<T>(client: Client, sql: string, values: unknown[] = []): Promise<T | undefined> {
  const result = await client.query<T[]>({ text: sql, values, rowMode: "array" });
  return result.rows[0]?.[0];
}

async function hasVersionTable(client: Client): Promise<boolean> {
  return (await value<string | null>(client, "select to_regclass('memex.alembic_version')::text")) != null;
}

async function lock(client: Client, lockTimeoutMs: number): Promise<void> {
  await client.query(`set local lock_timeout = '${SERIALIZE_TIMEOUT_MS}ms'`);
  if (!(await hasVersionTable(client))) {
    await client.query("select pg_advisory_xact_lock($1)", [BOOTSTRAP_LOCK_KEY]);
  }
  if (await hasVersionTable(client)) {
    await client.query("lock table memex.alembic_version in share row exclusive mode");
  }
  await client.query(`set local lock_timeout = '${Math.max(1, Math.trunc(lockTimeoutMs))}ms'`);
}

async function checkPrerequisites(client: Client): Promise<void> {
  const version = Number(await value<string>(client, "show server_version_num"));
  if (version < MIN_SERVER_VERSION) {
    throw new MemexError(`migrate: memexdb needs PostgreSQL >= 15; this server is ${Math.floor(version / 10000)}`);
  }
  const available = await value<string>(
    client,
    "select default_version from pg_available_extensions where name = 'vector'",
  );
  if (available === undefined || available === null) {
    throw new MemexError(
      "migrate: the pgvector extension is not installed on this PostgreSQL server; install pgvector >= 0.7",
    );
  }
  const [major = 0, minor = 0] = available.split(".").map((p) => Number.parseInt(p, 10));
  if (major === 0 && minor < 7) throw new MemexError(`migrate: memexdb needs pgvector >= 0.7; this server offers ${available}`);
}

async function applyLayer(client: Client, schema: Schema, revisionChanged: boolean): Promise<boolean> {
  const declared = functionPrivileges(schema.layer);
  const filesSha256 = layerDigest(schema.layer, declared);
  const tracked = (await value<string | null>(client, "select to_regclass('memex.sql_layer_state')::text")) != null;
  if (tracked && !revisionChanged) {
    const stored = (await client.query("select files_sha256, catalog_md5 from memex.sql_layer_state")).rows[0] as
      | { files_sha256: string; catalog_md5: string }
      | undefined;
    if (stored !== undefined && stored.files_sha256 === filesSha256) {
      if ((await value<string>(client, CATALOG_FINGERPRINT)) === stored.catalog_md5) return false;
    }
  }
  // read back by the grants file (sql/security/999_grants.sql), for this transaction
  await client.query("select set_config('memex.function_privileges', $1, true)", [pythonJson(declared)]);
  for (const { sql } of schema.layer) await client.query(sql); // no values: one simple query
  if (tracked) {
    const catalog = await value<string>(client, CATALOG_FINGERPRINT);
    await client.query(
      "insert into memex.sql_layer_state (files_sha256, catalog_md5) values ($1, $2)" +
        " on conflict (singleton) do update set files_sha256 = excluded.files_sha256," +
        " catalog_md5 = excluded.catalog_md5, applied_at = now()",
      [filesSha256, catalog],
    );
  }
  return true;
}

async function migrateOnce(
  connectionString: string,
  schema: Schema,
  lockTimeoutMs: number,
): Promise<{ head: string; warnings: string[] }> {
  const client = new pg.Client({ connectionString });
  try {
    await client.connect();
  } catch (error) {
    throw new DatabaseUnavailableError(`migrate: cannot connect to the database: ${(error as Error).message}`, {
      code: "database_unavailable",
      status: 503,
      cause: error,
    });
  }
  try {
    await client.query("begin");
    try {
      await lock(client, lockTimeoutMs);
      await checkPrerequisites(client);
      const roles = readMigrationRoles(schemaDir());
      if (!(await hasVersionTable(client))) {
        // a first migrate by a role that may not create what the schema needs stops here,
        // not on "permission denied" halfway through (all rolled back, but unexplained)
        const steps = await firstMigrateSteps(client, roles);
        if (steps.length) {
          throw new MemexError(`migrate: ${firstMigrateRefusal(roles, steps)}`, { code: "setup" });
        }
      }
      await client.query("create schema if not exists memex");
      let current: string | null = null;
      if (await hasVersionTable(client)) {
        const rows = (await client.query<{ version_num: string }>("select version_num from memex.alembic_version")).rows;
        if (rows.length > 1) throw new MemexError("migrate: memex.alembic_version holds more than one revision");
        current = rows[0]?.version_num ?? null;
      } else {
        await client.query(VERSION_TABLE);
      }
      const ids = schema.revisions.map((r) => r.id);
      const start = current === null ? 0 : ids.indexOf(current) + 1;
      if (current !== null && start === 0) {
        throw new MemexError(
          `migrate: the database is at revision ${current}, which this package does not know (a newer memexdb migrated it)`,
        );
      }
      for (const revision of schema.revisions.slice(start)) {
        await client.query(revision.sql); // no values: the file as one simple query
        // alembic's own statements for its version table
        if (current === null) {
          await client.query("INSERT INTO memex.alembic_version (version_num) VALUES ($1)", [revision.id]);
        } else {
          await client.query(
            "UPDATE memex.alembic_version SET version_num=$1 WHERE memex.alembic_version.version_num = $2",
            [revision.id, current],
          );
        }
        current = revision.id;
      }
      const head = current ?? "base";
      await applyLayer(client, schema, start < ids.length);
      const warnings = await missingRoleWarnings(client, roles);
      await client.query("commit");
      return { head, warnings };
    } catch (error) {
      await client.query("rollback").catch(() => undefined);
      throw error;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function lockHolders(connectionString: string): Promise<string> {
  const client = new pg.Client({ connectionString });
  try {
    await client.connect();
    if ((await value<string | null>(client, "select to_regnamespace('memex')::text")) == null) return "";
    const rows = (await client.query<{ pid: number; role: string; state: string; locks: string }>(LOCK_HOLDERS)).rows;
    return rows.map((r) => `pid ${r.pid} (role ${r.role}, ${r.state}: ${r.locks})`).join("; ");
  } catch {
    return "";
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Migrate the database at `connectionString` to the schema this package ships, and
 * (re)apply the SQL functions; the revision it is now at (e.g. `"0034"`). Safe to run
 * repeatedly and concurrently, with Node's and Python's migrations alike. The role needs
 * what `memexdb migrate` needs (on a fresh database: creating the vector extension and
 * the memex roles, e.g. a superuser or the database's owner with CREATEROLE); a first
 * migrate by a role that may not is refused before anything changes, with what an
 * administrator runs once (src/direct/roles.ts), and a role it could not give optional
 * functions is named in a warning (`onWarning`).
 */
export async function migrate(connectionString: string, options: MigrateOptions = {}): Promise<string> {
  const lockTimeoutMs = options.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
  const attempts = options.attempts ?? ATTEMPTS;
  const warn = options.onWarning ?? ((message: string) => console.warn(`memexdb migrate: ${message}`));
  const schema = readSchema();
  for (let attempt = 1; ; attempt++) {
    try {
      const { head, warnings } = await migrateOnce(connectionString, schema, lockTimeoutMs);
      for (const warning of warnings) warn(warning);
      return head;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "55P03") throw error; // lock_not_available
      const holders = await lockHolders(connectionString);
      if (attempt >= attempts) {
        throw new BusyError(
          `migrate waited ${lockTimeoutMs / 1000} s for a lock ${attempts} times and gave up (nothing was changed);` +
            ` sessions holding memexdb's tables: ${holders || "none found now"}. End them` +
            " (pg_terminate_backend) or let them finish, then migrate again.",
          { code: "busy", status: 503, cause: error },
        );
      }
      const pause = Math.min(500 * 2 ** (attempt - 1), 5000);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
