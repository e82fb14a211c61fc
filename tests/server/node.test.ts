import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverContract } from "./contract.ts";
import { buildNodeBundle, nodeStarter, type StartFn } from "./_support/servers.ts";

// The Node adapter runs in a real `node` (20) on a bundle of the server and the pool's worker.
let start: StartFn | null = null;
const bundle = mkdtempSync(join(tmpdir(), "docket-node-bundle-"));
beforeAll(async () => {
  start = nodeStarter(await buildNodeBundle(bundle));
}, 60_000);
afterAll(() => rmSync(bundle, { recursive: true, force: true }));

serverContract("Node adapter", (options) => start!(options));
