import * as v from "valibot";
import type { AnySchema } from "../capability/declaration.ts";
import { REDACTED } from "./redaction.ts";
import { didYouMean, didYouMeanText } from "../capability/did-you-mean.ts";
import { MIN_MASKED_LENGTH, type SecretMask } from "./secret-mask.ts";
import { thrownClass } from "./thrown.ts";
import { schemaNodes } from "../capability/schema-nodes.ts";
import { pathStep } from "./json-path.ts";

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
export function checkValue<T = unknown>(schema: AnySchema, value: unknown, root: string, isSecret?: (path: ValuePath) => boolean, withheld = SENSITIVE_NOTE, hidesKey?: (path: ValuePath) => boolean): Checked<T> {
  const { copy, restore } = readsPrototypeNames(schema) ? ownMembersOnly(value) : { copy: value, restore: () => undefined };
  let result: ReturnType<typeof v.safeParse>;
  try {
    result = v.safeParse(schema, copy);
  } catch (error) {
    // A check or transform of the capability's own schema that throws (`v.check((o) => new
    // URL(o.link)…)`) is no answer about the value: it is refused as not checkable, never let
    // through and never thrown on (an exception here once left an execution running for ever).
    // Only the error's class is named: its message may quote the value, a secret included.
    restore();
    return { ok: false, problems: [{ path: root, message: `the capability's schema could not check it: one of its checks or transforms threw ${thrownClass(error)} instead of reporting an issue (the capability's file should return false from a check, or catch in a transform)` }] };
  }
  // Read before the copies get their prototype back: messageOf tells them by having none.
  const problems = result.success ? [] : result.issues.map((issue) => ({ path: pathOf(root, issue, [], hidesKey), message: problemText(issue, schema, root, [], isSecret, withheld, hidesKey) }));
  restore();
  if (result.success) return { ok: true, value: result.output as T };
  return { ok: false, problems };
}

/**
 * What is wrong at `issue`, its received value withheld where `isSecret` says so. A union none of
 * whose forms took the value says, for each form, what it lacked: valibot's own message for two
 * object forms reads "Expected Object but received Object", which names nothing.
 */
function problemText(issue: v.BaseIssue<unknown>, schema: AnySchema, root: string, above: ValuePath, isSecret: ((path: ValuePath) => boolean) | undefined, withheld: string, hidesKey?: (path: ValuePath) => boolean): string {
  const keys = [...above, ...(issue.path ?? []).map((item) => (item as { key: string | number }).key)];
  const forms = issue.type === "union" && issue.expected === issue.received ? (issue.issues ?? []) : [];
  if (forms.length > 0) {
    const at = pathOf(root, issue, above, hidesKey);
    const each = new Set(forms.slice(0, MAX_FORMS_SAID).map((form) => `${pathOf(at, form, keys, hidesKey)}: ${problemText(form, schema, pathOf(at, form, keys, hidesKey), keys, isSecret, withheld, hidesKey)}`));
    return `it matches none of the forms its schema allows: ${[...each].join("; or ")}${forms.length > MAX_FORMS_SAID ? "; …" : ""}`;
  }
  const message = messageOf(issue, schema, hidesKey?.(keys) === true);
  return isSecret?.(keys) ? withholdReceived(message, issue.input, withheld) : message;
}

/** How many of a union's forms a problem says what they lacked. */
const MAX_FORMS_SAID = 5;

/**
 * A copy of `value` whose plain objects, at every depth, have no prototype while the schema reads
 * them, so that a member the value does not hold is absent. valibot's object schema asks
 * `key in input` and reads `input[key]`: on an ordinary object that finds Object.prototype's
 * `toString`, `constructor`, `valueOf`…, and an optional field of that name that was never sent
 * is refused as "a function". `restore` gives the copies back their prototype once the parse is
 * done, so the output (which keeps the copies a `v.any()` or `v.unknown()` passes through) holds
 * ordinary objects.
 *
 * Iterative, so a deep value cannot overflow the stack. Both callers check a value only once it
 * was written as JSON (no cycle; an input at most MAX_INPUT_DEPTH deep); a value nested past
 * {@link MAX_COPY_DEPTH} anyway (a cycle) is parsed as it is. Arrays are copied to reach their
 * items; anything else that is not a plain object is left as it is.
 */
