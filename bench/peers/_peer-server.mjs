// What the peer servers share: the control protocol with the bench (port out, commands in on
// stdin), a deadline, and the 1,000 events/s emitter. Plain JS, run by `node`.
import { createInterface } from "node:readline";
import { frameOf, now } from "./_frame.mjs";

/** A peer server never outlives this, whatever happens to the bench that started it. */
const DEADLINE_MS = 120_000;

/**
 * Starts the control side of a peer server: prints `port N` once listening, then on a `rate S`
 * line calls `broadcast` with one frame per ms of S seconds (the emit time in the frame's
 * message) and a final execution.completed frame, and prints `done N`.
 */
export function control(port, broadcast) {
  setTimeout(() => process.exit(3), DEADLINE_MS).unref();
  console.log(`port ${port}`);
  createInterface({ input: process.stdin }).on("line", async (line) => {
    const [command, arg] = line.split(" ");
    if (command !== "rate") return;
    const emitted = await emitAtRate(Number(arg), broadcast);
    console.log(`done ${emitted}`);
  });
  process.stdin.once("end", () => process.exit(0));
}

/** Broadcasts 1,000 frames/s for `seconds`, catching up on a late timer as docket's bench does. */
function emitAtRate(seconds, broadcast) {
  const total = seconds * 1000;
  const started = performance.now();
  let emitted = 0;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - started;
      for (const due = Math.min(total, Math.floor(elapsed)); emitted < due; ) {
        emitted++;
        broadcast(frameOf(emitted, { current: emitted, total, message: String(now()) }));
      }
      if (elapsed < total) return;
      clearInterval(timer);
      broadcast(frameOf(emitted + 1, { state: "succeeded", output: {}, duration_ms: total }, "execution.completed"));
      resolve(emitted);
    }, 1);
  });
}

/** The burst's frames, built before anything is timed. */
export const burstFrames = (count) => Array.from({ length: count }, (_, i) => frameOf(i + 1, { current: i + 1, total: count }));
