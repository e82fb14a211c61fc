import type { ExecutionStore } from "../store/store.ts";
import type { Clock } from "./clock.ts";
import type { Limits } from "./limits.ts";
import type { Actor, EventDraft, ExecutionEvent } from "./protocol.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import { buildFailure } from "./failure.ts";
import { isTerminal } from "./state-machine.ts";
import { ReportSessions, type ReportSession } from "./_report-sessions.ts";

/** How often the processes of the runs heard are looked at: one gone ends its silence soon, not after the whole limit. */
const REPORTER_CHECK_MS = 1000;

/** How long a run seen gone is still listened to: reports it sent before it exited may wait unread. */
const GONE_GRACE_MS = 1000;

/** What the watch is built from: the ledger's store and clock, and its judgement of a run's process. */
export interface ReportWatchOptions {
  store: ExecutionStore;
  limits: Pick<Limits, "report_silence_ms">;
  clock: Clock;
  log: (line: string) => void;
  /** Whether any process can be looked up at all (the server was given a way to). */
  looksUp: boolean;
  /** Whether a run's process is alive, as far as this server can see it (report-ledger.ts). */
  alive(pid: number, namespace: string | null): boolean;
  /** This server's own pid namespace (null: none): where the pid of a run adopted after a restart is looked up. */
  ownNamespace?: string | null;
  /** Ends a run that never started and never will (its run_id was never bound): `cancelled`, nothing applied. */
  abandon(snapshot: ExecutionSnapshot, why: string): void;
  /** Takes what a run whose process is gone left for this server at its end (LeftTaken). */
  takeLeft?(id: string): LeftTaken;
}

/** What a look at the reports a gone run left did: ended the execution, kept them for a later look (the store cannot take them now), or found none to take. */
export type LeftTaken = "ended" | "kept" | "none";

/** How soon reports kept for a later look are looked at again. */
const LEFT_AGAIN_MS = 5000;

/** The runs a server hears, and how it stops hearing one (report-ledger.ts). */
export interface ReportWatch {
  sessions: ReportSessions;
  /** A run was heard: its silence starts over. `namespace` is the one its report named (null: none). */
  hear(id: string, pid: number, namespace: string | null): ReportSession;
  /** Who asked the cancel the store holds for a reported execution, when it was asked of a server; null when the run cancelled itself. */
  askedCancel(id: string, pid: number): Actor | null;
  close(): void;
}

/**
 * How a server stops hearing the runs that report to it (docs/protocol.md): silence for
 * `report_silence_ms`, or a process seen gone (looked at every REPORTER_CHECK_MS, then a grace of
 * GONE_GRACE_MS for reports still unread), ends the execution — `failed` `unavailable` with an
 * unknown outcome (a read's is `not_applied`), or `cancelled` for a run that never had its run_id
 * and so never began. Runs an
 * earlier server heard and left unfinished in a durable store are heard from the start.
 */
