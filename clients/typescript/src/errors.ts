/** Typed errors: one class per `error.code` of the API's error body
 * (`{"error": {"code", "message", "fields", "retry_after_seconds"}}`, docs/rest.md); the
 * codes, statuses and SQLSTATEs are the error table's (src/generated/errors.ts). */

import { ERRORS, type ErrorName } from "./generated/errors.js";

/** A bad field of an `invalid_argument` answer. */
export interface FieldError {
  field: string;
  message: string;
}

/** The error body of the API. */
export interface ErrorBody {
  code: string;
  message: string;
  fields?: FieldError[];
  retry_after_seconds?: number | null;
}

/** Any error the client raises. */
export class MemexError extends Error {
  /** The API's error code (`invalid_argument`, `not_found`, ...; `timeout` and
   * `connection_failed` for the client's own). */
  readonly code: string;
  /** The HTTP status (0 when no answer came). */
  readonly status: number;
  /** The bad fields of an `invalid_argument` answer (else empty). */
  readonly fields: FieldError[];
  /** Seconds the service asked to wait (Retry-After), if it did. */
  readonly retryAfter: number | undefined;

  constructor(
    message: string,
    options: {
      code?: string;
      status?: number;
      fields?: FieldError[];
      retryAfter?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? "memex_error";
    this.status = options.status ?? 0;
    this.fields = options.fields ?? [];
    this.retryAfter = options.retryAfter;
  }
}

/** 422: the request is not valid; `fields` names each bad field. */
export class InvalidArgumentError extends MemexError {}
/** 404: no such memory, file, revision, key or run (for this tenant). */
export class NotFoundError extends MemexError {}
/** 409: a stale `base_revision`, a patch that does not apply, a duplicate. */
export class ConflictError extends MemexError {}
/** 401: no API key where one is needed, or not a valid one. */
export class UnauthenticatedError extends MemexError {}
/** 403: the key may not do this. */
export class ForbiddenError extends MemexError {}
/** 429: too many requests; `retryAfter` says how long to wait. */
export class RateLimitedError extends MemexError {}
/** 503 `busy`: the service is overloaded; try again later. */
export class BusyError extends MemexError {}
/** 503: the database is unavailable. */
export class DatabaseUnavailableError extends MemexError {}
/** 413: the body is over the service's limit. */
export class PayloadTooLargeError extends MemexError {}
/** 405: no such method on this path. */
export class MethodNotAllowedError extends MemexError {}
/** 415: a body of another media type than the endpoint reads. */
export class UnsupportedMediaTypeError extends MemexError {}
/** 421: the service does not answer this Host. */
export class HostNotAllowedError extends MemexError {}
/** 403 `origin_not_allowed`: a browser Origin the service does not allow. */
export class OriginNotAllowedError extends MemexError {}
/** 500: the service failed (never with internal details). */
export class InternalError extends MemexError {}
/** The call took longer than its timeout. */
export class TimeoutError extends MemexError {}
/** No answer: the service could not be reached, or the connection broke. */
export class ConnectionError extends MemexError {}

type ErrorClass = new (message: string, options?: ConstructorParameters<typeof MemexError>[1]) => MemexError;

/** The class of each name of the error table (a row naming no class here fails to compile). */
const CLASSES: Readonly<Record<ErrorName, ErrorClass>> = {
  InvalidArgument: InvalidArgumentError,
  NotFound: NotFoundError,
  Conflict: ConflictError,
  Unauthenticated: UnauthenticatedError,
  Forbidden: ForbiddenError,
  RateLimited: RateLimitedError,
  Busy: BusyError,
  DatabaseUnavailable: DatabaseUnavailableError,
  PayloadTooLarge: PayloadTooLargeError,
  MethodNotAllowed: MethodNotAllowedError,
  UnsupportedMediaType: UnsupportedMediaTypeError,
  HostNotAllowed: HostNotAllowedError,
  OriginNotAllowed: OriginNotAllowedError,
  Internal: InternalError,
};

/** The error class of each `error.code` (the error table, src/generated/errors.ts). */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = Object.fromEntries(
  ERRORS.map((kind) => [kind.code, CLASSES[kind.name]]),
);

/** The code a bare answer with a status stands for: the table's first row of it. */
const BY_STATUS: Readonly<Record<number, string>> = Object.fromEntries(
  [...ERRORS].reverse().map((kind) => [kind.status, kind.code]),
);

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), if any. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/** The typed error of an HTTP answer that is not a success. */
export function errorFromResponse(status: number, text: string, retryAfterHeader: string | null): MemexError {
  let body: ErrorBody | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && "error" in parsed) {
      const error = (parsed as { error: unknown }).error;
      if (error && typeof error === "object" && "code" in error) body = error as ErrorBody;
    }
  } catch {
    // not JSON: classified by status below
  }
  const code = body?.code ?? BY_STATUS[status] ?? "http_error";
  const cls = ERROR_CLASSES[code] ?? MemexError;
  const retryAfter = parseRetryAfter(retryAfterHeader) ?? body?.retry_after_seconds ?? undefined;
  const fields = body?.fields ?? [];
  let message = body?.message ?? (text.slice(0, 500) || `HTTP ${status}`);
  if (fields.length) message += `: ${fields.map((f) => `${f.field}: ${f.message}`).join("; ")}`;
  return new cls(message, { code, status, fields, retryAfter });
}
