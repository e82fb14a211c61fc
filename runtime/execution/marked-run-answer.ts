// What a server answers of an execution `docket run` ran without a server, by its mark
// (docs/protocol.md, "A run without a server"): its end once written there, else why the server
// cannot tell it — never an identity alone that reads as an execution long settled.
import type { FailureOptions } from "./failure.ts";
import type { ExecutionSnapshot } from "./snapshot.ts";
import type { RunMark } from "../store/run-marks.ts";

/** A run without a server as its mark tells it now, and whether its process still runs ("unknown": from another pid namespace). */
export interface MarkedRun {
  mark: RunMark;
  alive: boolean | "unknown";
  /** Its mark holds an end no run wrote (edited by hand): how it ended cannot be told. */
  unreadableEnd?: true;
}

/** The run's end (its final snapshot, its details not this server's), or the failure that says why there is none to tell. */
export type MarkedRunAnswer = { ended: ExecutionSnapshot & { details_expired: true } } | { failure: Omit<FailureOptions, "request_id" | "trace_id" | "stage"> };

export function markedRunAnswer({ mark, alive, unreadableEnd }: MarkedRun): MarkedRunAnswer {
  const id = mark.execution_id;
  const context = { run_id: mark.run_id, execution_id: id, pid: mark.pid, started_at: mark.started_at };
  if (unreadableEnd) {
    return {
      failure: {
        error_code: "unavailable",
        message: `run_id ${mark.run_id} names ${id}, which docket run (pid ${mark.pid}) ran without a server from ${mark.started_at}; its mark in .docket/runs/ holds an end that is not the one a run writes there (edited?), so how it ended cannot be told, and nothing runs again.`,
        suggestion: "Check whether that run's work took effect; use another run_id to run it again.",
        retryability: "never",
        outcome_certainty: "unknown",
        context,
      },
    };
  }
  // Its events and log were the run's own, never sent here: only the end it wrote is known.
  if (mark.end !== undefined) return { ended: { ...mark.end, details_expired: true } };
  if (alive === true) {
    return {
      failure: {
        error_code: "unavailable",
        message: `run_id ${mark.run_id} names ${id}, which docket run (pid ${mark.pid}) has been running without a server since ${mark.started_at}: this server does not run it and holds none of its events, and how it ends is written in its mark (.docket/runs/) once it ends. Nothing runs again.`,
        suggestion: "Ask again once that run has ended (the same run_id is safe): the answer is then its end.",
        retryability: "after_delay",
        context,
      },
    };
  }
  if (alive === false) {
    return {
      failure: {
        error_code: "unavailable",
        message: `run_id ${mark.run_id} names ${id}, which docket run (pid ${mark.pid}) ran without a server from ${mark.started_at} and ended without writing how it ended (it was killed?): whether its work took effect is not known, and nothing runs again.`,
        suggestion: "Check whether that run's work took effect; use another run_id to run it again.",
        retryability: "never",
        outcome_certainty: "unknown",
        context,
      },
    };
  }
  return {
    failure: {
      error_code: "unavailable",
      message: `run_id ${mark.run_id} names ${id}, which docket run (pid ${mark.pid}, in another pid namespace) runs or ran without a server and has not written how it ended: this server cannot tell whether it still runs. Nothing runs again.`,
      suggestion: "Ask again once that run has ended (the same run_id is safe), or use another run_id to run the work again.",
      retryability: "safe",
      context,
    },
  };
}

/** A refusal's text for what a server cannot do with a run without a server. */
export interface NotHeld {
  message: string;
  suggestion: string;
  context: Record<string, unknown>;
}

/**
 * Why this server cannot do what was asked (`cannot`: "has none of its events", "cannot cancel
 * it") of a run without a server: its events and log stayed with that run, and the server knows
 * only what its mark says.
 */
export function markedRunNotHeld(id: string, answer: MarkedRunAnswer, cannot: string): NotHeld {
  if ("ended" in answer) {
    const { run_id, state } = answer.ended;
    return {
      message: `${id} ran in a docket run without a server${run_id ? ` (run_id ${run_id})` : ""} and ended ${state}; its events and log stayed with that run, and this server, which knows only how it ended, ${cannot}.`,
      suggestion: `Read how it ended with executions.get (GET /api/v1/executions/get?id=${id}); that docket run showed its events itself.`,
      context: { id, run_id, state, ran_without_server: true },
    };
  }
  const { message, suggestion, context } = answer.failure;
  return {
    message: `${message} This server ${cannot}.`,
    suggestion: suggestion ?? "Ask executions.get of its id again later.",
    context: { id, ...context, ran_without_server: true },
  };
}

/** The not_found of an execution a server does not hold, saying why when it ran in a `docket run` without a server (`notHeld`). */
export function executionNotFound(id: string, notHeld: NotHeld | null): { error_code: "not_found"; message: string; suggestion?: string; context: Record<string, unknown> } {
  return notHeld === null ? { error_code: "not_found", message: `No execution ${id}.`, context: { id } } : { error_code: "not_found", ...notHeld };
}