function ownMembersOnly(value: unknown): { copy: unknown; restore: () => void } {
  // An array, not a Set: a Set of 200,000 objects costs more than the whole copy.
  const shielded: object[] = [];
  const asItIs = { copy: value, restore: () => undefined };
  const copyOf = (original: object): object => {
    if (Array.isArray(original)) return [];
    const proto = Object.getPrototypeOf(original);
    if (proto !== Object.prototype && proto !== null) return original;
    const copy = Object.create(null) as object;
    if (proto === Object.prototype) shielded.push(copy);
    return copy;
  };
  if (value === null || typeof value !== "object") return asItIs;
  const root = copyOf(value);
  const pending: Array<[object, object, number]> = root === value ? [] : [[value, root, 0]];
  const inner = (member: unknown, depth: number): unknown => {
    if (member === null || typeof member !== "object") return member;
    const copy = copyOf(member);
    if (copy !== member) pending.push([member, copy, depth + 1]);
    return copy;
  };
  while (pending.length > 0) {
    const [original, copy, depth] = pending.pop()!;
    if (depth > MAX_COPY_DEPTH) return asItIs;
    if (Array.isArray(original)) {
      // By index: Object.keys of a long array would make a string of every index.
      for (let i = 0; i < original.length; i++) (copy as unknown[])[i] = inner(original[i], depth);
      continue;
    }
    // A null-prototype target has no `__proto__` setter: an own `"__proto__"` member stays a member.
    for (const key of Object.keys(original)) (copy as Record<string, unknown>)[key] = inner((original as Record<string, unknown>)[key], depth);
  }
  return { copy: root, restore: () => shielded.forEach((copy) => Object.setPrototypeOf(copy, Object.prototype)) };
}

/** Schema members that hold no schema to walk (values, texts, the standard-schema interface). */
const NOT_SCHEMAS = new Set(["default", "fallback", "message", "requirement", "expects", "reference", "literal", "options", "~standard"]);

/** What {@link readsPrototypeNames} found for each schema object: schemas never change. */
const prototypeNames = new WeakMap<object, boolean>();

/**
 * True when a schema may ask a value for a member Object.prototype also has: an object schema
 * declaring `toString`, `constructor`, `valueOf`, `__proto__`… (or a discriminator of that name),
 * or a lazy schema, whose schemas are known only while it runs. Only then is the value copied by
 * {@link ownMembersOnly}; any other schema reads own members alone, and the copy (about the cost
 * of the parse) is skipped.
 */
function readsPrototypeNames(schema: AnySchema): boolean {
  const known = prototypeNames.get(schema);
  if (known !== undefined) return known;
  const seen = new Set<object>();
  const walk = (node: object): boolean => {
    if (seen.has(node)) return false;
    seen.add(node);
    const shape = node as { type?: unknown; entries?: unknown; key?: unknown; options?: unknown };
    if (shape.type === "lazy") return true;
    if (typeof shape.entries === "object" && shape.entries !== null && Object.keys(shape.entries).some((key) => key in Object.prototype)) return true;
    if (typeof shape.key === "string" && shape.key in Object.prototype) return true;
    // A union's options are schemas; a picklist's are values.
    if (Array.isArray(shape.options) && shape.options.some((option) => typeof option === "object" && option !== null && walk(option))) return true;
    for (const [name, member] of Object.entries(node)) {
      if (NOT_SCHEMAS.has(name) || member === null || typeof member !== "object") continue;
      if (walk(member)) return true;
    }
    return false;
  };
  const found = walk(schema);
  prototypeNames.set(schema, found);
  return found;
}

/** Past this depth a value is parsed as it is: only a cycle gets there (inputs stop at MAX_INPUT_DEPTH). */
const MAX_COPY_DEPTH = 10_000;

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

/**
 * The path of `issue` under `root` (whose keys are `above`); a key `hidesKey` says is a secret (a
 * key of a record whose keys the schema marks sensitive) written `[…]`: a key too short to be
 * masked by value was named in the path (checking tester, session 47).
 */
function pathOf(root: string, issue: v.BaseIssue<unknown>, above: ValuePath = [], hidesKey?: (path: ValuePath) => boolean): string {
  let path = root;
  const keys = [...above];
  for (const item of issue.path ?? []) {
    const raw = (item as { key: unknown }).key;
    const key = typeof raw === "number" ? raw : String(raw);
    keys.push(key);
    path += typeof key === "string" && hidesKey?.(keys) ? "[…]" : pathStep(key);
  }
  return path;
}

