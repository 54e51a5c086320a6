// The model in Node against the Python package's vectors: tests/minilm_reference.json
// (the reference texts, embedded by the Python package), and, given MEMEX_MINILM_LONG
// (written by tests/test_node_embeddings.py), long texts chunked and embedded by the
// Python package. Run: npm run build && npm test (tests/test_node_embeddings.py runs it).
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { DIM, estimatedTokens, lengthGroups, MiniLM, MODEL_DIR, MODEL_ID, ModelIntegrityError } from "../dist/index.js";

const REFERENCE =
  process.env.MEMEX_MINILM_REFERENCE ?? fileURLToPath(new URL("../../../tests/minilm_reference.json", import.meta.url));

let model;
before(async () => {
  model = await MiniLM.load();
});
after(async () => {
  await model.release();
});

function cosine(a, b) {
  let dot = 0;
  for (let d = 0; d < a.length; d++) dot += a[d] * b[d];
  return dot;
}

test("the Python package's model name and dimension", () => {
  assert.equal(model.modelId, "all-MiniLM-L6-v2-int8");
  assert.equal(MODEL_ID, "all-MiniLM-L6-v2-int8");
  assert.equal(model.dim, 384);
  assert.equal(DIM, 384);
});

test("vectors within cosine 0.999 of Python's on the reference texts", async () => {
  const reference = JSON.parse(readFileSync(REFERENCE, "utf8"));
  assert.ok(reference.texts.length >= 10);
  const batch = await model.embed(reference.texts);
  const single = [];
  for (const text of reference.texts) single.push((await model.embed([text]))[0]);
  reference.texts.forEach((text, i) => {
    assert.equal(batch[i].length, 384);
    assert.ok(cosine(batch[i], reference.vectors[i]) >= 0.999, `${text}: ${cosine(batch[i], reference.vectors[i])}`);
    assert.ok(cosine(single[i], reference.vectors[i]) >= 0.999, text);
    // unit length, and a batch (padded) gives each text's own vector
    assert.ok(Math.abs(cosine(batch[i], batch[i]) - 1) < 1e-5);
    assert.ok(cosine(batch[i], single[i]) > 0.99999, text);
  });
});

test("long texts chunked and embedded as the Python package does", { skip: !process.env.MEMEX_MINILM_LONG }, async () => {
  const expected = JSON.parse(readFileSync(process.env.MEMEX_MINILM_LONG, "utf8"));
  const plan = model.plan(expected.texts);
  assert.deepEqual(plan.tokens, expected.tokens);
  assert.deepEqual(plan.pieces, expected.pieces);
  const vectors = await model.embedInFull(expected.texts);
  expected.texts.forEach((text, i) => {
    assert.ok(cosine(vectors[i], expected.vectors[i]) >= 0.999, `text ${i}: ${cosine(vectors[i], expected.vectors[i])}`);
  });
  // a text that fits is one chunk: its vector is the model's vector of it
  const [short] = await model.embedInFull(["fits in one window"]);
  const [same] = await model.embed(["fits in one window"]);
  assert.deepEqual(Array.from(short), Array.from(same));
});

test("model calls grouped by length as Python groups them", () => {
  // memexdb.embedding.fastembed_model.length_groups on these lengths (CALL_OVERHEAD 64)
  assert.deepEqual(lengthGroups([5, 200, 6, 7, 256, 5]), [[0, 5, 2, 3], [1, 4]]);
  assert.deepEqual(lengthGroups([]), []);
  assert.equal(estimatedTokens("x".repeat(40), 254), 12);
  assert.equal(estimatedTokens("x".repeat(4000), 254), 256);
  assert.equal(estimatedTokens("🙂".repeat(8), 254), 4); // code points, as Python counts
});

test("blank texts and a single string are refused", async () => {
  await assert.rejects(model.embed(["ok", " \n\t"]), RangeError);
  await assert.rejects(model.embed("not an array"), TypeError);
  assert.deepEqual(await model.embed([]), []);
});

test("a model file that is not the verified one is refused", async () => {
  const dir = mkdtempSync(join(tmpdir(), "minilm-"));
  try {
    cpSync(fileURLToPath(MODEL_DIR), dir, { recursive: true });
    const bytes = readFileSync(join(dir, "model.onnx"));
    bytes[bytes.length - 1] ^= 1;
    writeFileSync(join(dir, "model.onnx"), bytes);
    await assert.rejects(MiniLM.load({ modelDir: dir }), (error) => {
      assert.ok(error instanceof ModelIntegrityError);
      assert.match(error.message, /expected 8199be6f/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("embedInFull answers a repeated text from its cache, the same vector", async () => {
  const cached = await MiniLM.load({ cacheEntries: 2 });
  try {
    const [first] = await cached.embedInFull(["a repeated query"]);
    assert.deepEqual(cached.cacheStats, { entries: 1, hits: 0, misses: 1 });
    first[0] = 42; // a caller's change reaches no cached vector
    const [again, other] = await cached.embedInFull(["a repeated query", "another one"]);
    assert.deepEqual(cached.cacheStats, { entries: 2, hits: 1, misses: 2 });
    const [fresh] = await model.embed(["a repeated query"]);
    assert.deepEqual(Array.from(again), Array.from(fresh));
    assert.notDeepEqual(Array.from(other), Array.from(again));
    // least recently used dropped first: used again, "a repeated query" outlives
    // "another one" when a third text comes
    await cached.embedInFull(["a repeated query"]);
    await cached.embedInFull(["a third text"]);
    assert.deepEqual(cached.cacheStats, { entries: 2, hits: 2, misses: 3 });
    await cached.embedInFull(["a repeated query"]);
    assert.deepEqual(cached.cacheStats, { entries: 2, hits: 3, misses: 3 });
    await cached.embedInFull(["another one"]);
    assert.deepEqual(cached.cacheStats, { entries: 2, hits: 3, misses: 4 });
  } finally {
    await cached.release();
  }
  const uncached = await MiniLM.load({ cacheEntries: 0 });
  try {
    await uncached.embedInFull(["a repeated query"]);
    await uncached.embedInFull(["a repeated query"]);
    assert.deepEqual(uncached.cacheStats, { entries: 0, hits: 0, misses: 2 });
  } finally {
    await uncached.release();
  }
});
