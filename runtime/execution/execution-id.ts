/** The shape of an execution id: `x-<UTC yyyymmddThhmmssZ>-<8 lower hex>` (docs/protocol.md). */
export const EXECUTION_ID_PATTERN = /^x-\d{8}T\d{6}Z-[0-9a-f]{8}$/;

/** True when `value` has the shape of an execution id. Every surface checks this before any look-up. */
export function isExecutionId(value: unknown): value is string {
  return typeof value === "string" && EXECUTION_ID_PATTERN.test(value);
}

/** A fresh execution id stamped with `now` (UTC, second precision) and 32 random bits. */
export function newExecutionId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const random = crypto.getRandomValues(new Uint32Array(1))[0]!.toString(16).padStart(8, "0");
  return `x-${stamp}-${random}`;
}

/** The shape of a client-chosen `run_id`. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
