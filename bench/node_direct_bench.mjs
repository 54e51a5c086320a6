// The Node side of bench/node_direct_bench.py: @memexdb/client/direct with @memexdb/minilm,
// as a role bound to the tenant (MEMEX_DIRECT_URL). Reads one JSON round a line on stdin
// ({agent_id, user_id, texts, batch, queries, now}), answers one JSON line of timings
// (seconds): each store, each storeMany batch, each search. Needs clients/minilm and
// clients/typescript built (npm run build in each).
import { createInterface } from "node:readline";

import { MemexDirectClient } from "../clients/typescript/dist/direct/index.js";
import { MiniLM } from "../clients/minilm/dist/index.js";

const loaded = performance.now();
const embedder = await MiniLM.load();
const memex = new MemexDirectClient({ connectionString: process.env.MEMEX_DIRECT_URL, embedder });
process.stdout.write(`${JSON.stringify({ ready: true, load_s: (performance.now() - loaded) / 1000 })}\n`);

const seconds = (start) => (performance.now() - start) / 1000;

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const round = JSON.parse(line);
  const who = { agent_id: round.agent_id, user_id: round.user_id };
  const store = [];
  for (const content of round.texts) {
    const start = performance.now();
    await memex.store({ ...who, content });
    store.push(seconds(start));
  }
  const storeMany = [];
  for (let lo = 0; lo < round.many.length; lo += round.batch) {
    const memories = round.many.slice(lo, lo + round.batch).map((content) => ({ ...who, content }));
    const start = performance.now();
    await memex.storeMany({ memories });
    storeMany.push(seconds(start));
  }
  const search = [];
  let hits = 0;
  for (const query of round.queries) {
    const start = performance.now();
    const found = await memex.search({ ...who, query, now: round.now });
    search.push(seconds(start));
    hits += found.results.length;
  }
  process.stdout.write(`${JSON.stringify({ store, store_many: storeMany, search, hits })}\n`);
}
await memex.close();
await embedder.release();
