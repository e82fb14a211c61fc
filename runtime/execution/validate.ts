import * as v from "valibot";
import type { AnySchema } from "../capability/declaration.ts";

/** One problem with a value, at a path like `input.files[2].name`. */
export interface ValueProblem {
  path: string;
  message: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: ValueProblem[] };

/** Parses `value` with a valibot schema and returns every problem with its path (no exception). */
export function checkValue<T = unknown>(schema: AnySchema, value: unknown, root: string): Checked<T> {
  const result = v.safeParse(schema, value);
  if (result.success) return { ok: true, value: result.output as T };
  return { ok: false, problems: result.issues.map((issue) => ({ path: pathOf(root, issue), message: messageOf(issue) })) };
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
