// Direct-Postgres mode against the database of a live `memexdb serve` (whose embed worker
// embeds what direct mode queues, and whose /v1/embeddings embeds its queries), as SQL
// roles bound to a tenant. tests/test_typescript_client.py sets the environment.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import pg from "pg";

import {
  ConflictError,
  DEFAULTS,
  ForbiddenError,
  InvalidArgumentError,
  MemexDirectClient,
  MemexError,
  NotFoundError,
} from "../dist/direct/index.js";

const env = process.env;
const needed = ["MEMEX_DIRECT_URL", "MEMEX_DIRECT_OTHER_URL", "MEMEX_DIRECT_OPERATOR_URL", "MEMEX_URL", "MEMEX_API_KEY"];
const missing = needed.filter((name) => !env[name]);
const alice = { agent_id: "direct-agent", user_id: "alice" };
const bob = { agent_id: "other-agent", user_id: "bob" };
const embeddings = { url: `${env.MEMEX_URL}/v1/embeddings`, apiKey: env.MEMEX_API_KEY };

/** Poll `probe` until it returns something truthy: at most `seconds`, every 200 ms. */
async function eventually(probe, seconds) {
  const deadline = Date.now() + seconds * 1000;
  for (let round = 0; round < seconds * 5; round++) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`not within ${seconds} s`);
}

