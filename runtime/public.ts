// The public API: what `import … from "docket"` gives a capability file, built-in or user's.
export { capability } from "./capability/declaration.ts";
export type {
  CapabilityDef,
  CapabilityContext,
  ProgressReporter,
  DiagnosticInput,
  DiagnosticSeverity,
  LogLevel,
  ArtifactWriter,
  ExecutionIdentity,
  HostFacts,
} from "./capability/declaration.ts";
export { CapabilityError } from "./capability/capability-error.ts";
export type { CapabilityErrorOptions } from "./capability/capability-error.ts";
export { sensitive } from "./capability/sensitive.ts";
