/** What a migration may not do without memexdb's roles, as `memexdb migrate` says it
 * (memexdb/migration_roles.py): both read the roles and their messages from the shipped
 * `sql/migration_roles.json`, and ask the database the same questions.
 *
 * A first migrate by a role that is neither a superuser nor has CREATEROLE (a managed
 * database's owner) cannot create the `vector` extension (not a trusted one) nor the base
 * roles: it is refused before anything changes, with what an administrator runs once.
 * After every migrate, each optional role (memex_text_lookup, memex_trigger_owner) whose
 * functions are not its own is named in a warning: the database works without it, slower
 * where it would own functions. */

import { readFileSync } from "node:fs";
import path from "node:path";

import type pg from "pg";

interface MigrationRoles {
  base_roles: Record<string, string>;
  member_of: string[];
  optional_roles: Record<string, { function: string; without: string; where: string }>;
  messages: { first_migrate: string; missing_role: string };
}

export function readMigrationRoles(schemaRoot: string): MigrationRoles {
  return JSON.parse(readFileSync(path.join(schemaRoot, "migration_roles.json"), "utf8")) as MigrationRoles;
}

/** `str.format` for the messages' `{name}` fields. */
function format(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}

async function row(client: pg.Client, sql: string, values: unknown[] = []): Promise<unknown[]> {
  const result = await client.query<unknown[]>({ text: sql, values, rowMode: "array" });
  return result.rows[0] ?? [];
}

/** What an administrator must run once before this role can create memexdb's schema
 * (empty when it may do it all): memexdb.migration_roles.first_migrate_steps. */
export async function firstMigrateSteps(client: pg.Client, roles: MigrationRoles): Promise<string[]> {
  const [me, superuser, createrole] = await row(
    client,
    "select current_user::text, rolsuper, rolcreaterole from pg_roles where rolname = current_user",
  );
  if (superuser) return [];
  const steps: string[] = [];
  const [installed, trusted] = await row(
    client,
    "select exists (select from pg_extension where extname = 'vector')," +
      " coalesce((select bool_or(trusted) from pg_available_extension_versions where name = 'vector'), false)",
  );
  if (!installed && !trusted) {
    const [database] = await row(client, "select current_database()");
    steps.push(`create extension vector;  -- connected to database ${database as string}`);
  }
  if (createrole) return steps;
  for (const [role, options] of Object.entries(roles.base_roles)) {
    const [absent] = await row(client, "select to_regrole($1) is null", [role]);
    if (absent) steps.push(`create role ${role} ${options};`);
  }
  for (const role of roles.member_of) {
    const [member] = await row(
      client,
      "select to_regrole($1) is not null and pg_has_role(current_user, $1, 'member')",
      [role],
    );
    if (!member) steps.push(`grant ${role} to "${me as string}";`);
  }
  return steps;
}

/** The refusal of a first migrate that may not create what the schema needs. */
export function firstMigrateRefusal(roles: MigrationRoles, steps: string[]): string {
  return format(roles.messages.first_migrate, { steps: steps.join("\n  ") });
}

/** The warning for each optional role whose functions are not its own after a migrate
 * (memexdb.migration_roles.missing_roles). */
export async function missingRoleWarnings(client: pg.Client, roles: MigrationRoles): Promise<string[]> {
  const functions = Object.values(roles.optional_roles).map((entry) => entry.function);
  const owners = new Map(
    (
      await client.query<[string, string]>({
        text:
          "select p.proname::text, pg_get_userbyid(p.proowner)::text from pg_proc p" +
          " where p.pronamespace = 'memex'::regnamespace and p.proname = any($1)",
        values: [functions],
        rowMode: "array",
      })
    ).rows,
  );
  return Object.entries(roles.optional_roles)
    .filter(([role, entry]) => owners.get(entry.function) !== role)
    .map(([role, entry]) => format(roles.messages.missing_role, { role, without: entry.without, where: entry.where }));
}
