import { describe, expect, test } from "bun:test";
import { currentThread, MemoryWatchdog, threadMinorFaults } from "../../runtime/worker/memory-watchdog.ts";

const MIB = 1024 * 1024;
const PAGES_PER_MIB = MIB / 4096;

/** A watchdog over a process whose memory and per-thread faults the test sets by hand. */
function rig(limitMb: number, perThread = true) {
  const state = { rssMb: 100, faults: new Map<string, number>([["1/task/1", 0]]) };
  const exceeded: Array<[number, number]> = [];
  const watchdog = new MemoryWatchdog({
    limitMb,
    intervalMs: 60_000,
    rss: () => state.rssMb * MIB,
    faults: (thread) => state.faults.get(thread) ?? null,
    onExceeded: (key, mb) => void exceeded.push([key, mb]),
    perThread,
    mainThread: "1/task/1",
  });
  /** Thread `t` touches `mb` fresh MiB, and the process grows as much. */
  const grow = (t: string, mb: number) => {
    state.faults.set(t, (state.faults.get(t) ?? 0) + mb * PAGES_PER_MIB);
    state.rssMb += mb;
  };
  return { state, exceeded, watchdog, grow };
}

describe("MemoryWatchdog", () => {
  test("MemoryWatchdog skips a look the system cannot give (no file descriptor left) and goes on sampling", async () => {
    let failing = true;
    let rssMb = 100;
    const exceeded: number[] = [];
    const watchdog = new MemoryWatchdog({
      limitMb: 64,
      intervalMs: 5,
      rss: () => {
        if (failing) throw new Error("Failed to get memory usage");
        return rssMb * MIB;
      },
      faults: () => null,
      onExceeded: (key) => void exceeded.push(key),
      perThread: false,
      mainThread: null,
    });
    try {
      watchdog.watch(7, () => null);
      // Several looks fail: none may escape (a timer's throw is the server's uncaught error).
      await Bun.sleep(60);
      failing = false;
      await Bun.sleep(30);
      rssMb += 200;
      for (let i = 0; i < 100 && exceeded.length === 0; i++) await Bun.sleep(5);
      expect(exceeded).toEqual([7]);
    } finally {
      watchdog.close();
    }
  });

  test("MemoryWatchdog stops no handler for growth the main thread made: a flood that churns but holds nothing runs on", () => {
    const { state, exceeded, watchdog, grow } = rig(64);
    watchdog.watch(1, () => "1/task/11");
    watchdog.sample();
    // The handler allocates and frees as it emits (its faults pass the limit over and over); the
    // main thread stores what it emits and grows the process by 150 MiB, past twice the limit.
    for (let i = 0; i < 10; i++) {
      state.faults.set("1/task/11", (state.faults.get("1/task/11") ?? 0) + 50 * PAGES_PER_MIB);
      grow("1/task/1", 15);
      watchdog.sample();
    }
    expect(exceeded).toEqual([]);
    // A handler that holds what it allocates is still stopped, main thread busy or not.
    grow("1/task/11", 80);
    watchdog.sample();
    expect(exceeded.map(([key]) => key)).toEqual([1]);
  });

  test("MemoryWatchdog's rebase after a collect forgives what the handler's own thread faulted in (churn left resident), not growth elsewhere (a Worker of its own that took 640 MiB at once is found again) (session 34)", () => {
    for (const churn of [true, false]) {
      const state = { rssMb: 100, faults: new Map<string, number>([["1/task/1", 0], ["1/task/11", 0]]) };
      const findings: boolean[] = [];
      const watchdog = new MemoryWatchdog({
        limitMb: 64,
        intervalMs: 60_000,
        rss: () => state.rssMb * MIB,
        faults: (thread) => state.faults.get(thread) ?? null,
        // Each finding asks the worker to collect (false: still watched), which answers small.
        onExceeded: (_key, _mb, processWide) => (findings.push(processWide), false),
        perThread: true,
        mainThread: "1/task/1",
      });
      watchdog.watch(1, () => "1/task/11");
      watchdog.sample();
      // 640 MiB faulted in by the handler's thread (garbage it frees), or by another (its own Worker).
      if (churn) state.faults.set("1/task/11", 640 * PAGES_PER_MIB);
      state.rssMb += 640;
      watchdog.sample();
      expect(findings).toEqual([!churn]);
      watchdog.restartCount(1);
      watchdog.rebase(1);
      watchdog.sample();
      expect(findings).toEqual(churn ? [false] : [true, true]);
      watchdog.close();
    }
  });

  test("MemoryWatchdog names the handler whose thread grew past the limit, not the one beside it", () => {
    const { state, exceeded, watchdog, grow } = rig(64);
    state.faults.set("1/task/11", 500).set("1/task/12", 900);
    watchdog.watch(1, () => "1/task/11");
    watchdog.watch(2, () => "1/task/12");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    grow("1/task/12", 30);
    watchdog.sample();
    expect(exceeded).toEqual([]);
    grow("1/task/11", 80);
    watchdog.sample();
    expect(exceeded).toEqual([[1, 80]]);
    // Reported once: it is no longer watched.
    watchdog.sample();
    expect(exceeded).toHaveLength(1);
    watchdog.close();
  });

  test("MemoryWatchdog never stops a handler for page faults alone: the process must have grown too", () => {
    const { state, exceeded, watchdog } = rig(64);
    state.faults.set("1/task/11", 0);
    watchdog.watch(1, () => "1/task/11");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    // Allocating and freeing over and over faults pages in again and again without holding them.
    state.faults.set("1/task/11", 10_000 * PAGES_PER_MIB);
    state.rssMb += 10;
    watchdog.sample();
    expect(exceeded).toEqual([]);
    watchdog.close();
  });

  test("MemoryWatchdog counts from when the handler began, on a worker whose thread was not known yet", () => {
    const { state, exceeded, watchdog, grow } = rig(64);
    let thread: string | null = null;
    state.faults.set("1/task/11", 5_000 * PAGES_PER_MIB).set("1/task/12", 0);
    watchdog.watch(1, () => thread);
    watchdog.watch(2, () => "1/task/12");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    // The process grows by the other handler while this worker is still starting: not charged to it.
    grow("1/task/12", 100);
    watchdog.sample();
    expect(exceeded).toEqual([[2, 100]]);
    // Its worker terminated, the memory it held is given back.
    state.rssMb -= 100;
    exceeded.length = 0;
    thread = "1/task/11";
    watchdog.sample();
    grow("1/task/11", 50);
    watchdog.sample();
    expect(exceeded).toEqual([]);
    grow("1/task/11", 20);
    watchdog.sample();
    expect(exceeded).toEqual([[1, 70]]);
    watchdog.close();
  });

  test("MemoryWatchdog without per-thread counters stops every running handler once the process outgrew the limit", () => {
    const { state, exceeded, watchdog } = rig(64, false);
    watchdog.watch(1, () => null);
    watchdog.watch(2, () => null);
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    state.rssMb += 65;
    watchdog.sample();
    expect(exceeded.map(([key]) => key).sort()).toEqual([1, 2]);
    watchdog.close();
  });

  test("MemoryWatchdog stops the largest when faults under-count but the process holds more than every allowance", () => {
    const { state, exceeded, watchdog } = rig(64);
    state.faults.set("1/task/11", 0).set("1/task/12", 0);
    watchdog.watch(1, () => "1/task/11");
    watchdog.watch(2, () => "1/task/12");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    // Huge pages: one fault maps 2 MiB, so the counters say little while the process grew a lot.
    state.faults.set("1/task/11", 10 * PAGES_PER_MIB).set("1/task/12", 2);
    state.rssMb += 64 * 3 + 1;
    watchdog.sample();
    // Charged with what the process grew by, not the faults it counted: held where no counter sees it.
    expect(exceeded).toEqual([[1, 64 * 3 + 1]]);
    watchdog.close();
  });

  test("MemoryWatchdog does not charge the handlers still running with what a stopped worker has not given back yet", () => {
    const { state, exceeded, watchdog, grow } = rig(64);
    state.faults.set("1/task/11", 0).set("1/task/12", 0);
    watchdog.watch(1, () => "1/task/11");
    watchdog.watch(2, () => "1/task/12");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    grow("1/task/11", 300);
    grow("1/task/12", 10);
    watchdog.sample();
    expect(exceeded).toEqual([[1, 300]]);
    // The stopped worker's 300 MiB are still resident; the one beside it grew 10 more.
    grow("1/task/12", 10);
    watchdog.sample();
    expect(exceeded).toEqual([[1, 300]]);
    watchdog.close();
  });

  test("MemoryWatchdog takes its baseline when the first handler begins, so memory held before is not charged", () => {
    const { state, exceeded, watchdog, grow } = rig(64);
    state.rssMb = 900;
    state.faults.set("1/task/11", 0);
    watchdog.watch(1, () => "1/task/11");
    // The first look, as the watchdog takes it a few ms after the first handler began.
    watchdog.sample();
    grow("1/task/11", 60);
    watchdog.sample();
    expect(exceeded).toEqual([]);
    watchdog.unwatch(1);
    watchdog.close();
  });

  test("MemoryWatchdog.watch costs no system call: a handler over before the first look is never measured", () => {
    let reads = 0;
    const watchdog = new MemoryWatchdog({
      limitMb: 64,
      rss: () => (reads++, 0),
      faults: () => (reads++, 0),
      perThread: true,
      onExceeded: () => undefined,
    });
    for (let key = 1; key <= 1000; key++) {
      watchdog.watch(key, () => "1/task/11");
      watchdog.unwatch(key);
    }
    expect(reads).toBe(0);
    watchdog.close();
  });

  test("threadMinorFaults reads this thread's counter and grows when it touches fresh memory (Linux)", () => {
    const thread = currentThread();
    if (process.platform !== "linux") {
      expect(thread).toBeNull();
      return;
    }
    expect(thread).toMatch(/^\d+\/task\/\d+$/);
    const before = threadMinorFaults(thread!)!;
    // The allocator may hand back pages an earlier test already touched (no fault then): blocks
    // are kept until one of them had to be fresh, at most 512 MiB, which no cache holds after
    // the suite's earlier tests.
    const kept: Uint8Array[] = [];
    while (threadMinorFaults(thread!)! - before <= 1000 && kept.length < 32) {
      const block = new Uint8Array(16 * MIB);
      for (let i = 0; i < block.length; i += 4096) block[i] = 1;
      kept.push(block);
    }
    expect(threadMinorFaults(thread!)! - before).toBeGreaterThan(1000);
    expect(threadMinorFaults("0/task/0")).toBeNull();
  });
});
