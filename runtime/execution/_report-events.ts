import { ExecutionEventSchema, type Actor, type ExecutionEvent } from "./protocol.ts";
import { checkValue, describeProblems } from "./validate.ts";

/** Why a report's events cannot be taken as they are; the caller turns it into `invalid_input`. */
export interface EventsProblem {
  message: string;
  context: Record<string, unknown>;
}

/**
 * Checks a report's events before any of them is applied: each one an event of the protocol
 * (the same schema `executions.protocol` serves), all of this execution, dense in sequence,
 * `execution.created` exactly at sequence 1, and no number a run could not have made
 * (numberProblem). Answers the events as parsed, or the first problem.
 */
export function checkReportEvents(id: string, events: readonly unknown[]): { ok: true; events: ExecutionEvent[] } | { ok: false; problem: EventsProblem } {
  const checked: ExecutionEvent[] = [];
  for (let i = 0; i < events.length; i++) {
    const path = `input.events[${i}]`;
    const result = checkValue<ExecutionEvent>(ExecutionEventSchema, events[i], path);
    if (!result.ok) return refuse(`${path} is not an event of the protocol: ${describeProblems(result.problems.slice(0, 5))}`, { index: i, problems: result.problems.slice(0, 20) });
    const event = result.value;
    if (event.execution_id !== id) return refuse(`${path} belongs to ${event.execution_id}, not to the reported ${id}.`, { index: i });
    const previous = checked.at(-1);
    if (previous && event.sequence !== previous.sequence + 1) {
      return refuse(`${path} has sequence ${event.sequence} after ${previous.sequence}: the events of a report are dense and in order.`, { index: i });
    }
    if ((event.type === "execution.created") !== (event.sequence === 1)) {
      return refuse(`${path}: execution.created is the event at sequence 1 and no other, got ${event.type} at ${event.sequence}.`, { index: i });
    }
    const number = numberProblem(event);
    if (number !== null) return refuse(`${path}.data.${number.field} must be ${number.rule}, got ${number.value}.`, { index: i, field: `data.${number.field}` });
    checked.push(event);
  }
  return { ok: true, events: checked };
}

/**
 * The first number of an event that no run's engine can make, or null. The event schema takes any
 * number; these bounds are the ones the engine and the handler's context keep in this process,
 * so a report from a real run always meets them: a progress count and total are never below 0
 * (`ctx.progress.progress` reports a negative or non-finite one as 0 / unknown, as in
 * worker/_worker-context.ts), a duration never below 0, a run's pid a whole number from 1. No
 * stricter: a current above its total, or a diagnostic's line 0, is what a handler may report.
 */
function numberProblem(event: ExecutionEvent): { field: string; rule: string; value: number } | null {
  const below = (field: string, value: number | null | undefined, least: number, rule: string) => (typeof value === "number" && !(value >= least) ? { field, rule, value } : null);
  switch (event.type) {
    case "execution.progress": {
      const data = (event as ExecutionEvent<"execution.progress">).data;
      return below("current", data.current, 0, "a number of 0 or more (a progress count)") ?? below("total", data.total, 0, "a number of 0 or more, or null when the total is unknown");
    }
    case "execution.completed":
      return below("duration_ms", (event as ExecutionEvent<"execution.completed">).data.duration_ms, 0, "a number of 0 or more (milliseconds)");
    case "execution.created":
    case "execution.cancel_requested":
    case "execution.reconciled": {
      const actor = (event.data as { actor: Actor }).actor;
      if (actor.kind !== "cli" || Number.isSafeInteger(actor.pid) && actor.pid >= 1) return null;
      return { field: "actor.pid", rule: "a process id, a whole number from 1", value: actor.pid };
    }
    default:
      return null;
  }
}

function refuse(message: string, context: Record<string, unknown>): { ok: false; problem: EventsProblem } {
  return { ok: false, problem: { message, context } };
}
