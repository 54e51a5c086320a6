// Compiled (not run) by `npm run build`: the generated types give each method its
// request and result; a wrong field or a missing one is a compile error.
import {
  InvalidArgumentError,
  MemexClient,
  type Items,
  type Requests,
  type Results,
} from "../src/index.js";

declare const client: MemexClient;
const who = { agent_id: "a", user_id: "u" };

export async function usage(): Promise<void> {
  const stored: Results["store"] = await client.store({ ...who, content: "x", memory_type: "semantic" });
  const id: string = stored.id;
  const found = await client.search({ ...who, query: "x", top_k: 3 });
  const score: number | undefined = found.results[0]?.score;
  const got = await client.get({ ...who, memory_id: id });
  const content: string = got.content;
  await client.update({ ...who, memory_id: id, importance: 2 });
  const nothing: void = await client.forget({ ...who, memory_id: id });
  for await (const memory of client.iterListMemories({ ...who, limit: 10 })) {
    const m: Items["listMemories"] = memory;
    void m.id;
  }
  const file = await client.writeFile({ ...who, path: "user/notes.md", content: "# Notes" });
  const revision: number = file.revision;
  await client.dreamConfig();
  const request: Requests["count"] = { ...who };
  // @ts-expect-error: content is required
  await client.store({ ...who });
  // @ts-expect-error: no such operation
  await client.call("noSuchOperation", {});
  // @ts-expect-error: a store result has no results
  void stored.results;
  try {
    await client.count(request);
  } catch (error) {
    if (error instanceof InvalidArgumentError) void error.fields[0]?.field;
  }
  void [score, content, nothing, revision];
}