function messageOf(issue: v.BaseIssue<unknown>, schema: AnySchema, keyHidden = false): string {
  // A member a strict object does not have: named, with the one meant, instead of "Expected never"
  // — unless that member's name is a secret of its own (a key inside a sensitive object).
  if (issue.type === "strict_object" && issue.expected === "never" && typeof issue.input === "string" && keyHidden) return "Unknown member (its name is not shown: it is inside a sensitive field).";
  if (issue.type === "strict_object" && issue.expected === "never" && typeof issue.input === "string") {
    const keys = (issue.path ?? []).slice(0, -1).map((item) => (item as { key: unknown }).key);
    const known = Object.keys(entriesAt(schema, keys) ?? {});
    const near = didYouMeanText(issue.input, known);
    return `Unknown member ${JSON.stringify(issue.input)}: ${near ? `${near} ` : ""}The members are ${known.join(", ")}.`;
  }
  // A required field the value lacks: valibot says "Invalid key: Expected "text" but received
  // undefined". Said as missing, with the field given in its place when one is close ("txt").
  const missing = missingField(issue, schema);
  if (missing !== null) return missing;
  // valibot's messages read "Invalid type: Expected number but received "ten""; keep them, they name the value.
  // It names an object by its prototype's constructor, so one without a prototype (a copy of
  // ownMembersOnly) reads "null": it is an object.
  const { input } = issue;
  if (issue.received === "null" && input !== null && typeof input === "object" && Object.getPrototypeOf(input) === null && issue.message.endsWith("eceived null")) {
    return `${issue.message.slice(0, -"null".length)}Object`;
  }
  return issue.message;
}

/** Fields of an object looked at for one that was meant as a missing one: an input may have thousands. */
const MAX_FIELDS_LOOKED_AT = 1000;

/** "Missing required field "text"", naming a field of the same object it does not declare that is close (a typo), or null when `issue` is not a missing field. */
function missingField(issue: v.BaseIssue<unknown>, schema: AnySchema): string | null {
  if (!issue.type.endsWith("object") || issue.received !== "undefined" || issue.input !== undefined) return null;
  const last = issue.path?.at(-1) as { key?: unknown; input?: unknown } | undefined;
  if (last === undefined || typeof last.key !== "string" || issue.expected !== JSON.stringify(last.key)) return null;
  const said = `Missing required field ${JSON.stringify(last.key)}`;
  const parent = last.input;
  if (parent === null || typeof parent !== "object" || Array.isArray(parent)) return `${said}.`;
  const declared = entriesAt(schema, (issue.path ?? []).slice(0, -1).map((item) => (item as { key: unknown }).key)) ?? {};
  const given: string[] = [];
  for (const key in parent) {
    if (given.length >= MAX_FIELDS_LOOKED_AT) break;
    if (Object.hasOwn(parent, key) && !Object.hasOwn(declared, key) && didYouMean(key, [last.key]).length > 0) given.push(key);
  }
  return given.length === 0 ? `${said}.` : `${said}; it has ${given.map((key) => JSON.stringify(key)).join(" and ")}, which its schema does not declare: did you mean ${JSON.stringify(last.key)}?`;
}

/** The problems with every secret of `mask` masked in their paths (a record's key) and messages. */
export function maskProblems(problems: ValueProblem[], mask: SecretMask): ValueProblem[] {
  return problems.map((problem) => ({ path: mask.text(problem.path), message: mask.text(problem.message) }));
}

/** "input.limit: Invalid type: …; input.path: …" — every problem in one sentence. */
export function describeProblems(problems: ValueProblem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join("; ");
}

/** The entries of the object schema at `keys` below `schema` (through optional, nullable and piped schemas); null if none. */
function entriesAt(schema: AnySchema, keys: unknown[]): Record<string, unknown> | null {
  let at = schema as unknown as { entries?: Record<string, unknown>; wrapped?: unknown; pipe?: unknown[]; item?: unknown };
  for (let i = 0; ; ) {
    // A pipe's first member is its schema; optional, nullable and nullish wrap theirs.
    while (at.wrapped || (at.pipe && at.pipe[0] !== at)) at = (at.wrapped ?? at.pipe![0]) as typeof at;
    if (i === keys.length) return at.entries ?? null;
    const key = keys[i++];
    const next = typeof key === "number" ? at.item : at.entries?.[String(key)];
    if (next === undefined) return null;
    at = next as typeof at;
  }
}

const transformsOf = new WeakMap<object, boolean>();

/**
 * True when a schema holds a transformation (`v.transform`, `v.rawTransform`…) anywhere, lazy
 * parts included: only then may what it gives back be something JSON cannot hold. Read once per schema.
 */
export function transforms(schema: AnySchema): boolean {
  let known = transformsOf.get(schema);
  if (known === undefined) {
    known = false;
    for (const node of schemaNodes(schema)) {
      if (node.kind !== "transformation") continue;
      known = true;
      break;
    }
    transformsOf.set(schema, known);
  }
  return known;
}
