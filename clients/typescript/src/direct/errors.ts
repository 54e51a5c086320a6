/** The SQL API's errors as the client's typed errors (the classes of service mode, the
 * same mapping as the Python package's `memexdb.errors.translate`): SQLSTATE MX422 is
 * `InvalidArgumentError` with the field from the error's COLUMN, MX404 `NotFoundError`,
 * MX409 `ConflictError`, MX429 `RateLimitedError` (retry time from DETAIL), 28000
 * `UnauthenticatedError`, 42501 `ForbiddenError`, a lock or statement timeout and a
 * lost deadlock or serialization conflict (40P01, 40001; the client retries those first)
 * `BusyError`, a lost connection `DatabaseUnavailableError`. */

import {
  BusyError,
  ConflictError,
  DatabaseUnavailableError,
  ForbiddenError,
  InvalidArgumentError,
  MemexError,
  NotFoundError,
  RateLimitedError,
  UnauthenticatedError,
} from "../errors.js";

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

/** The typed error of a `pg` failure (the SQL API's SQLSTATE), or the error itself when it
 * is not one (a bug is not dressed up as a memexdb error). */
/** SQLSTATEs of a statement PostgreSQL rolled back whole because a concurrent transaction
 * won (a deadlock, a serialization conflict): running it again applies it once. */
export const RETRIED_SQLSTATES: ReadonlySet<string> = new Set(["40P01", "40001"]);

export function errorFromSql(error: unknown): unknown {
  if (error instanceof MemexError || !error || typeof error !== "object") return error;
  const sql = error as SqlError;
  const state = text(sql.code) ?? "";
  const message = text(sql.message) ?? "database error";
  const options = { code: "", status: 0, cause: error };
  switch (state) {
    case "MX422": {
      const field = text(sql.column) ?? (message.includes(":") ? message.split(":", 1)[0]! : "request");
      const reason = message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
      return new InvalidArgumentError(`${field}: ${reason}`, {
        ...options,
        code: "invalid_argument",
        status: 422,
        fields: [{ field, message: reason }],
      });
    }
    case "MX404":
      return new NotFoundError(message, { ...options, code: "not_found", status: 404 });
    case "MX409":
      return new ConflictError(message, { ...options, code: "conflict", status: 409 });
    case "MX429": {
      let retryAfter = 1;
      try {
        const detail: unknown = JSON.parse(text(sql.detail) ?? "{}");
        const seconds = (detail as { retry_after_seconds?: unknown }).retry_after_seconds;
        if (typeof seconds === "number") retryAfter = seconds;
      } catch {
        // no JSON detail: the default wait
      }
      return new RateLimitedError(message, { ...options, code: "rate_limited", status: 429, retryAfter });
    }
    case "28000":
      return new UnauthenticatedError(message, { ...options, code: "unauthenticated", status: 401 });
    case "42501":
      return new ForbiddenError(message, { ...options, code: "forbidden", status: 403 });
    case "55P03":
      return new BusyError("timed out waiting for a lock; nothing was applied", {
        ...options,
        code: "busy",
        status: 503,
      });
    case "57014":
      return new BusyError("the statement ran past its timeout; nothing was applied", {
        ...options,
        code: "busy",
        status: 503,
      });
    case "40P01":
    case "40001":
      return new BusyError(
        "a concurrent request held what this one needed (a deadlock or serialization conflict); nothing was applied",
        { ...options, code: "busy", status: 503 },
      );
  }
  if (state.startsWith("22")) {
    // a value of the wrong type or form (SQL's own check: not a uuid, not a timestamp)
    return new InvalidArgumentError(`request: ${message}`, {
      ...options,
      code: "invalid_argument",
      status: 422,
      fields: [{ field: "request", message }],
    });
  }
  if (state.startsWith("08") || ["57P01", "57P02", "57P03"].includes(state) || isConnectionFailure(error)) {
    return new DatabaseUnavailableError("database is unavailable", {
      ...options,
      code: "database_unavailable",
      status: 503,
    });
  }
  return error;
}

/** A socket-level failure of the driver (no SQLSTATE): refused, reset, unreachable. */
function isConnectionFailure(error: object): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EPIPE", "ETIMEDOUT", "ENOENT"].includes(code);
}
