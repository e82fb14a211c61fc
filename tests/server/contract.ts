import type { StartFn } from "./_support/servers.ts";
import { apiContract } from "./_contract-api.ts";
import { upgradePathContract } from "./_contract-upgrade.ts";
import { liveContract } from "./_contract-live.ts";
import { limitsContract } from "./_contract-limits.ts";
import { securityContract } from "./_contract-security.ts";
import { containmentContract } from "./_contract-containment.ts";

/**
 * The server contract, run against every adapter (Bun in-process, Node in a child process): one
 * suite, so the two runtimes cannot drift. Frames received by the live tests are validated
 * against the protocol's schemas at the end of the live suite.
 */
export function serverContract(name: string, start: StartFn): void {
  const frames: any[] = [];
  apiContract(name, start);
  securityContract(name, start);
  limitsContract(name, start, frames);
  liveContract(name, start, frames);
  containmentContract(name, start);
  upgradePathContract(name, start);
}
