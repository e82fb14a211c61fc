import type { AnySchema } from "../capability/declaration.ts";
import type { JsonSchema } from "../capability/registered.ts";
import { sensitiveValues } from "./secret-mask.ts";
import { checkValue } from "./validate.ts";

/** What {@link beforeTransforms} made of each schema: schemas never change. */
const stripped = new WeakMap<object, AnySchema>();

type Node = Record<string, unknown> & { "~run"?: unknown };

/**
 * The schema as its published JSON Schema describes it: each pipe cut at its first transformation,
 * its checks left out (the whole schema already passed them). Parsing an admitted input with it
 * gives the input as the schema sees it before its transforms, defaults and fallbacks filled in,
 * so that a secret that was never sent (`v.optional(sensitive(v.string()), () => process.env.TOKEN)`)
 * and that a transform then moves is still found where the schema marks it (docs/security.md).
 *
 * Objects, arrays and the optional family are copied with their members stripped (their parse reads
 * `this.entries`, `this.item`, `this.wrapped`); any other schema is kept as it is, its own transforms
 * included, and a schema holding no transform is returned itself.
 */
export function beforeTransforms(schema: AnySchema): AnySchema {
  const known = stripped.get(schema);
  if (known !== undefined) return known;
  const made = strip(schema as unknown as Node, new Set()) as unknown as AnySchema;
  stripped.set(schema, made);
  return made;
}

/**
 * The secrets of an input whose schema's transforms made `made` of `given`: those the schema held
 * before its transforms (defaults filled in), wherever a transform then put them, and those at
 * their places in what it made (a secret trimmed or upper-cased where it stands).
 */
export function transformedSecrets(schema: AnySchema, inputSchema: JsonSchema, given: unknown, made: unknown): string[] {
  const before = checkValue(beforeTransforms(schema), given, "input");
  return [...(before.ok ? sensitiveValues(before.value, inputSchema) : []), ...sensitiveValues(made, inputSchema, { keys: false })];
}

function strip(node: Node, seen: Set<object>): Node {
  // A schema met again below itself (only a lazy one gets there, and it is not followed) is kept.
  if (seen.has(node)) return node;
  seen.add(node);
  try {
    if (Array.isArray(node.pipe) && node.pipe[0] !== node) {
      const pipe = node.pipe as Node[];
      const end = pipe.findIndex((item) => item.kind === "transformation");
      // Only the schemas before the first transformation shape the value; its checks are already passed.
      const schemas = pipe.slice(0, end === -1 ? pipe.length : end).filter((item) => item.kind === "schema");
      const kept = schemas.map((item) => strip(item, seen));
      if (end === -1 && kept.every((item, i) => item === schemas[i])) return node;
      if (kept.length === 1) return kept[0]!;
      return { ...node, pipe: kept, "~run": runInTurn(kept) };
    }
    if (isRecord(node.entries)) {
      let changed = false;
      const entries: Record<string, unknown> = {};
      for (const [key, member] of Object.entries(node.entries)) {
        entries[key] = isRecord(member) ? strip(member, seen) : member;
        changed ||= entries[key] !== member;
      }
      return changed ? { ...node, entries } : node;
    }
    for (const key of ["wrapped", "item"] as const) {
      const member = node[key];
      if (!isRecord(member)) continue;
      const made = strip(member, seen);
      return made === member ? node : { ...node, [key]: made };
    }
    return node;
  } finally {
    seen.delete(node);
  }
}

/** A pipe of schemas alone: each parses what the one before gave, as valibot's pipe does. */
function runInTurn(schemas: Node[]) {
  return function (dataset: { issues?: unknown; typed?: boolean }, config: unknown) {
    for (const schema of schemas) {
      if (dataset.issues) {
        dataset.typed = false;
        break;
      }
      dataset = (schema["~run"] as (d: unknown, c: unknown) => typeof dataset).call(schema, dataset, config);
    }
    return dataset;
  };
}

function isRecord(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
