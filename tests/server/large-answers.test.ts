// Large HTTP answers to clients that do not read them (server/large-answers.ts): bounded by
// answer_bytes_in_flight, the rest refused 503 with Retry-After, and the budget given back when
// a client leaves. A real `docket serve` and raw TCP clients that never read.
import { afterAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "../cli/_harness.ts";

const BIG = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "test.big",
  title: "Big",
  description: "An output of about 24 megabytes: more than the sockets between two processes hold.",
  effect: "read",
  input: v.object({}),
  output: v.object({ text: v.string() }),
  handler: () => ({ text: "é".repeat(12 * 1024 * 1024) }),
});
`;

afterAll(removeTempDirs);

/** A client that asks and never reads: its answer waits in the server. */
function stalledClient(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET /api/v1/test/big HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
      socket.pause();
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

describe("large answers to clients that do not read", () => {
  test("past answer_bytes_in_flight a large read answer is 503 with Retry-After; a client that leaves gives its share back", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/test.big.ts": BIG });
    const child = spawnDocket(fromSource, ["serve", "--port", "0", "--answer-bytes-in-flight", String(1024 * 1024), "--output-bytes", String(64 * 1024 * 1024)], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    const url = (await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
    try {
      const stalled = await stalledClient(url);
      // The stalled client's answer is being sent (it never reads it): wait until the server holds it.
      let refused: Response | null = null;
      for (let i = 0; i < 100 && refused === null; i++) {
        await Bun.sleep(20);
        const response = await fetch(`${url}/api/v1/test/big`);
        if (response.status === 503) refused = response;
        else await response.arrayBuffer();
      }
      expect(refused).not.toBeNull();
      expect(refused!.headers.get("retry-after")).toBe("1");
      const { error } = (await refused!.json()) as any;
      expect(error).toMatchObject({ error_code: "unavailable", retryability: "safe", context: { reason: "answers_in_flight", limit: 1024 * 1024 } });
      expect(error.message).toContain("answer_bytes_in_flight");
      // Small answers are never held back.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/api/v1/capabilities/list`)).status).toBe(200);

      // docket's own CLI asks again, as it is told to, and gets the snapshot once the budget frees.
      const started = (await (await fetch(`${url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"capability":"test.big","input":{}}' })).json()) as any;
      // Done once its snapshot holds the large output: then asking for it is refused while the budget is spent.
      for (let i = 0; i < 200; i++) {
        const got = await fetch(`${url}/api/v1/executions/get?id=${started.execution.id}`);
        if (got.status === 503) break;
        await got.arrayBuffer();
        await Bun.sleep(50);
      }
      const show = docket(fromSource, ["executions", "show", started.execution.id, "--format", "json"], { cwd: checkout });
      await Bun.sleep(1500);
      stalled.destroy();
      const shown = await show;
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout).state).toBe("succeeded");

      let answered: Response | null = null;
      for (let i = 0; i < 100 && answered?.status !== 200; i++) {
        await Bun.sleep(20);
        answered = await fetch(`${url}/api/v1/test/big`);
        if (answered.status !== 200) await answered.arrayBuffer();
      }
      expect(answered!.status).toBe(200);
      const body = (await answered!.json()) as { text: string };
      // Streamed in pieces of UTF-8, none split inside a character.
      expect(body.text.length).toBe(12 * 1024 * 1024);
      expect(body.text).toBe("é".repeat(12 * 1024 * 1024));
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
  }, 60_000);
});
