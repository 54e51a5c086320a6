/** The SQL API's errors as the client's typed errors (the classes of service mode), by
 * the SQLSTATEs of the error table (src/generated/errors.ts, written from the same table
 * as the Python package's `memexdb.errors.translate` reads): SQLSTATE MX422 and class 22
 * are `InvalidArgumentError` with the field from the error's COLUMN, MX404
 * `NotFoundError`, MX409 `ConflictError`, MX429 `RateLimitedError` (retry time from
 * DETAIL), 28000 `UnauthenticatedError`, 42501 `ForbiddenError`, a lock or statement
 * timeout and a lost deadlock or serialization conflict (40P01, 40001; the client retries
 * those first) `BusyError`, a lost connection `DatabaseUnavailableError`. */

import { ERROR_CLASSES, MemexError } from "../errors.js";
import { ERRORS } from "../generated/errors.js";

/** The fields of a driver error this mapping reads (`pg`'s DatabaseError has them). */
interface SqlError {
  code?: unknown;
  message?: unknown;
  column?: unknown;
  detail?: unknown;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** SQLSTATEs of a statement PostgreSQL rolled back whole because a concurrent transaction
 * won (a deadlock, a serialization conflict): running it again applies it once. */
export const RETRIED_SQLSTATES: ReadonlySet<string> = new Set(["40P01", "40001"]);

interface SqlStateKind {
  code: string;
  status: number;
  /** the error's message; null: the SQL error's own */
  message: string | null;
}

/** SQLSTATE (or a two-character class) -> its row of the error table. */
const BY_SQLSTATE: ReadonlyMap<string, SqlStateKind> = new Map(
  ERRORS.flatMap((kind) =>
    Object.entries(kind.sqlstates as Readonly<Record<string, string | null>>).map(
      ([state, message]) => [state, { code: kind.code, status: kind.status, message }] as const,
    ),
  ),
);

/** The typed error of a `pg` failure (the SQL API's SQLSTATE), or the error itself when it
 * is not one (a bug is not dressed up as a memexdb error). */
export function errorFromSql(error: unknown): unknown {
  if (error instanceof MemexError || !error || typeof error !== "object") return error;
  const sql = error as SqlError;
  const state = text(sql.code) ?? "";
  const kind =
    /^[0-9A-Z]{5}$/.test(state) ? (BY_SQLSTATE.get(state) ?? BY_SQLSTATE.get(state.slice(0, 2))) : undefined;
  if (kind === undefined) {
    if (!isConnectionFailure(error)) return error;
    const unavailable = BY_SQLSTATE.get("08")!;
    return new ERROR_CLASSES[unavailable.code]!(unavailable.message ?? "database is unavailable", {
      code: unavailable.code,
      status: unavailable.status,
      cause: error,
    });
  }
  const message = kind.message ?? text(sql.message) ?? "database error";
  const options = { code: kind.code, status: kind.status, cause: error };
  const cls = ERROR_CLASSES[kind.code] ?? MemexError;
  if (kind.code === "invalid_argument") {
    const field =
      text(sql.column) ??
      (state !== "MX422"
        ? message.includes("dimensions")
          ? "embedding"
          : "request"
        : message.includes(":")
          ? message.split(":", 1)[0]!
          : "request");
    const reason = message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
    return new cls(`${field}: ${reason}`, { ...options, fields: [{ field, message: reason }] });
  }
  if (kind.code === "rate_limited") {
    let retryAfter = 1;
    try {
      const detail: unknown = JSON.parse(text(sql.detail) ?? "{}");
      const seconds = (detail as { retry_after_seconds?: unknown }).retry_after_seconds;
      if (typeof seconds === "number") retryAfter = seconds;
    } catch {
      // no JSON detail: the default wait
    }
    return new cls(message, { ...options, retryAfter });
  }
  return new cls(message, options);
}

/** A socket-level failure of the driver (no SQLSTATE): refused, reset, unreachable. */
function isConnectionFailure(error: object): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EPIPE", "ETIMEDOUT", "ENOENT"].includes(code);
}
