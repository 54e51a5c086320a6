// Compiled (not run) by `npm run build`: direct mode takes service mode's request types
// and answers its result types (search with its `mode`); a wrong field is a compile error.
import { MemexDirectClient, NotFoundError, type Results } from "../src/direct/index.js";

declare const direct: MemexDirectClient;
const who = { agent_id: "a", user_id: "u" };

export async function usage(): Promise<void> {
  const stored: Results["store"] = await direct.store({ ...who, content: "x", memory_type: "semantic" });
  const found = await direct.search({ ...who, query: "x", top_k: 3 });
  const mode: "vector" | "text" | "hybrid" = found.mode;
  const results: Results["search"]["results"] = found.results;
  const page: Results["listMemories"] = await direct.listMemories({ ...who, limit: 10 });
  const nothing: void = await direct.forget({ ...who, memory_id: stored.id });
  // @ts-expect-error: content is required
  await direct.store({ ...who });
  // @ts-expect-error: top_k is a number
  await direct.search({ ...who, query: "x", top_k: "3" });
  // @ts-expect-error: service-only (the model runs in the service)
  await direct.embedTexts({ input: ["x"] });
  try {
    await direct.get({ ...who, memory_id: stored.id });
  } catch (error) {
    if (error instanceof NotFoundError) void error.status;
  }
  void [mode, results, page, nothing];
}
