// migrate() in Node against databases of the test suite's PostgreSQL that
// tests/test_typescript_client.py prepares (and then compares with one the Python package
// migrated): an empty one, one Python brought to an older revision, one Python migrated,
// and an empty one that several migrations start on at once.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

import pg from "pg";

import { BusyError, ForbiddenError, MemexDirectClient, migrate } from "../dist/direct/index.js";

const env = process.env;
const needed = [
  "MEMEX_HEAD",
  "MEMEX_MIGRATE_EMPTY_URL",
  "MEMEX_MIGRATE_OLD_URL",
  "MEMEX_MIGRATE_OLD_REVISION",
  "MEMEX_MIGRATE_PYTHON_URL",
  "MEMEX_MIGRATE_CONCURRENT_URL",
  "MEMEX_MIGRATE_TENANT_URL",
];
const missing = needed.filter((name) => !env[name]);

async function query(url, sql, values = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The revision, and when the SQL layer was last applied (a migrate that found it in
 * place leaves that time as it was). */
async function state(url) {
  const [row] = await query(
    url,
    "select (select string_agg(version_num, ',') from memex.alembic_version) as revision," +
      " (select applied_at::text from memex.sql_layer_state) as applied_at," +
      " (select files_sha256 from memex.sql_layer_state) as files_sha256",
  );
  return row;
}

describe("migrate() in Node", { skip: missing.length ? `needs ${missing.join(", ")}` : false }, () => {
  test("an empty database: migrated to head; a second run changes nothing", async () => {
    const url = env.MEMEX_MIGRATE_EMPTY_URL;
    assert.equal(await migrate(url), env.MEMEX_HEAD);
    const first = await state(url);
    assert.equal(first.revision, env.MEMEX_HEAD);
    assert.match(first.files_sha256, /^[0-9a-f]{64}$/);
    assert.equal(await migrate(url), env.MEMEX_HEAD);
    assert.deepEqual(await state(url), first);
    // the schema works: the operator's SQL API answers
    assert.deepEqual(await query(url, "select * from memex.schema_state()"), [
      { revision: env.MEMEX_HEAD, migrating: false },
    ]);
  });

  test("a database Python migrated to an older revision: upgraded by the operator's client, its rows kept", async () => {
    const url = env.MEMEX_MIGRATE_OLD_URL;
    const [at] = await query(url, "select version_num from memex.alembic_version");
    assert.equal(at.version_num, env.MEMEX_MIGRATE_OLD_REVISION);
    const before = await query(url, "select content, importance from memex.memories order by content");
    assert.ok(before.length > 0);
    const operator = new MemexDirectClient({ connectionString: url });
    try {
      assert.equal(await operator.migrate(), env.MEMEX_HEAD);
    } finally {
      await operator.close();
    }
    assert.equal((await state(url)).revision, env.MEMEX_HEAD);
    const after = await query(url, "select content, importance from memex.memories order by content");
    assert.deepEqual(after, before);
  });

  test("a database Python migrated: found current, nothing applied again", async () => {
    const url = env.MEMEX_MIGRATE_PYTHON_URL;
    const before = await state(url);
    assert.equal(before.revision, env.MEMEX_HEAD);
    assert.equal(await migrate(url), env.MEMEX_HEAD);
    assert.deepEqual(await state(url), before);
  });

  test("concurrent migrations of an empty database: each returns head, one applies it", async () => {
    const url = env.MEMEX_MIGRATE_CONCURRENT_URL;
    const results = await Promise.all(Array.from({ length: 4 }, () => migrate(url)));
    assert.deepEqual(results, Array(4).fill(env.MEMEX_HEAD));
    const [versions] = await query(url, "select count(*)::int as n from memex.alembic_version");
    assert.equal(versions.n, 1);
  });

  test("the CommonJS build migrates too (it finds the package's sql/ from dist/cjs/)", async () => {
    const require = createRequire(import.meta.url);
    const direct = require("../dist/cjs/direct/index.js");
    assert.equal(await direct.migrate(env.MEMEX_MIGRATE_PYTHON_URL), env.MEMEX_HEAD);
  });

  test("a bound tenant role may not migrate", async () => {
    const tenant = new MemexDirectClient({ connectionString: env.MEMEX_MIGRATE_TENANT_URL });
    try {
      await assert.rejects(tenant.migrate(), ForbiddenError);
    } finally {
      await tenant.close();
    }
  });

  test("a lock held elsewhere: tried again, then BusyError naming who holds it, nothing changed", async () => {
    const url = env.MEMEX_MIGRATE_PYTHON_URL;
    // a changed SQL layer must be applied again, which needs the tables' locks
    await query(url, "update memex.sql_layer_state set files_sha256 = 'changed'");
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("begin");
      await holder.query("lock table memex.memories in access exclusive mode");
      const started = Date.now();
      await assert.rejects(migrate(url, { lockTimeoutMs: 200, attempts: 2 }), (error) => {
        assert.ok(error instanceof BusyError, String(error));
        assert.match(error.message, /2 times and gave up/);
        assert.match(error.message, /memories AccessExclusiveLock/);
        return true;
      });
      assert.ok(Date.now() - started >= 500, "it paused before trying again");
    } finally {
      await holder.query("rollback");
      await holder.end();
    }
    assert.equal((await state(url)).files_sha256, "changed");
    // once the lock is gone, the layer is applied again
    assert.equal(await migrate(url), env.MEMEX_HEAD);
    assert.match((await state(url)).files_sha256, /^[0-9a-f]{64}$/);
  });
});
