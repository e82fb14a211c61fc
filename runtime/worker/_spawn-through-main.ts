import type { FromWorker, ToWorker } from "./_messages.ts";
import { SpawnError, type ChildExit, type MoreStdin, type OnOutput, type Spawner } from "./spawn-child.ts";

type ChildMessage = Extract<ToWorker, { type: "spawned" | "spawn_failed" | "child_output" | "child_exit" | "child_stdin_wanted" }>;

/** A worker's Spawner, and where the main thread's answers about its children are handed in. */
export interface ThroughMain {
  spawn: Spawner;
  receive(message: ChildMessage): void;
}

/**
 * The most `ctx.exec` children one worker has running at once; more wait their turn. Each is
 * started by the server's main thread, which a handler starting 7,000 at once (a
 * `Promise.all` over files) held for 15 s, every client with it (containment tester, session 45).
 */
export const CHILDREN_AT_ONCE = 32;

/**
 * The worker's side of `ctx.exec`: each child is started by the main thread (_worker-children.ts),
 * which then posts its pid, its output and its end, in that order, on the worker's port.
 */
export function spawnThroughMain(post: (message: FromWorker) => void): ThroughMain {
  interface Pending {
    onOutput: OnOutput;
    moreStdin: MoreStdin | undefined;
    started(pid: number): void;
    failed(error: SpawnError): void;
    exited(exit: ChildExit): void;
  }
  const pending = new Map<number, Pending>();
  let nextRef = 1;
  // Children asked for while CHILDREN_AT_ONCE run: started, in order, as others end.
  // Each answers whether it took the turn (false: given up on meanwhile, the turn passes on).
  const waiting: Array<() => boolean> = [];
  let running = 0;
  // A loop, not a call from one to the next: thousands given up on at once must not fill the stack.
  const startNext = () => {
    while (waiting.length > 0) if (waiting.shift()!()) return;
  };
  const ended = () => {
    running--;
    startNext();
  };
  return {
    spawn: (request, onOutput, _onPid, abandoned, moreStdin) =>
      new Promise((resolve, reject) => {
        const ref = nextRef++;
        let exited!: (exit: ChildExit) => void;
        const end = new Promise<ChildExit>((done) => (exited = done));
        pending.set(ref, {
          onOutput,
          moreStdin,
          started: (pid) => resolve({ pid, exited: end }),
          failed: (error) => {
            pending.delete(ref);
            ended();
            reject(error);
          },
          exited: (exit) => {
            pending.delete(ref);
            ended();
            exited(exit);
          },
        });
        const start = () => {
          // Cancelled, or its task over, while it waited its turn: never started (7,000 queued
          // children of a cancelled execution were each started and killed at once).
          if (abandoned?.() === true) {
            pending.delete(ref);
            reject(new SpawnError("ECANCELED", "it was no longer wanted when its turn came"));
            return false;
          }
          running++;
          post({ type: "spawn", ref, request });
          return true;
        };
        if (running < CHILDREN_AT_ONCE) start();
        else waiting.push(start);
      }),
    receive(message) {
      const child = pending.get(message.ref);
      if (!child) return;
      switch (message.type) {
        case "spawned":
          child.started(message.pid);
          break;
        case "spawn_failed":
          child.failed(new SpawnError(message.code, message.message));
          break;
        case "child_output":
          child.onOutput(message.stream, message.chunk);
          // Taken: the main thread may send more (it stops reading the child's pipes while too much waits here).
          post({ type: "child_taken", ref: message.ref, bytes: message.chunk.byteLength });
          break;
        case "child_exit":
          child.exited({ code: message.code, signal: message.signal });
          break;
        case "child_stdin_wanted": {
          const answer = (part: Uint8Array | null) => post({ type: "child_stdin", ref: message.ref, part });
          if (child.moreStdin === undefined) answer(null);
          else child.moreStdin().then(answer, () => answer(null));
          break;
        }
      }
    },
  };
}
