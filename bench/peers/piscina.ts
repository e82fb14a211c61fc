// The in-process pool peer: piscina 5 on Bun, no-op tasks, beside docket's pool and engine in the same run.
import Piscina from "piscina";

/** How the peer is set up; every row that quotes it says so. */
export const PISCINA_CONFIG = "piscina 5 on Bun, in-process, minThreads 2, maxThreads 2, defaults otherwise (atomics 'sync')";

/** A started piscina pool and the two ways the benches drive it. */
export interface PiscinaPeer {
  /** Tasks per second, `inFlight` outstanding at any time. */
  rate(calls: number, inFlight: number): Promise<number>;
  /** Round-trip times in ms, one task at a time, sorted. */
  latencies(calls: number): Promise<number[]>;
  close(): Promise<void>;
}

/** Starts the peer with `threads` threads and warms it (JIT, module load) before anything is timed. */
export async function startPiscina(threads = 2): Promise<PiscinaPeer> {
  const pool = new Piscina({ filename: new URL("./piscina-task.mjs", import.meta.url).href, minThreads: threads, maxThreads: threads });
  const peer: PiscinaPeer = {
    async rate(calls, inFlight) {
      let started = 0;
      const began = performance.now();
      const lane = async () => {
        while (started < calls) {
          started++;
          await pool.run({ n: 1 });
        }
      };
      await Promise.all(Array.from({ length: inFlight }, lane));
      return calls / ((performance.now() - began) / 1000);
    },
    async latencies(calls) {
      const times: number[] = [];
      for (let i = 0; i < calls; i++) {
        const began = performance.now();
        await pool.run({ n: 1 });
        times.push(performance.now() - began);
      }
      return times.sort((a, b) => a - b);
    },
    close: () => pool.destroy(),
  };
  await peer.rate(2_000, 64);
  return peer;
}