describe("direct mode", { skip: missing.length ? `needs ${missing.join(", ")}` : false }, () => {
  let text; // no embeddings endpoint: text mode
  let vector; // the service's /v1/embeddings for queries
  let other;
  before(() => {
    text = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_URL });
    vector = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_URL, embeddings });
    other = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_OTHER_URL });
  });
  after(async () => {
    await Promise.all([text.close(), vector.close(), other.close()]);
  });

  test("a store goes in through the embed queue; the worker embeds it; vector search finds it", async () => {
    const stored = await text.store({ ...alice, content: "Alice keeps her bicycle in the red shed", memory_type: "semantic" });
    assert.match(stored.id, /^[0-9a-f-]{36}$/);
    assert.equal(stored.content, "Alice keeps her bicycle in the red shed");
    assert.match(stored.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const embedded = await eventually(async () => {
      const memory = await text.get({ ...alice, memory_id: stored.id });
      return memory.embedding_model !== "memex:queued" && memory;
    }, 60);
    assert.ok(embedded.embedding_model, "the worker stored its model with the vector");
    const repeat = await text.store({ ...alice, id: stored.id, content: stored.content, memory_type: "semantic" });
    assert.equal(repeat.embedding_model, embedded.embedding_model, "a repeat keeps the vector, queues nothing");

    const found = await vector.search({ ...alice, query: "where is the bike kept?", mode: "vector", top_k: 3 });
    assert.equal(found.mode, "vector");
    const hit = found.results.find((r) => r.id === stored.id);
    assert.ok(hit, JSON.stringify(found));
    assert.ok(hit.similarity > 0.3, `similarity ${hit.similarity}`);

    const hybrid = await vector.search({ ...alice, query: "bicycle shed" });
    assert.equal(hybrid.mode, "hybrid");
    assert.equal(hybrid.results[0].id, stored.id);
  });

  test("without an embeddings endpoint search runs in text mode and says so", async () => {
    const stored = await text.store({ ...alice, content: "Alice's passport expires in March" });
    const found = await text.search({ ...alice, query: "passport" });
    assert.equal(found.mode, "text");
    assert.equal(found.total, found.results.length);
    const hit = found.results.find((r) => r.id === stored.id);
    assert.ok(hit, "a memory still queued is found by text at once");
    assert.equal(hit.similarity, null);
    assert.ok(hit.text_rank > 0);
    await assert.rejects(text.search({ ...alice, query: "passport", mode: "vector" }), (error) => {
      assert.ok(error instanceof InvalidArgumentError);
      assert.equal(error.fields[0].field, "mode");
      return true;
    });
  });

  test("search and list pass the request's filters on to SQL", async () => {
    const stored = await text.store({ ...alice, content: "Alice's gym locker code is qzx7731", memory_type: "procedural" });
    const found = (request) => text.search({ ...alice, query: "qzx7731", ...request });
    assert.ok((await found({})).results.some((r) => r.id === stored.id));
    assert.equal((await found({ created_after: "2999-01-01T00:00:00Z" })).total, 0);
    // (a text search ranks every live memory: those without the term at relevance 0)
    const semantic = await found({ memory_types: ["semantic"] });
    assert.ok(semantic.results.every((r) => r.memory_type === "semantic"), JSON.stringify(semantic));
    assert.ok(!semantic.results.some((r) => r.id === stored.id));
    assert.ok((await found({ metadata: {} })).results.some((r) => r.id === stored.id));
    const listed = await text.listMemories({ ...alice, memory_type: "procedural", limit: 1000 });
    assert.ok(listed.memories.some((m) => m.id === stored.id));
    assert.ok(listed.memories.every((m) => m.memory_type === "procedural"));
    assert.equal((await text.listMemories({ ...alice, created_before: "2000-01-01T00:00:00Z" })).memories.length, 0);
  });

  test("storeMany, count, list with its cursor, update, forget", async () => {
    const who = { agent_id: "direct-agent", user_id: "alice" };
    const before = (await text.count(who)).count;
    const batch = await text.storeMany({
      memories: [1, 2, 3].map((n) => ({ ...who, content: `numbered note ${n}`, metadata: { n } })),
    });
    assert.equal(batch.total, 3);
    assert.deepEqual(batch.memories.map((m) => m.metadata.n), [1, 2, 3]);
    assert.equal((await text.count(who)).count, before + 3);
    assert.equal((await text.count({ ...who, metadata: { n: 2 } })).count, 1);

    const page = await text.listMemories({ ...who, limit: 2 });
    assert.equal(page.memories.length, 2);
    assert.ok(page.next_cursor);
    const all = [];
    for await (const memory of text.iterListMemories({ ...who, limit: 2 })) all.push(memory.id);
    assert.equal(all.length, before + 3);
    assert.equal(new Set(all).size, all.length);

    const target = batch.memories[0];
    const changed = await text.update({ ...who, memory_id: target.id, importance: 1.5, metadata: { n: 10 } });
    assert.equal(changed.importance, 1.5);
    assert.deepEqual(changed.metadata, { n: 10 });
    await assert.rejects(text.update({ ...who, memory_id: target.id, content: "new words" }), InvalidArgumentError);
    const rewritten = await vector.update({ ...who, memory_id: target.id, content: "numbered note one" });
    assert.equal(rewritten.content, "numbered note one");
    assert.notEqual(rewritten.embedding_model, "memex:queued");

    await text.forget({ ...who, memory_id: target.id });
    await assert.rejects(text.get({ ...who, memory_id: target.id }), NotFoundError);
  });

  test("storeMany and store take supersedes: in batch order, all or nothing", async () => {
    const who = alice;
    const before = (await text.count(who)).count;
    const paris = await text.store({ ...who, content: "Alice lived in Paris once" });
    const berlin = randomUUID();
    const batch = await text.storeMany({
      memories: [
        { ...who, id: berlin, content: "Alice moved to Berlin", supersedes: [paris.id] },
        { ...who, content: "Alice moved on to Lisbon", supersedes: [berlin] },
      ],
    });
    assert.deepEqual(batch.memories.map((m) => m.supersedes), [[paris.id], [berlin]]);
    assert.equal((await text.get({ ...who, memory_id: paris.id })).superseded_by, berlin);
    assert.equal(batch.memories[0].superseded_by, batch.memories[1].id);
    assert.equal((await text.count(who)).count, before + 1);
    // an id that is no memory of this tenant: nothing of the batch is stored
    const items = [{ ...who, content: "x" }, { ...who, content: "y", supersedes: [randomUUID()] }];
    await assert.rejects(text.storeMany({ memories: items }), NotFoundError);
    await assert.rejects(text.store({ ...who, content: "z", valid_to: "2030-01-01T00:00:00Z" }), InvalidArgumentError);
    assert.equal((await text.count(who)).count, before + 1);
  });

  test("memory history: revisions, diff, revert, as_of (issue 36)", async () => {
    const who = alice;
    const stored = await vector.store({ ...who, content: "Alice lives in Paris." });
    const changed = await vector.update({ ...who, memory_id: stored.id, content: "Alice lives in Lyon.", importance: 1.5 });
    assert.equal(changed.content, "Alice lives in Lyon.");
    const history = await text.memoryHistory({ ...who, memory_id: stored.id });
    assert.deepEqual(history.revisions.map((r) => [r.revision, r.operation]), [[2, "update"], [1, "store"]]);
    assert.equal(history.next_before, null);
    const each = [];
    for await (const revision of text.iterMemoryHistory({ ...who, memory_id: stored.id, limit: 1 })) each.push(revision.revision);
    assert.deepEqual(each, [2, 1]);
    const diff = await text.memoryRevisionDiff({ ...who, memory_id: stored.id, from_revision: 1, to_revision: 2 });
    assert.match(diff.content, /^-Alice lives in Paris\.$/m);
    assert.match(diff.content, /^\+Alice lives in Lyon\.$/m);
    assert.deepEqual(diff.fields.importance, { from: 1, to: 1.5 });
    const reverted = await text.revertMemory({ ...who, memory_id: stored.id, revision: 1 });
    assert.equal(reverted.content, "Alice lives in Paris.");
    const after = await text.memoryHistory({ ...who, memory_id: stored.id });
    assert.deepEqual(after.revisions.map((r) => r.operation), ["revert", "update", "store"]);
    const then = after.revisions[1].at;
    assert.equal((await text.get({ ...who, memory_id: stored.id, as_of: then })).content, "Alice lives in Lyon.");
    await assert.rejects(text.memoryHistory({ ...who, memory_id: randomUUID() }), NotFoundError);
  });

  test("files: write, patch, restore (embedded at the endpoint), read, list, revisions, diff, delete", async () => {
    const file = { ...alice, path: "user/direct-notes.md" };
    await assert.rejects(text.writeFile({ ...file, content: "# Notes\n" }), InvalidArgumentError);
    const first = await vector.writeFile({ ...file, content: "# Notes\n- likes tea\n" });
    assert.equal(first.revision, 1);
    const second = await vector.writeFile({ ...file, content: "# Notes\n- likes coffee\n", base_revision: 1 });
    assert.equal(second.revision, 2);
    await assert.rejects(vector.writeFile({ ...file, content: "stale", base_revision: 1 }), ConflictError);
    assert.equal((await text.readFile(file)).content, "# Notes\n- likes coffee\n");
    const listed = await text.listFiles({ ...alice, prefix: "user/" });
    assert.ok(listed.files.some((f) => f.path === file.path));
    await vector.writeFile({ ...alice, path: "user/direct-other.md", content: "other" });
    const paths = [];
    for await (const entry of text.iterListFiles({ ...alice, prefix: "user/direct-", limit: 1 })) paths.push(entry.path);
    assert.deepEqual(paths, ["user/direct-notes.md", "user/direct-other.md"]);
    const revisions = await text.listRevisions(file);
    assert.deepEqual(revisions.revisions.map((r) => r.revision), [2, 1]);
    const each = [];
    for await (const revision of text.iterListRevisions({ ...file, limit: 1 })) each.push(revision.revision);
    assert.deepEqual(each, [2, 1]);
    assert.equal((await text.getRevision({ ...file, revision: 1 })).content, "# Notes\n- likes tea\n");
    const diff = await text.diffRevisions({ ...file, from_revision: 1, to_revision: 2 });
    assert.match(diff.diff, /^-- likes tea$/m);
    assert.match(diff.diff, /^\+- likes coffee$/m);
    await assert.rejects(text.patchFile({ ...file, heading: "## Later", append: "- x" }), InvalidArgumentError);
    const patched = await vector.patchFile({ ...file, heading: "## Later", append: "- buy beans" });
    assert.equal(patched.revision, 3);
    assert.match(patched.content, /## Later\n\n- buy beans\n$/);
    await assert.rejects(vector.patchFile({ ...file, old_text: "coffee", new_text: "cocoa", base_revision: 2 }), ConflictError);
    const restored = await vector.restoreRevision({ ...file, revision: 1 });
    assert.equal(restored.revision, 4);
    assert.equal(restored.content, "# Notes\n- likes tea\n");
    await assert.rejects(text.smartRead({ ...alice, query: "tea" }), (error) => error.fields[0].field === "query");
    const read = await vector.smartRead({ ...alice, query: "what does Alice like to drink?", budget: 500 });
    assert.ok(read.chars <= 500 && read.sources.length > 0, JSON.stringify(read));
    const log = await text.accessLog({ ...alice, limit: 5 });
    assert.ok(log.events.length > 0);
    await text.deleteFile(file);
    await assert.rejects(text.readFile(file), NotFoundError);
  });

  test("a bound role reaches its own tenant only", async () => {
    const bobs = await other.store({ ...bob, content: "Bob's locker code is 4411" });
    // alice's role may not name bob's tenant at all
    for (const call of [
      () => text.search({ ...bob, query: "locker code" }),
      () => text.listMemories(bob),
      () => text.get({ ...bob, memory_id: bobs.id }),
      () => text.store({ ...bob, content: "planted by alice" }),
      () => text.count(bob),
    ]) {
      await assert.rejects(call(), ForbiddenError);
    }
    // nor find bob's memory through her own
    await assert.rejects(text.get({ ...alice, memory_id: bobs.id }), NotFoundError);
    const found = await text.search({ ...alice, query: "locker code 4411" });
    assert.ok(found.results.every((r) => r.id !== bobs.id));
    assert.equal((await other.count(bob)).count, 1);
  });

  test("migrate() is the operator's: refused for a bound tenant role", async () => {
    await assert.rejects(text.migrate(), (error) => {
      assert.ok(error instanceof ForbiddenError, String(error));
      assert.equal(error.code, "forbidden");
      assert.match(error.message, /operator/);
      return true;
    });
  });

  test("migrate() for the operator: in Node, the database already at head", async () => {
    const operator = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_OPERATOR_URL });
    try {
      assert.match(await operator.migrate(), /^\d{4}$/);
    } finally {
      await operator.close();
    }
  });

  test("a call that loses a deadlock is run again and applied once", async () => {
    // the operator holds alice's tenant row; the write takes the file's lock and waits for
    // the row; the operator then asks for the file's lock: a deadlock, which the write's
    // backend detects first (the operator's waits 20 s before looking) and loses
    const file = { ...alice, path: "user/deadlock.md" };
    await text.store({ ...alice, content: "the tenant exists" });
    const holder = new pg.Client({ connectionString: env.MEMEX_DIRECT_OPERATOR_URL });
    const watcher = new pg.Client({ connectionString: env.MEMEX_DIRECT_OPERATOR_URL });
    await Promise.all([holder.connect(), watcher.connect()]);
    try {
      const deadlocks = async () =>
        Number((await watcher.query("select deadlocks from pg_stat_database where datname = current_database()")).rows[0].deadlocks);
      const before = await deadlocks();
      await holder.query("begin");
      await holder.query("set local deadlock_timeout = '20s'");
      await holder.query("select 1 from memex.tenants where agent_id = $1 and user_id = $2 for update", [alice.agent_id, alice.user_id]);
      const write = vector.writeFile({ ...file, content: "written despite the deadlock" });
      await eventually(async () => {
        const waiting = await watcher.query(
          "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query like '%write_file%'",
        );
        return waiting.rows[0].n === 1;
      }, 10);
      await holder.query(
        "select pg_advisory_xact_lock(memex._lock_key('file', jsonb_build_array($1::text, $2::text, $3::text)::text))",
        [file.agent_id, file.user_id, file.path],
      );
      await holder.query("rollback");
      assert.equal((await write).revision, 1);
      assert.equal((await text.readFile(file)).content, "written despite the deadlock");
      assert.equal((await text.listRevisions(file)).revisions.length, 1);
      await eventually(async () => (await deadlocks()) === before + 1, 10);
    } finally {
      await Promise.all([holder.end(), watcher.end()]);
    }
  });

  test("the defaults direct mode fills in are the REST API's", async () => {
    const response = await fetch(`${env.MEMEX_URL}/openapi.json`);
    const document = await response.json();
    const limit = (path) => document.paths[path].get.parameters.find((p) => p.name === "limit").schema.default;
    const field = (schema, name) => document.components.schemas[schema].properties[name].default;
    assert.deepEqual(DEFAULTS, {
      searchTopK: field("MemorySearchRequest", "top_k"),
      listMemoriesLimit: limit("/v1/memories"),
      listFilesLimit: limit("/v1/files"),
      listRevisionsLimit: limit("/v1/files/revisions"),
      memoryHistoryLimit: limit("/v1/memories/{memory_id}/revisions"),
      accessLogLimit: limit("/v1/access-log"),
      smartReadBudget: field("SmartReadRequest", "budget"),
    });
  });

  test("the SQL API's errors are service mode's typed errors", async () => {
    await assert.rejects(text.store({ ...alice, content: "   " }), (error) => {
      assert.ok(error instanceof InvalidArgumentError);
      assert.equal(error.code, "invalid_argument");
      assert.equal(error.status, 422);
      assert.equal(error.fields[0].field, "content");
      return true;
    });
    await assert.rejects(text.search({ ...alice, query: "x", top_k: 0 }), (error) => {
      assert.ok(error instanceof InvalidArgumentError);
      assert.equal(error.fields[0].field, "top_k");
      return true;
    });
    await assert.rejects(text.get({ ...alice, memory_id: randomUUID() }), NotFoundError);
    await assert.rejects(text.get({ ...alice, memory_id: "not-a-uuid" }), InvalidArgumentError);
    const id = randomUUID();
    const first = await text.store({ ...alice, id, content: "stored once" });
    const again = await text.store({ ...alice, id, content: "stored once" });
    assert.equal(again.id, first.id, "a repeat of the same id and memory is answered with it");
    await assert.rejects(text.store({ ...alice, id, content: "something else" }), ConflictError);
    const unreachable = new MemexDirectClient({ connectionString: "postgresql://nobody@127.0.0.1:1/none" });
    try {
      await assert.rejects(unreachable.count(alice), (error) => {
        assert.ok(error instanceof MemexError);
        assert.equal(error.code, "database_unavailable");
        return true;
      });
    } finally {
      await unreachable.close();
    }
  });
});
