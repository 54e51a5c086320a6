// @memexdb/client/direct with this embedder, against a database as a role bound to a
// tenant (MEMEX_DIRECT_URL; tests/test_node_embeddings.py sets it up, with a memory the
// Python package stored, MEMEX_PYTHON_MEMORY_ID): stores carry their vectors when they
// commit, search is hybrid with a query vector made here, and a memory stored by Python
// ranks with one stored here. The search's rows go to MEMEX_RANK_OUT for the Python side
// to compare with its own search.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { MemexDirectClient } from "../../typescript/dist/direct/index.js";
import { MiniLM, MODEL_ID } from "../dist/index.js";

const env = process.env;
// `npm test` without a database: these need tests/test_node_embeddings.py's setup
const skip = env.MEMEX_DIRECT_URL ? false : "MEMEX_DIRECT_URL is not set (tests/test_node_embeddings.py sets it)";
const who = { agent_id: env.MEMEX_RANK_AGENT, user_id: env.MEMEX_RANK_USER };
let embedder;
let memex;

before(async () => {
  if (skip) return;
  embedder = await MiniLM.load();
  memex = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_URL, embedder });
});
after(async () => {
  await memex?.close();
  await embedder?.release();
});

test("a store carries its vector of the model when it commits (nothing queued)", { skip }, async () => {
  const node = JSON.parse(env.MEMEX_NODE_MEMORY);
  const stored = await memex.store({ ...who, ...node });
  assert.equal(stored.id, node.id);
  assert.equal(stored.embedding_model, MODEL_ID);
  const many = await memex.storeMany({
    memories: [
      { ...who, content: "Alice keeps her passport in the blue drawer", created_at: node.created_at },
      { ...who, content: "Alice's sister lives in Porto", created_at: node.created_at, memory_type: "semantic" },
    ],
  });
  assert.deepEqual(
    many.memories.map((m) => m.embedding_model),
    [MODEL_ID, MODEL_ID],
  );
});

test("writers that choose it still queue for the embed worker", { skip }, async () => {
  const queued = new MemexDirectClient({ connectionString: env.MEMEX_DIRECT_URL, embedder, queueStores: true });
  try {
    const stored = await queued.store({ ...who, content: "queued on purpose", metadata: { queued: true } });
    assert.equal(stored.embedding_model, "memex:queued");
  } finally {
    await queued.close();
  }
});

test("a blank content is refused naming its field, as the service does", { skip }, async () => {
  await assert.rejects(memex.store({ ...who, content: "   " }), (error) => {
    assert.equal(error.name, "InvalidArgumentError");
    assert.match(error.message, /content/);
    return true;
  });
});

test("search is hybrid with a local query vector and ranks Python's memory with Node's", { skip }, async () => {
  const node = JSON.parse(env.MEMEX_NODE_MEMORY);
  const found = await memex.search({ ...who, query: env.MEMEX_RANK_QUERY, now: env.MEMEX_RANK_NOW, top_k: 10 });
  assert.equal(found.mode, "hybrid");
  const ids = found.results.map((r) => r.id);
  assert.ok(ids.includes(node.id), "the memory stored here");
  assert.ok(ids.includes(env.MEMEX_PYTHON_MEMORY_ID), "the memory the Python package stored");
  for (const hit of found.results.filter((r) => [node.id, env.MEMEX_PYTHON_MEMORY_ID].includes(r.id))) {
    assert.ok(hit.similarity > 0.3, `${hit.content}: similarity ${hit.similarity}`);
  }
  // vector mode finds both by their vectors alone
  const vector = await memex.search({ ...who, query: env.MEMEX_RANK_QUERY, now: env.MEMEX_RANK_NOW, mode: "vector" });
  assert.ok(vector.results.some((r) => r.id === env.MEMEX_PYTHON_MEMORY_ID));
  assert.ok(vector.results.some((r) => r.id === node.id));
  writeFileSync(env.MEMEX_RANK_OUT, JSON.stringify({ hybrid: found.results, vector: vector.results }));
});
