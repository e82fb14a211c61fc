import { ExecutionEventSchema, type ExecutionEvent } from "./protocol.ts";
import { checkValue, describeProblems } from "./validate.ts";

/** Why a report's events cannot be taken as they are; the caller turns it into `invalid_input`. */
export interface EventsProblem {
  message: string;
  context: Record<string, unknown>;
}

/**
 * Checks a report's events before any of them is applied: each one an event of the protocol
 * (the same schema `executions.protocol` serves), all of this execution, dense in sequence, and
 * `execution.created` exactly at sequence 1. Answers the events as parsed, or the first problem.
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
    checked.push(event);
  }
  return { ok: true, events: checked };
}

function refuse(message: string, context: Record<string, unknown>): { ok: false; problem: EventsProblem } {
  return { ok: false, problem: { message, context } };
}
