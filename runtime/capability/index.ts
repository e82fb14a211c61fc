// The capability layer's public exports, by name (docs/handler-api.md): declaration → registry.
export { capability } from "./declaration.ts";
export type {
  AnySchema,
  ArtifactWriter,
  CapabilityContext,
  CapabilityDef,
  DiagnosticInput,
  DiagnosticSeverity,
  ExecutionIdentity,
  ExecOptions,
  ExecResult,
  HostFacts,
  LogLevel,
  ProgressReporter,
  ReconcileResult,
} from "./declaration.ts";
export { CAPABILITY_ID_PATTERN, CAPABILITY_ID_RULE, isCapabilityId } from "./capability-id.ts";
export { CapabilityError } from "./capability-error.ts";
export { didYouMean, didYouMeanText } from "./did-you-mean.ts";
export { unknownCapabilityHint } from "./unknown-capability.ts";
export type { CapabilityErrorOptions } from "./capability-error.ts";
export { SENSITIVE_MARK, sensitive } from "./sensitive.ts";
export { callsDirectly, describeCapability, runsAsExecution, runsAsText } from "./registered.ts";
export type { CapabilityCatalog, CapabilitySource, ExecutionMode, JsonSchema, LoadError, RegisteredCapability } from "./registered.ts";
export { SchemaConversionError, toCapabilityJsonSchema } from "./json-schema.ts";
export type { SchemaSide } from "./json-schema.ts";
export { CAPABILITY_ID, checkDeclaration, importCapabilityFile, inspectCapabilityFile, isCapabilityFileName, isValibotSchema, listCapabilityFiles } from "./inspect.ts";
export type {
  CapabilityFileReport,
  CapabilityProblem,
  CapabilityProblemCode,
  DeclarationCheck,
  DeclarationCheckOptions,
  ImportCapabilityOptions,
  ImportedCapabilityFile,
} from "./inspect.ts";
export { CapabilityRegistry } from "./registry.ts";
export type { AddCapabilityOptions } from "./registry.ts";
export { TakenIds, toolNameOf } from "./taken-ids.ts";
export type { IdConflict, TakenId } from "./taken-ids.ts";
export { discoverCapabilities, loadCapabilityFile } from "./discovery.ts";
export type { DiscoveryOptions, ImportFile, LoadedCapabilityFile } from "./discovery.ts";
export { findCheckoutRoot } from "./checkout.ts";
export { isWithin, resolveInside } from "./resolve-inside.ts";
export type { ResolveInsideOptions } from "./resolve-inside.ts";
export { compileGlob, globMatcher } from "./glob.ts";
export { planeOf } from "./plane-of.ts";
export { executionIdSchema, executionSnapshotSchema, executionStateSchema, sessionKeySchema } from "./schemas.ts";
// BUILTINS (./builtins.ts) is imported directly where the process starts: re-exporting it here would
// load every built-in capability, and with it the whole public module, wherever this index is used.
