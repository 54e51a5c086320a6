/** `@memexdb/client/direct`: direct-Postgres mode (needs the `pg` package). */
export { DEFAULTS, MemexDirectClient } from "./client.js";
export type { DirectClientOptions, DirectSearchResult } from "./client.js";
export { migrate } from "./migrate.js";
export type { MigrateOptions } from "./migrate.js";
export type { EmbeddingsEndpoint, LocalEmbedder } from "./embeddings.js";
export { LLMError } from "./agentic.js";
export type { ChatModelOptions, VectorSource } from "./agentic.js";
export * from "../errors.js";
export type { Items, Requests, Results } from "../generated/operations.js";
