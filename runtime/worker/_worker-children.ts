import type { Worker } from "node:worker_threads";
import { toWire, type ToWorker } from "./_messages.ts";
import { childGroups, endProcessGroups, signalGroup } from "./process-groups.ts";
import { SpawnError, spawnHere, STDIN_PART_BYTES, type SpawnRequest } from "./spawn-child.ts";
import { NO_LEDGER, type ChildLedger } from "./child-ledger.ts";

/** The children of one worker's `ctx.exec` calls, started and reaped by the main thread. */
export interface WorkerChildren {
  /** Starts a child the worker asked for; its pid, output and end are posted back under `ref`. */
  spawn(ref: number, request: SpawnRequest): void;
  /** The worker took `bytes` of the output of child `ref`. */
  taken(ref: number, bytes: number): void;
  /** The next part of child `ref`'s stdin, which the main thread asked the worker for; null: its end. */
  stdin(ref: number, part: Uint8Array | null): void;
  /** The worker is gone (terminated, crashed, closed): ends every group it left, TERM then KILL after `graceMs`. */
  end(graceMs: number): Promise<void>;
}

/** How much of one child's output may be posted to its worker and not taken yet before its pipes are left unread. */
export const CHILD_OUTPUT_WINDOW = 4 * 1024 * 1024;

/**
 * Serves a worker's children from the main thread. A worker cannot run code once terminated, and
 * the thread that starts a child is the one that reaps it: started here, a child of a worker that
 * was terminated or crashed is still ended and reaped, never left running or as a zombie.
 */
export function workerChildren(worker: Worker, ledger: ChildLedger = NO_LEDGER): WorkerChildren {
  const groups = new Set<number>();
  // Per child: its output posted and not yet taken, and what reads its pipes again once paused.
  const flows = new Map<number, { unread: number; resume: (() => void) | null }>();
  // Per child: what takes the next part of its stdin, once asked for (child_stdin_wanted).
  const stdinWaits = new Map<number, (part: Uint8Array | null) => void>();
  const stdinDone = (ref: number) => {
    const wait = stdinWaits.get(ref);
    stdinWaits.delete(ref);
    wait?.(null);
  };
  let ended = false;
  const post = (message: ToWorker) => {
    if (ended) return;
    try {
      worker.postMessage(toWire(message));
    } catch {
      // The worker is being terminated; its end() ends the child.
    }
  };
  return {
    spawn(ref, request) {
      // Recorded as soon as the process exists: a docket killed a moment later leaves it recorded.
      let recorded: number | null = null;
      const record = (pid: number) => {
        recorded = pid;
        ledger.started(pid);
      };
      const flow = { unread: 0, resume: null as (() => void) | null };
      flows.set(ref, flow);
      const output = (stream: "stdout" | "stderr", chunk: Uint8Array, pause?: () => () => void) => {
        post({ type: "child_output", ref, stream, chunk });
        flow.unread += chunk.byteLength;
        // A worker that does not take what it is sent (a handler busy in a loop) holds it in its
        // queue: posted without end, a child writing fast grew the server by 75 MB a second (containment tester, session 45).
        if (flow.unread > CHILD_OUTPUT_WINDOW && flow.resume === null && pause !== undefined && !ended) flow.resume = pause();
      };
      // The rest of its stdin stays with the worker, asked for a part at a time as the pipe takes each.
      const moreStdin = () =>
        new Promise<Uint8Array | null>((take) => {
          if (ended) return take(null);
          stdinWaits.set(ref, take);
          post({ type: "child_stdin_wanted", ref });
        });
      spawnHere(request, output, record, undefined, request.stdinMore === true ? moreStdin : undefined)
        .then((child) => {
          if (ended) {
            // The worker went away while the child was starting.
            signalGroup(child.pid, "SIGKILL");
            ledger.ended(child.pid);
            return;
          }
          groups.add(child.pid);
          childGroups.add(child.pid);
          post({ type: "spawned", ref, pid: child.pid });
          void child.exited.then((exit) => {
            flows.delete(ref);
            stdinDone(ref);
            groups.delete(child.pid);
            childGroups.delete(child.pid);
            ledger.ended(child.pid);
            post({ type: "child_exit", ref, code: exit.code, signal: exit.signal });
          });
        })
        .catch((error: unknown) => {
          flows.delete(ref);
          stdinDone(ref);
          if (recorded !== null) ledger.ended(recorded);
          const e = error instanceof SpawnError ? error : new SpawnError(null, String((error as Error)?.message ?? error));
          post({ type: "spawn_failed", ref, code: e.code, message: e.message });
        });
    },
    taken(ref, bytes) {
      const flow = flows.get(ref);
      if (flow === undefined) return;
      flow.unread = Math.max(0, flow.unread - bytes);
      if (flow.resume !== null && flow.unread <= CHILD_OUTPUT_WINDOW / 2) {
        const resume = flow.resume;
        flow.resume = null;
        resume();
      }
    },
    stdin(ref, part) {
      const wait = stdinWaits.get(ref);
      if (wait === undefined) return;
      stdinWaits.delete(ref);
      // A part larger than asked for is a handler posting on the worker's port: the stdin ends there.
      wait(part !== null && part.byteLength > STDIN_PART_BYTES ? null : part);
    },
    end(graceMs) {
      ended = true;
      for (const ref of [...stdinWaits.keys()]) stdinDone(ref);
      // Read to their end, into nothing: a paused child's pipes would never close, and its exit never be seen.
      for (const flow of flows.values()) flow.resume?.();
      if (groups.size === 0) return Promise.resolve();
      const ending = [...groups];
      return endProcessGroups(ending, graceMs).then(() => {
        for (const pgid of ending) ledger.ended(pgid);
      });
    },
  };
}
