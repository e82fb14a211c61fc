// Bundled for `node` by tests/mcp/node.test.ts: `docket serve` on the Node adapter with its default
// mounts, so /mcp answers through @hono/node-server.
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { defaultMounts } from "../../runtime/server/default-mounts.ts";
import { startServer } from "../../runtime/server/serve.ts";
import { installShutdown } from "../../runtime/server/shutdown.ts";

const server = await startServer({
  cwd: process.env.DOCKET_TEST_CWD ?? process.cwd(),
  port: 0,
  storeKind: "memory",
  limits: resolveLimits({ env: process.env }),
  capabilityDirs: [],
  runtime: "node",
  mounts: defaultMounts,
  log: (line) => process.stderr.write(`${line}\n`),
  workerUrl: new URL("./worker-entry.mjs", import.meta.url),
});
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
installShutdown(server, { log: () => undefined });
