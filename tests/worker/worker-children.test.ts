// runtime/worker/_worker-children.ts and _spawn-through-main.ts: what the main thread sends a
// worker of its children's output, and how many children one worker runs at once.
import { describe, expect, test } from "bun:test";
import type { Worker } from "node:worker_threads";
import { CHILD_OUTPUT_WINDOW, workerChildren } from "../../runtime/worker/_worker-children.ts";
import { CHILDREN_AT_ONCE, spawnThroughMain } from "../../runtime/worker/_spawn-through-main.ts";
import { fromWorkerWire, type FromWorker, type ToWorker } from "../../runtime/worker/_messages.ts";
import { STDIN_PART_BYTES } from "../../runtime/worker/spawn-child.ts";

/** A worker that only records what it is sent (as it arrives on the wire). */
function recordingWorker() {
  const sent: ToWorker[] = [];
  const worker = { postMessage: (data: unknown) => sent.push((typeof data === "string" ? JSON.parse(data) : data) as ToWorker) } as unknown as Worker;
  return { worker, sent };
}

const outputBytes = (sent: ToWorker[]) => sent.reduce((sum, m) => sum + (m.type === "child_output" ? m.chunk.byteLength : 0), 0);

async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1500 && !done(); i++) await Bun.sleep(10);
  if (!done()) throw new Error(`gave up waiting for ${what}`);
}

