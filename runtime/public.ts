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
  ExecOptions,
  ExecResult,
  HostFacts,
  ReconcileResult,
} from "./capability/declaration.ts";
export { CapabilityError } from "./capability/capability-error.ts";
export type { CapabilityErrorOptions } from "./capability/capability-error.ts";
export { sensitive } from "./capability/sensitive.ts";
export { planeOf } from "./capability/plane-of.ts";
export { EXECUTION_ID_PATTERN, RUN_ID_PATTERN } from "./execution/execution-id.ts";
export { CAPABILITY_ID_PATTERN } from "./capability/capability-id.ts";
export { EXECUTION_STATES } from "./execution/state-machine.ts";
export type { PlaneHandle, StartRequest, StartResult, CancelReceipt, ArtifactInfo, EdgeInfo, ReconcileRequest, ReconcileReceipt } from "./execution/plane.ts";
export type { ExecutionSnapshot } from "./execution/snapshot.ts";
export type { ExecutionEvent } from "./execution/protocol.ts";
export { executionIdSchema, executionStateSchema, executionSnapshotSchema, sessionKeySchema } from "./capability/schemas.ts";
export { describeCapability } from "./capability/registered.ts";
export type { RegisteredCapability, LoadError } from "./capability/registered.ts";
export { inspectCapabilityFile, listCapabilityFiles, type CapabilityFileReport, type CapabilityProblem } from "./capability/inspect.ts";
export { resolveInside, type ResolveInsideOptions } from "./capability/resolve-inside.ts";
export { globMatcher } from "./capability/glob.ts";
export { sha256File, type Sha256FileOptions } from "./capability/sha256-file.ts";
export { openRegularFile, type OpenRegularFileOptions, type RegularFile } from "./capability/open-regular-file.ts";
