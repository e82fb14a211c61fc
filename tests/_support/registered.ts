import type { CapabilityDef } from "../../runtime/capability/declaration.ts";
import type { CapabilityCatalog, LoadError, RegisteredCapability } from "../../runtime/capability/registered.ts";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";

/** A registered capability made straight from a declaration, for tests that do not need discovery. */
export function registered(def: CapabilityDef<any, any>, options: { plane?: boolean; file?: string } = {}): RegisteredCapability {
  return {
    id: def.id,
    title: def.title,
    description: def.description,
    effect: def.effect,
    cancellable: def.cancellable ?? false,
    timeout_ms: def.timeout_ms ?? null,
    cache: def.cache ?? null,
    execution: def.execution ?? "allowed",
    examples: def.examples ?? [],
    errors: def.errors ?? [],
    input_schema: toCapabilityJsonSchema(def.input, "input"),
    output_schema: toCapabilityJsonSchema(def.output, "output"),
    source: options.file ? { kind: "file", file: options.file } : { kind: "builtin", file: `${def.id}.ts` },
    version: options.file ? "unknown" : "docket@test",
    plane: options.plane ?? false,
    def: def as CapabilityDef,
  };
}

/** A catalog over a fixed list. */
export function catalog(capabilities: RegisteredCapability[], loadErrors: LoadError[] = []): CapabilityCatalog {
  const byId = new Map(capabilities.map((c) => [c.id, c]));
  return { list: () => [...byId.values()].sort((a, b) => a.id.localeCompare(b.id)), get: (id) => byId.get(id) ?? null, loadErrors: () => loadErrors };
}
