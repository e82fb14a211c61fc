import * as v from "valibot";
import type { AnySchema } from "../capability/declaration.ts";

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
export function checkValue<T = unknown>(schema: AnySchema, value: unknown, root: string, isSecret?: (path: ValuePath) => boolean): Checked<T> {
  const result = v.safeParse(schema, value);
  if (result.success) return { ok: true, value: result.output as T };
  return {
    ok: false,
    problems: result.issues.map((issue) => {
      const keys = (issue.path ?? []).map((item) => (item as { key: string | number }).key);
      return { path: pathOf(root, issue), message: isSecret?.(keys) ? withholdReceived(issue.message) : messageOf(issue) };
    }),
  };
}

/** valibot says "… but received <value>": for a sensitive field the value is not repeated. */
function withholdReceived(message: string): string {
  return message.replace(/\s*but received [\s\S]*$/, " (the value given is not shown: the field is sensitive)");
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
