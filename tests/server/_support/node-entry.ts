// Bundled for `node` by the Node contract test: `docket serve` on the Node adapter, in a child process.
import { resolveLimits } from "../../../runtime/execution/limits.ts";
import { startServer } from "../../../runtime/server/serve.ts";
import { installShutdown } from "../../../runtime/server/shutdown.ts";

const server = await startServer({
  cwd: process.env.DOCKET_TEST_CWD ?? process.cwd(),
  host: process.env.DOCKET_TEST_HOST || undefined,
  port: 0,
  storeKind: "memory",
  limits: resolveLimits({ env: process.env }),
  capabilityDirs: [],
  token: process.env.DOCKET_TEST_TOKEN || null,
  runtime: "node",
  idleTimeoutSeconds: process.env.DOCKET_TEST_IDLE_SECONDS ? Number(process.env.DOCKET_TEST_IDLE_SECONDS) : undefined,
  log: (line) => process.stderr.write(`${line}\n`),
  // The pool's worker, bundled beside this file.
  workerUrl: new URL("./worker-entry.mjs", import.meta.url),
});
process.stdout.write(`${JSON.stringify({ url: server.url, token: server.token })}\n`);
installShutdown(server, { log: () => undefined });