export function createReportWatch(options: ReportWatchOptions): ReportWatch {
  const { store, limits, clock, log } = options;
  const sessions = new ReportSessions(clock, limits.report_silence_ms, (id, session) => silence(id, session));

  /** A run was heard: its silence starts over, and its process is looked at from now on. */
  function hear(id: string, pid: number, namespace: string | null): ReportSession {
    const session = sessions.touch(id, pid, namespace);
    watchReporters();
    return session;
  }

  let reporterCheck: unknown = null;

  /** Looks at the runs' processes every REPORTER_CHECK_MS while any is heard (and a process can be looked up at all). */
  function watchReporters(): void {
    if (reporterCheck !== null || !options.looksUp || sessions.size === 0) return;
    reporterCheck = clock.setTimeout(() => {
      reporterCheck = null;
      for (const [id, session] of sessions.entries()) {
        // A run adopted after a restart named its namespace only to the server that heard it: its
        // pid is looked up here, a run in another namespace being one this server cannot see.
        const namespace = session.adopted ? (options.ownNamespace ?? null) : session.namespace;
        if (!session.gone && !options.alive(session.pid, namespace)) sessions.endWithin(id, Math.min(GONE_GRACE_MS, limits.report_silence_ms));
      }
      watchReporters();
    }, REPORTER_CHECK_MS);
  }

  /**
   * Nothing heard for `report_silence_ms`: the execution fails `unavailable` with an unknown
   * outcome (the run may still be working where this server cannot see it), `not_applied` for a
   * read, so a killed run is never a ghost in the list.
   */
  function silence(id: string, session: ReportSession): void {
    const heard = store.current(id);
    if (!heard || isTerminal(heard.state)) return;
    // Gone after it ended while this server could not answer: its end may wait in .docket/reports/.
    const left = session.gone ? (options.takeLeft?.(id) ?? "none") : "none";
    if (left === "ended") return;
    if (left === "kept") {
      // The store cannot take them now: judged again later, not ended for silence meanwhile (its
      // end would be lost as the file went with it).
      const again = sessions.touch(id, session.pid, session.namespace);
      again.adopted = session.adopted;
      sessions.endWithin(id, LEFT_AGAIN_MS);
      return;
    }
    const snapshot = store.current(id);
    if (!snapshot || isTerminal(snapshot.state)) return;
    const silent = describeMs(limits.report_silence_ms);
    // What the server knows of the run's end: its process gone, or only nothing heard.
    const unheard = session.gone
      ? session.adopted
        ? `docket run (pid ${session.pid}), heard by an earlier server of this checkout, is not among this machine's processes`
        : `docket run (pid ${session.pid}) exited without reporting its end`
      : `nothing was heard from docket run (pid ${session.pid}) for ${silent}`;
    // Queued with its run_id not bound to it: the run waited for that before its handler, so it
    // never started (docs/protocol.md), and its run_id was never held.
    if (snapshot.state === "queued" && snapshot.run_id !== null && store.findRun(snapshot.run_id)?.execution_id !== id) {
      try {
        options.abandon(snapshot, `${unheard} before this server took its run_id`);
        log(`[docket] ${id}: ${unheard} before its run_id was taken; it never started and is cancelled.`);
      } catch (error) {
        log(`[docket] could not end the silent reported execution ${id}: ${(error as Error).message}`);
      }
      return;
    }
    // A read changes nothing, however far it got (docs/handler-api.md): nothing to reconcile.
    const write = snapshot.effect === "write";
    // What is not known is how far it got; a read changed nothing either way (outcome not_applied).
    const read = write ? "" : ` ${snapshot.capability} is a read: whatever it got to, it changed nothing.`;
    const failure = buildFailure({
      error_code: "unavailable",
      stage: "report",
      message: (session.gone
        ? session.adopted
          ? `docket run (pid ${session.pid}), which an earlier server of this checkout heard, is not among this machine's processes: it ended while no server could hear it (killed, crashed, or done while the server was down), or it runs in another pid namespace (a container) this server cannot see. How far the work got is not known here.`
          : `docket run (pid ${session.pid}) exited without its end reaching this server: it was killed or crashed, or it ended while this server could not hear it (stopped or too busy), so how far the work got is not known here.`
        : `Nothing was heard from docket run (pid ${session.pid}) for ${silent}: it was stopped, killed, or lost its way to this server, and may still be working where this server cannot see it.`) + read,
      retryability: write ? "manual_reconcile" : "safe",
      outcome_certainty: write ? "unknown" : "not_applied",
      suggestion: !write
        ? `${snapshot.capability} is a read and changed nothing: its own output (a terminal, a CI log) says how it ended, and running it again is safe.`
        : session.gone
          ? "Its own output (a terminal, a CI log) says how far it got; check what the work changes before running it again."
          : `Check whether process ${session.pid} is still running; its own output says how the work ended.`,
      context: { pid: session.pid, silence_ms: limits.report_silence_ms, ...(session.gone ? { reason: session.adopted ? "reporter_not_found" : "reporter_exited" } : {}) },
      request_id: snapshot.request_id,
      trace_id: snapshot.trace_id,
    });
    // On this server's clock alone: the run's started_at is its own clock, which may be far behind.
    const duration_ms = session.runningSince === null ? 0 : Math.max(0, clock.now().getTime() - session.runningSince);
    // A run heard only up to its creation is still queued here, and queued cannot fail: it had started.
    const drafts: EventDraft[] = snapshot.state === "queued" ? [{ type: "execution.started", data: {} }] : [];
    drafts.push({ type: "execution.completed", data: { state: "failed", failure, duration_ms } });
    try {
      store.append(id, drafts);
      log(`[docket] ${id}: ${unheard}; it is failed unavailable.`);
    } catch (error) {
      log(`[docket] could not end the silent reported execution ${id}: ${(error as Error).message}`);
    }
  }

  /**
   * Runs reported to an earlier server on this checkout and still unfinished in a durable store:
   * their process may still be working, so each gets a fresh silence timer — a report resumes it,
   * silence ends it `unavailable` as for any run.
   */
  function adoptUnfinished(): void {
    for (const state of ["queued", "running", "cancelling"] as const) {
      let cursor: string | undefined;
      do {
        const page = store.list({ state, limit: 500, cursor });
        for (const snapshot of page.items) {
          if (snapshot.actor.kind !== "cli") continue;
          const session = sessions.touch(snapshot.id, snapshot.actor.pid);
          session.adopted = true;
          if (snapshot.state !== "queued") session.runningSince ??= clock.now().getTime();
          // A cancel asked of the earlier server, which the run may not have heard: it hears it now.
          if (snapshot.state === "cancelling") session.cancelBy = askedCancel(snapshot.id, snapshot.actor.pid);
        }
        cursor = page.next_cursor ?? undefined;
      } while (cursor !== undefined);
    }
  }

  /**
   * Who asked the cancel the store holds for a reported execution, when it was asked of a server
   * (not the run's own, from its Ctrl-C): null when the run cancelled itself, or the event is no
   * longer retained (the run has reported long past it, and so has cancelled by now).
   */
  function askedCancel(id: string, pid: number): Actor | null {
    for (let after = 0; ; ) {
      const page = store.events(id, after, 1000);
      if (page === null || page.events.length === 0) return null;
      const cancel = page.events.find((event): event is ExecutionEvent<"execution.cancel_requested"> => event.type === "execution.cancel_requested");
      if (cancel) return cancel.data.actor.kind === "cli" && cancel.data.actor.pid === pid ? null : cancel.data.actor;
      after = page.events.at(-1)!.sequence;
    }
  }

  adoptUnfinished();
  watchReporters();

  return {
    sessions,
    hear,
    askedCancel,
    close() {
      if (reporterCheck !== null) clock.clearTimeout(reporterCheck);
      reporterCheck = null;
      sessions.close();
    },
  };
}

/** `30 s`, `1500 ms`: a bound as a person reads it. */
function describeMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