describe.skipIf(process.platform === "win32")("a worker's children, served from the main thread", () => {
  test("a child's output is posted only up to a window ahead of what its worker took: a worker busy in a loop leaves the child waiting on its pipe, not the server holding it (containment tester, session 45)", async () => {
    const { worker, sent } = recordingWorker();
    const children = workerChildren(worker);
    const total = 40 * 1024 * 1024;
    children.spawn(1, { argv: ["head", "-c", String(total), "/dev/zero"], cwd: process.cwd(), env: null, stdin: null });
    await until(() => outputBytes(sent) > CHILD_OUTPUT_WINDOW, "the window to fill");
    await Bun.sleep(300);
    // Nothing taken: what was posted stays about the window (one pipe's read past it at most).
    expect(outputBytes(sent)).toBeLessThan(CHILD_OUTPUT_WINDOW + 1024 * 1024);
    expect(sent.some((m) => m.type === "child_exit")).toBe(false);
    // The worker takes what it was sent, as it comes: the rest follows, and the child's end.
    let acked = 0;
    await until(() => {
      const posted = outputBytes(sent);
      if (posted > acked) {
        children.taken(1, posted - acked);
        acked = posted;
      }
      return sent.some((m) => m.type === "child_exit");
    }, "the child's end");
    expect(outputBytes(sent)).toBe(total);
    expect(sent.find((m) => m.type === "child_exit")).toMatchObject({ code: 0 });
  }, 30_000);

  test("a child's stdin is asked of its worker a part at a time, as the pipe takes each: a child that does not read it leaves the rest with the worker, one that does gets it whole (containment tester, session 49)", async () => {
    const parts = 48;
    const part = (i: number) => new Uint8Array(STDIN_PART_BYTES).fill(65 + (i % 26));
    const serve = async (argv: string[]) => {
      const { worker, sent } = recordingWorker();
      const children = workerChildren(worker);
      let given = 1;
      // The worker's side: each `child_stdin_wanted` answered with the next part, then the end.
      const answered = new Set<ToWorker>();
      const answer = () => {
        for (const message of sent) {
          if (message.type !== "child_stdin_wanted" || answered.has(message)) continue;
          answered.add(message);
          children.stdin(1, given < parts ? part(given++) : null);
        }
      };
      const timer = setInterval(answer, 2);
      children.spawn(1, { argv, cwd: process.cwd(), env: null, stdin: part(0), stdinMore: true });
      return { sent, asked: () => answered.size, stop: () => clearInterval(timer) };
    };
    // `sleep` reads nothing: once its pipe and the stream's buffer are full, nothing more is asked.
    const sleeper = await serve(["sleep", "1"]);
    await until(() => sleeper.sent.some((m) => m.type === "spawned"), "the sleeper to start");
    await Bun.sleep(400);
    expect(sleeper.asked()).toBeLessThanOrEqual(1);
    await until(() => sleeper.sent.some((m) => m.type === "child_exit"), "the sleeper's end");
    sleeper.stop();
    // `wc -c` reads it all: every part asked for, in order, and the end.
    const reader = await serve(["wc", "-c"]);
    await until(() => reader.sent.some((m) => m.type === "child_exit"), "wc's end");
    reader.stop();
    expect(reader.asked()).toBe(parts);
    const out = Buffer.concat(reader.sent.flatMap((m) => (m.type === "child_output" && m.stream === "stdout" ? [m.chunk] : []))).toString().trim();
    expect(Number(out)).toBe(parts * STDIN_PART_BYTES);
    // A part larger than asked for (a handler posting on its worker's port) ends the stdin instead.
    const forged = recordingWorker();
    const forgedChildren = workerChildren(forged.worker);
    forgedChildren.spawn(1, { argv: ["wc", "-c"], cwd: process.cwd(), env: null, stdin: part(0), stdinMore: true });
    await until(() => forged.sent.some((m) => m.type === "child_stdin_wanted"), "the first ask");
    forgedChildren.stdin(1, new Uint8Array(STDIN_PART_BYTES + 1));
    await until(() => forged.sent.some((m) => m.type === "child_exit"), "wc's end");
    const counted = Buffer.concat(forged.sent.flatMap((m) => (m.type === "child_output" && m.stream === "stdout" ? [m.chunk] : []))).toString().trim();
    expect(Number(counted)).toBe(STDIN_PART_BYTES);
  }, 30_000);

  test("a worker ended while its child is paused still sees the child ended, its pipes read to their end", async () => {
    const { worker, sent } = recordingWorker();
    const children = workerChildren(worker);
    children.spawn(1, { argv: ["head", "-c", String(40 * 1024 * 1024), "/dev/zero"], cwd: process.cwd(), env: null, stdin: null });
    await until(() => outputBytes(sent) > CHILD_OUTPUT_WINDOW, "the window to fill");
    await children.end(200);
    expect(outputBytes(sent)).toBeLessThan(CHILD_OUTPUT_WINDOW + 1024 * 1024);
  }, 30_000);

  test(`one worker runs at most ${CHILDREN_AT_ONCE} children at once; the others start, in order, as those end, and each is answered`, async () => {
    const posted: FromWorker[] = [];
    const through = spawnThroughMain((message) => posted.push(fromWorkerWire(message as never)!));
    const count = CHILDREN_AT_ONCE + 8;
    const started = Array.from({ length: count }, () => through.spawn({ argv: ["true"], cwd: process.cwd(), env: null, stdin: null }, () => undefined));
    const spawns = () => posted.filter((m) => m.type === "spawn") as Extract<FromWorker, { type: "spawn" }>[];
    expect(spawns().map((m) => m.ref)).toEqual(Array.from({ length: CHILDREN_AT_ONCE }, (_, i) => i + 1));
    // The main thread answers: the first two start and end, one fails to start.
    for (const ref of [1, 2]) through.receive({ type: "spawned", ref, pid: 1000 + ref });
    through.receive({ type: "child_exit", ref: 1, code: 0, signal: null });
    through.receive({ type: "spawn_failed", ref: 3, code: "ENOENT", message: "no such file" });
    expect(spawns().map((m) => m.ref).slice(CHILDREN_AT_ONCE)).toEqual([CHILDREN_AT_ONCE + 1, CHILDREN_AT_ONCE + 2]);
    await expect(started[2]!).rejects.toThrow("no such file");
    expect(await started[0]!).toMatchObject({ pid: 1001 });
    // Output taken by the worker is acknowledged to the main thread.
    through.receive({ type: "child_output", ref: 2, stream: "stdout", chunk: new Uint8Array(5) });
    expect(posted.at(-1)).toEqual({ type: "child_taken", ref: 2, bytes: 5 });
  });

  test("a child given up on while it waits its turn (its execution cancelled, its task over) never starts; the next one waiting takes the turn (checking tester, session 45)", async () => {
    const posted: FromWorker[] = [];
    const through = spawnThroughMain((message) => posted.push(fromWorkerWire(message as never)!));
    const request = { argv: ["true"], cwd: process.cwd(), env: null, stdin: null };
    for (let i = 0; i < CHILDREN_AT_ONCE; i++) void through.spawn(request, () => undefined).catch(() => undefined);
    let wanted = true;
    const given = through.spawn(request, () => undefined, undefined, () => !wanted);
    const after = through.spawn(request, () => undefined, undefined, () => false);
    const spawned = () => posted.filter((m) => m.type === "spawn").map((m) => (m as { ref: number }).ref);
    expect(spawned()).toHaveLength(CHILDREN_AT_ONCE);
    wanted = false;
    through.receive({ type: "spawn_failed", ref: 1, code: "ENOENT", message: "gone" });
    await expect(given).rejects.toThrow("it was no longer wanted when its turn came");
    expect(spawned()).not.toContain(CHILDREN_AT_ONCE + 1);
    expect(spawned()).toContain(CHILDREN_AT_ONCE + 2);
    through.receive({ type: "spawned", ref: CHILDREN_AT_ONCE + 2, pid: 77 });
    expect(await after).toMatchObject({ pid: 77 });
    // Thousands given up on at once pass the turn on in a loop, not one call inside the next.
    const many = Array.from({ length: 50_000 }, () => through.spawn(request, () => undefined, undefined, () => true).catch(() => "given up"));
    const last = through.spawn(request, () => undefined, undefined, () => false);
    through.receive({ type: "spawn_failed", ref: 2, code: "ENOENT", message: "gone" });
    expect(new Set(await Promise.all(many))).toEqual(new Set(["given up"]));
    expect(spawned().at(-1)).toBe(CHILDREN_AT_ONCE + 2 + 50_001);
    void last.catch(() => undefined);
  });
});
