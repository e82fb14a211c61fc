import type { Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { callsDirectly, type JsonSchema, type RegisteredCapability } from "../capability/registered.ts";
import type { ExecutionPlane } from "../execution/plane.ts";
import { isObjectSchema, toolInputSchema, toolOutputSchema } from "./_schemas.ts";
import { toolNameOf } from "../capability/taken-ids.ts";

/**
 * The plane tools of README.md, each the MCP face of one plane capability: its schemas and its
 * description come from the registry, only the name and the notes below are MCP's own. The other
 * plane capabilities (capabilities.*, executions.report, artifacts, release) have no tool:
 * tools/list is the agent's capability list, and a report is what `docket run` sends.
 */
export const PLANE_TOOLS = {
  docket_execution_start: "executions.start",
  docket_executions: "executions.list",
  docket_execution: "executions.get",
  docket_execution_events: "executions.events",
  docket_execution_cancel: "executions.cancel",
  docket_execution_protocol: "executions.protocol",
  docket_execution_reconcile: "executions.reconcile",
} as const;

export type PlaneToolName = keyof typeof PLANE_TOOLS;

/** What each plane tool adds to its capability's description: how to use it from MCP. */
const PLANE_NOTES: Record<PlaneToolName, string> = {
  docket_execution_start:
    "Pass the capability id with dots (files.digest); each work capability is also a tool of its own (files_digest) for a direct answer. " +
    "Without wait it answers at once: follow the execution with docket_execution_events (after = the last sequence seen) and read it with docket_execution. " +
    "With wait: true it answers with the terminal snapshot; a progressToken in the request's _meta gets notifications/progress from the execution's progress events (_meta \"docket/event\" names the execution and sequence). " +
    "Cancelling the waiting request (notifications/cancelled, also sent by a client whose request timed out) cancels the execution; a client that disconnects does not. For long work, prefer answering at once and following. " +
    "Effect: write, it starts work that may change the checkout when the capability's effect is write.",
  docket_executions: "Effect: read. The same list is the resource docket://executions.",
  docket_execution: "Effect: read. The same snapshot is the resource docket://executions/{id}.",
  docket_execution_events: "Call again with after = the last sequence you saw to follow an execution without gaps. Effect: read.",
  docket_execution_cancel: "Only a cancellable execution (cancellable: true in its snapshot) stops early; the receipt says whether the request was made. Effect: write, it stops work.",
  docket_execution_protocol: "Effect: read. The same document is the resource docket://executions/protocol.",
  docket_execution_reconcile:
    "Only for an execution whose failure has outcome_certainty unknown and no reconciliation yet. Give an outcome only for what you verified yourself, with a note saying how; " +
    "without an outcome the capability's own check runs (when it declares one) and its evidence is recorded. Effect: write, it records a decision that is never replaced.",
};

/** Hints that differ from what a plane capability's effect alone suggests. */
const PLANE_HINTS: Partial<Record<PlaneToolName, ToolAnnotations>> = {
  // Asking twice is asking once, and stopping work destroys nothing the work had not yet done.
  docket_execution_cancel: { destructiveHint: false, idempotentHint: true },
};

/** The extra argument of docket_execution_start: follow the execution to its end. */
const WAIT_PROPERTY = {
  type: "boolean",
  default: false,
  description: "Follow the execution and answer with its terminal snapshot (with progress notifications when a progressToken is given) instead of answering at once.",
};

/** A tool and the capability behind it. */
export interface ToolTarget {
  name: string;
  capability: RegisteredCapability;
  /** `start`: docket_execution_start; `plane`: another plane tool; `direct`: a work capability called directly. */
  kind: "start" | "plane" | "direct";
}

/** The MCP name of a capability: dots become underscores (`files.digest` → `files_digest`); the registry's own rule. */
export const toolName = toolNameOf;

/**
 * Every tool this plane offers, read from the registry on each call so that tools and registry
 * never disagree: the plane tools first, then each capability that is not a plane capability, by
 * id. Two ids that map to one name (`a_b.c`, `a.b_c`) never both load: the registry refuses the
 * later one (capability/registry.ts), as it refuses a checkout id among the `docket_` names.
 */
export function toolTargets(plane: Pick<ExecutionPlane, "capabilities" | "capability">): Map<string, ToolTarget> {
  const targets = new Map<string, ToolTarget>();
  for (const [name, id] of Object.entries(PLANE_TOOLS)) {
    const capability = plane.capability(id);
    if (capability) targets.set(name, { name, capability, kind: name === "docket_execution_start" ? "start" : "plane" });
  }
  const work = plane.capabilities().filter((c) => !c.plane && callsDirectly(c)).sort((a, b) => (a.id < b.id ? -1 : 1));
  for (const capability of work) {
    const name = toolName(capability.id);
    if (!targets.has(name)) targets.set(name, { name, capability, kind: "direct" });
  }
  return targets;
}

/** The tools/list entry of one tool: schemas, description and hints projected from its capability. */
export function toolDefinition(target: ToolTarget, failureSchema: JsonSchema): Tool {
  const { capability } = target;
  const own = toolInputSchema(capability.input_schema);
  // A copy: the registry's schema is shared by every projection and must not grow a `wait`.
  const inputSchema = target.kind === "start" ? { ...own, properties: { ...(own.properties as object), wait: WAIT_PROPERTY } } : own;
  const outputSchema = toolOutputSchema(capability.output_schema, failureSchema);
  const hints: ToolAnnotations = {
    title: capability.title,
    readOnlyHint: capability.effect === "read",
    destructiveHint: capability.effect === "write",
    idempotentHint: capability.effect === "read",
    // A capability works on the checkout this process serves, never on anything a client names.
    openWorldHint: false,
    ...(target.kind === "direct" ? {} : PLANE_HINTS[target.name as PlaneToolName]),
  };
  return {
    name: target.name,
    title: capability.title,
    description: `${capability.description} ${target.kind === "direct" ? directNote(capability) : PLANE_NOTES[target.name as PlaneToolName]}`,
    inputSchema,
    ...(outputSchema ? { outputSchema } : {}),
    annotations: hints,
  };
}

/** Every tool definition, in the order of {@link toolTargets}. */
export function listTools(plane: Pick<ExecutionPlane, "capabilities" | "capability">, failureSchema: JsonSchema): Tool[] {
  return [...toolTargets(plane).values()].map((target) => toolDefinition(target, failureSchema));
}

/** What a direct-call tool tells an agent: its effect, and where progress and cancel live instead. */
function directNote(capability: RegisteredCapability): string {
  const effect = capability.effect === "read" ? "Effect: read, it changes nothing." : "Effect: write, it may change something in the checkout.";
  const wrapped = isObjectSchema(capability.input_schema) ? "" : " The input goes in the argument input.";
  const instead =
    capability.execution === "never"
      ? ""
      : ` For progress events, a cancel that stops it${capability.cancellable ? "" : " (it is not cancellable, so it runs to its end)"}, and a record to read later, start it with docket_execution_start {"capability":"${capability.id}"} instead.`;
  return `${effect} A direct call: answers with the output, with no execution, events or progress.${wrapped}${instead}`;
}
