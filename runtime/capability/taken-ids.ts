import type { CapabilitySource } from "./registered.ts";

/** A capability that holds an id, as a new one is checked against it. */
export interface TakenId {
  id: string;
  source: CapabilitySource;
}

/** Why an id cannot be registered: the reason, and the capability that holds it (null for docket's own tool names). */
export interface IdConflict {
  reason: string;
  holder: TakenId | null;
}

/** The MCP tool name of a capability: its id with underscores for dots (docs/architecture.md). */
export function toolNameOf(id: string): string {
  return id.replaceAll(".", "_");
}

/**
 * Ids whose HTTP route docket itself answers (a capability `a.b` is served at `/api/v1/a/b`): a
 * checkout's capability there would be run by POST and MCP, while GET and the OpenAPI document
 * named docket's route — three surfaces disagreeing about one id.
 */
const ROUTES_OF_DOCKET = new Map([["executions.artifact", "GET /api/v1/executions/artifact, docket's artifact download"]]);

/**
 * The ids and MCP tool names already held, and whether another may join them: the one rule the
 * registry loads by and `docket new` scaffolds by, so that it never writes a file that cannot load.
 */
export class TakenIds {
  readonly #byId = new Map<string, TakenId>();
  readonly #byTool = new Map<string, TakenId>();

  /** Why a capability with this id, from this source, cannot join those held; null when it can. */
  conflict(id: string, source: CapabilitySource): IdConflict | null {
    // An MCP client calls a capability by its tool name: two ids with one such name, or a checkout's
    // id in docket's own tool names, would leave one of them without a tool, silently.
    const tool = toolNameOf(id);
    const sameTool = this.#byTool.get(tool);
    if (sameTool && sameTool.id !== id) {
      return { reason: `id "${id}" has the MCP tool name ${tool}, which ${sameTool.id} (${describeSource(sameTool.source)}) has already`, holder: sameTool };
    }
    if (source.kind === "file" && tool.startsWith("docket_")) {
      return { reason: `id "${id}" has the MCP tool name ${tool}: names beginning docket_ are docket's own tools`, holder: null };
    }
    const route = ROUTES_OF_DOCKET.get(id);
    if (source.kind === "file" && route !== undefined) {
      return { reason: `id "${id}" would be served at ${route}; choose another id`, holder: null };
    }
    const sameId = this.#byId.get(id);
    if (sameId) return { reason: `id "${id}" is already declared by ${describeSource(sameId.source)}`, holder: sameId };
    return null;
  }

  /** Holds the capability's id and tool name; the first holder of either keeps it. */
  take(taken: TakenId): void {
    const tool = toolNameOf(taken.id);
    if (!this.#byId.has(taken.id)) this.#byId.set(taken.id, taken);
    if (!this.#byTool.has(tool)) this.#byTool.set(tool, taken);
  }
}

function describeSource(source: CapabilitySource): string {
  return source.kind === "builtin" ? `the built-in ${source.file}` : source.file;
}
