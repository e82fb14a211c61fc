// A `docket serve` on the sqlite store in a process of its own, for a test to kill with SIGKILL:
// prints `{"url": …}` on one line once it serves, then runs until it is killed.
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { startServer } from "../../runtime/server/serve.ts";

const server = await startServer({
  cwd: process.cwd(),
  port: 0,
  storeKind: "sqlite",
  limits: resolveLimits(),
  capabilityDirs: [],
  runtime: "bun",
  log: (line) => void process.stderr.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
