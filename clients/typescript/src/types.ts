/** Helper types over the generated OpenAPI types (src/generated/openapi.ts). */

/** `T` without `undefined`, or `{}` when the OpenAPI entry has none (`never`). */
type Part<T> = [NonNullable<T>] extends [never] ? {} : NonNullable<T>;

type Parameters<E, In extends "path" | "query"> = E extends { parameters: infer P }
  ? P extends { [K in In]?: infer V }
    ? Part<V>
    : {}
  : {};

type JsonBody<E> = E extends { requestBody: { content: { "application/json": infer J } } }
  ? J
  : E extends { requestBody?: { content: { "application/json": infer J } } }
    ? J
    : {};

type Flatten<T> = { [K in keyof T]: T[K] } & {};

/** The request of an operation: its path parameters, query string and JSON body as one
 * object (the fields of the operation's request model). */
export type RequestOf<E> = Flatten<Parameters<E, "path"> & Parameters<E, "query"> & JsonBody<E>>;

/** The JSON result of an operation with success status `S`. */
export type ResultOf<E, S extends number> = E extends { responses: infer R }
  ? S extends keyof R
    ? R[S] extends { content: { "application/json": infer J } }
      ? J
      : void
    : never
  : never;

/** Per-call options. */
export interface CallOptions {
  /** Abort the call (and its retries) with this signal. */
  signal?: AbortSignal;
  /** This call's timeout per attempt, in milliseconds (default: the client's). */
  timeoutMs?: number;
  /** How many times a call safe to repeat may be retried (default: the client's). */
  retries?: number;
}
