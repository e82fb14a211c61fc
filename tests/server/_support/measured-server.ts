// A docket server (Bun adapter, memory store) in a process of its own, so that its memory can be
// measured apart from the test's: prints its URL, then answers each "memory" line on stdin with
// its RSS and heap after a full collection. Limits come as a JSON argument, then the checkout it
// serves (made, and removed, by the test: however this process ends, nothing is left behind).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { resolveLimits } from "../../../runtime/execution/limits.ts";
import { startServer } from "../../../runtime/server/serve.ts";

const root = process.argv[3]!;
mkdirSync(join(root, ".git"));
const server = await startServer({
  cwd: root,
  port: 0,
  storeKind: "memory",
  limits: resolveLimits({ overrides: JSON.parse(process.argv[2] ?? "{}") }),
  capabilityDirs: [],
  token: null,
  runtime: "bun",
  log: () => undefined,
});
console.log(JSON.stringify({ url: server.url }));
let input = "";
process.stdin.on("data", (chunk) => {
  input += chunk;
  let end;
  while ((end = input.indexOf("\n")) >= 0) {
    const line = input.slice(0, end);
    input = input.slice(end + 1);
    if (line === "memory") {
      Bun.gc(true);
      const { rss, heapUsed } = process.memoryUsage();
      console.log(JSON.stringify({ rss, heap: heapUsed }));
    }
  }
});
// The test's end (stdin closed) or a kill ends it.
process.stdin.on("end", async () => {
  await server.stop();
  process.exit(0);
});
