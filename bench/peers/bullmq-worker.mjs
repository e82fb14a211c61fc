// The BullMQ peer's worker on Node: `node bullmq-worker.mjs PORT`. Concurrency 2 (two cores, like
// docket's pool); every job completes at once. Prints "ready" once it listens for jobs.
import { Worker } from "bullmq";

const worker = new Worker("bench", async () => ({ ok: true }), { connection: { host: "127.0.0.1", port: Number(process.argv[2]) }, concurrency: 2 });
await worker.waitUntilReady();
console.log("ready");
// Bounded: the bench kills it, and it never outlives a run that lost track of it.
setTimeout(() => process.exit(3), 300_000).unref();
