import { createHash } from "node:crypto";
import type { LoadError, RegisteredCapability } from "../runtime/capability/registered.ts";
import { COCKPIT_BASE } from "./paths.ts";

/** Where a page asks whether the capabilities changed since it was rendered. */
export const CATALOG_PATH = `${COCKPIT_BASE}/catalog`;

/**
 * A short digest of what the overview shows of the registry: every capability's id and version,
 * and every load error. It changes exactly when a live reload changed something a page shows
 * (docs/authoring.md, "Live reload"), so a page asks for it, not for the registry.
 */
export function catalogSignature(capabilities: RegisteredCapability[], loadErrors: LoadError[]): string {
  const shown = { capabilities: capabilities.map((c) => [c.id, c.version, c.title]), load_errors: loadErrors };
  return createHash("sha256").update(JSON.stringify(shown)).digest("hex").slice(0, 16);
}
