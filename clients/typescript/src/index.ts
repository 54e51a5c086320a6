export { MemexClient } from "./client.js";
export type {
  ClientOptions,
  ExportedMemory,
  ExportRequest,
  HealthResponse,
  ImportResponse,
  ImportSource,
} from "./client.js";
export * from "./errors.js";
export { OPERATIONS } from "./generated/operations.js";
export type {
  Items,
  OperationName,
  PagedOperationName,
  Requests,
  Results,
} from "./generated/operations.js";
export type { components, paths } from "./generated/openapi.js";
export type { CallOptions } from "./types.js";
