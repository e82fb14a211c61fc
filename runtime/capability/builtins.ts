import { fileURLToPath } from "node:url";
import type { CapabilityDef } from "./declaration.ts";
import capabilitiesGet from "../../capabilities/capabilities.get.ts";
import capabilitiesList from "../../capabilities/capabilities.list.ts";
import capabilitiesVerify from "../../capabilities/capabilities.verify.ts";
import executionsArtifacts from "../../capabilities/executions.artifacts.ts";
import executionsCancel from "../../capabilities/executions.cancel.ts";
import executionsDemonstrate from "../../capabilities/executions.demonstrate.ts";
import executionsEvents from "../../capabilities/executions.events.ts";
import executionsGet from "../../capabilities/executions.get.ts";
import executionsList from "../../capabilities/executions.list.ts";
import executionsProtocol from "../../capabilities/executions.protocol.ts";
import executionsReconcile from "../../capabilities/executions.reconcile.ts";
import executionsRelease from "../../capabilities/executions.release.ts";
import executionsReport from "../../capabilities/executions.report.ts";
import executionsStart from "../../capabilities/executions.start.ts";
import filesDigest from "../../capabilities/files.digest.ts";
import filesVerify from "../../capabilities/files.verify.ts";
import healthReport from "../../capabilities/health.report.ts";

/**
 * Every built-in capability, keyed by its file name in `capabilities/`. The imports are static so
 * that `bun build --compile` bundles them into the binary; a test checks that this map lists
 * the folder exactly, so a new built-in file that is not added here fails the suite.
 */
export const BUILTINS: Record<string, CapabilityDef> = {
  "capabilities.get.ts": capabilitiesGet as CapabilityDef,
  "capabilities.list.ts": capabilitiesList as CapabilityDef,
  "capabilities.verify.ts": capabilitiesVerify as CapabilityDef,
  "executions.artifacts.ts": executionsArtifacts as CapabilityDef,
  "executions.cancel.ts": executionsCancel as CapabilityDef,
  "executions.demonstrate.ts": executionsDemonstrate as CapabilityDef,
  "executions.events.ts": executionsEvents as CapabilityDef,
  "executions.get.ts": executionsGet as CapabilityDef,
  "executions.list.ts": executionsList as CapabilityDef,
  "executions.protocol.ts": executionsProtocol as CapabilityDef,
  "executions.reconcile.ts": executionsReconcile as CapabilityDef,
  "executions.release.ts": executionsRelease as CapabilityDef,
  "executions.report.ts": executionsReport as CapabilityDef,
  "executions.start.ts": executionsStart as CapabilityDef,
  "files.digest.ts": filesDigest as CapabilityDef,
  "files.verify.ts": filesVerify as CapabilityDef,
  "health.report.ts": healthReport as CapabilityDef,
};

/**
 * The folder the built-ins come from, when docket runs from source. In a compiled binary it
 * names a path inside the bundle that does not exist on disk, which discovery ignores.
 */
export const BUILTIN_DIR = fileURLToPath(new URL("../../capabilities/", import.meta.url));
