// Reads built on the main thread (the cockpit's pages, listings, snapshots) let the event loop turn
// before they are built, so that workers' answers get through however many such reads come back
// to back: a direct call waited as long as four clients kept reloading one large execution's page
// (hostile tester, session 39). Real processes: the server, and clients that never pause.
import { afterAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { removeTempDirs, tempCheckout, writeFiles } from "../cli/_harness.ts";
import { serveProcess } from "../cli/_report-support.ts";

afterAll(removeTempDirs);

const LOUD = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "demo.loud",
  title: "Loud",
  description: "Logs many long lines.",
  effect: "read",
  input: v.object({}),
  output: v.object({ n: v.number() }),
  handler(_input, ctx) {
    const line = "x".repeat(3000);
    for (let i = 0; i < 12000; i++) ctx.progress.log(line + i);
    return { n: 1000 };
  },
});
`;

describe("the main thread between heavy reads", () => {
  test("a direct call is answered while clients keep loading a large execution's page back to back, not once they stop", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/demo.loud.ts": LOUD });
    const { serve, http } = await serveProcess(checkout, ["--no-watch"]);
    const base = http.url;
    try {
      const started = (await http.post("/api/v1/executions/start", { capability: "demo.loud", input: {} })).body.execution.id as string;
      for (let i = 0; i < 200 && (await http.get(`/api/v1/executions/get?id=${started}`)).state !== "succeeded"; i++) await Bun.sleep(25);
      let answered = false;
      let pages = 0;
      // Four clients, each asking again on a new connection as soon as its page came, until the
      // call is answered (or a bound a broken build reaches).
      const { port } = new URL(base);
      const page = () =>
        new Promise<void>((resolve) => {
          const socket = connect(Number(port), "127.0.0.1", () => socket.end(`GET /cockpit/executions/${started} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`));
          socket.on("data", () => {});
          socket.on("close", () => resolve());
          socket.on("error", () => resolve());
        });
      const loaders = Array.from({ length: 4 }, async () => {
        while (!answered && pages < 400) {
          await page();
          pages++;
        }
      });
      await Bun.sleep(200);
      const call = await fetch(`${base}/api/v1/executions/demonstrate`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"steps":0,"delay_ms":0}' });
      expect(call.status).toBe(200);
      answered = true;
      await Promise.all(loaders);
      // The loaders were still going when it was answered: their bound was never what ended them.
      expect(pages).toBeLessThan(400);
    } finally {
      serve.kill("SIGTERM");
      await serve.exited;
    }
  }, 60_000);
});
