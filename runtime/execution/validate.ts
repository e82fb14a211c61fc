import * as v from "valibot";
import type { AnySchema } from "../capability/declaration.ts";
import { REDACTED } from "./redaction.ts";
import { MIN_MASKED_LENGTH } from "./secret-mask.ts";

/** One problem with a value, at a path like `input.files[2].name`. */
export interface ValueProblem {
  path: string;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: ValueProblem[] };

/** The keys from the root to a problem: property names and array indexes. */
export type ValuePath = Array<string | number>;

/**
 * Parses `value` with a valibot schema and returns every problem with its path (no exception).
 * `isSecret(path)` names the places whose received value must not be quoted back (docs/handler-api.md).
 */
export function checkValue<T = unknown>(schema: AnySchema, value: unknown, root: string, isSecret?: (path: ValuePath) => boolean, withheld = SENSITIVE_NOTE): Checked<T> {
  const result = v.safeParse(schema, value);
  if (result.success) return { ok: true, value: result.output as T };
  return {
    ok: false,
    problems: result.issues.map((issue) => {
      const keys = (issue.path ?? []).map((item) => (item as { key: string | number }).key);
      return { path: pathOf(root, issue), message: isSecret?.(keys) ? withholdReceived(issue.message, issue.input, withheld) : messageOf(issue) };
    }),
  };
}

/** What a withheld value's message says in its place, for a sensitive input field. */
export const SENSITIVE_NOTE = "(the value given is not shown: the field is sensitive)";

/**
 * For a sensitive field the value is not repeated. valibot ends its messages "… but received
 * <value>" or, for checks that expect no one thing (email, url, uuid, a custom check), ": Received
 * <value>"; either ending goes, and the value itself anywhere else in the message (a custom
 * message may quote it) is `[redacted]`.
 */
function withholdReceived(message: string, input: unknown, note: string): string {
  let withheld = message.replace(/(?:\s*but received|:\s*Received) [\s\S]*$/, ` ${note}`);
  // As the masks do, a value shorter than MIN_MASKED_LENGTH is not hunted (it would blank letters).
  if (typeof input === "string" && input.length >= MIN_MASKED_LENGTH) {
    for (const form of new Set([input, JSON.stringify(input).slice(1, -1)])) withheld = withheld.split(form).join(REDACTED);
  }
  return withheld;
}

function pathOf(root: string, issue: v.BaseIssue<unknown>): string {
  let path = root;
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    path += typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(String(key)) ? `.${String(key)}` : `[${JSON.stringify(key)}]`;
  }
  return path;
}

function messageOf(issue: v.BaseIssue<unknown>): string {
  // valibot's messages read "Invalid type: Expected number but received "ten""; keep them, they name the value.
  return issue.message;
}

/** "input.limit: Invalid type: …; input.path: …" — every problem in one sentence. */
export function describeProblems(problems: ValueProblem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join("; ");
}
