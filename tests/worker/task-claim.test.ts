import { describe, expect, test } from "bun:test";
import { beginTask, beginTimeOf, begunAgo, claimTime, handTask, isUnreceived, MAX_TASK_ID, newClaim, receiveTask, takeBackUnbegun, takeBackUnreceived } from "../../runtime/worker/_task-claim.ts";

const word = () => new Int32Array(new SharedArrayBuffer(4));

describe("task claim", () => {
  test("a task handed, received and begun is never taken back: not by a cancel, not by the start check", () => {
    const claim = word();
    handTask(claim, 7);
    expect(isUnreceived(claim, 7)).toBe(true);
    expect(receiveTask(claim, 7)).toBe(true);
    expect(isUnreceived(claim, 7)).toBe(false);
    expect(beginTask(claim, 7)).toBe(true);
    expect(takeBackUnbegun(claim, 7)).toBeNull();
    expect(takeBackUnreceived(claim, 7)).toBe(false);
  });

  test("a task taken back before its worker read it is neither received nor begun", () => {
    const claim = word();
    handTask(claim, 7);
    expect(takeBackUnbegun(claim, 7)).toBe("handed");
    expect(receiveTask(claim, 7)).toBe(false);
    expect(beginTask(claim, 7)).toBe(false);
  });

  test("a task taken back while its worker prepares it (importing the file, parsing the input) is never begun", () => {
    const claim = word();
    handTask(claim, 7);
    expect(receiveTask(claim, 7)).toBe(true);
    // The start check leaves a task being prepared alone: its worker is not stuck.
    expect(takeBackUnreceived(claim, 7)).toBe(false);
    expect(takeBackUnbegun(claim, 7)).toBe("received");
    expect(beginTask(claim, 7)).toBe(false);
    // Taken back once: a second cancel finds nothing to take.
    expect(takeBackUnbegun(claim, 7)).toBeNull();
  });

  test("a task is begun only after it was received: the worker cannot skip the step a take-back looks at", () => {
    const claim = word();
    handTask(claim, 7);
    expect(beginTask(claim, 7)).toBe(false);
    expect(takeBackUnbegun(claim, 7)).toBe("handed");
  });

  test("the next task handed to the worker is not the previous one's to receive or begin", () => {
    const claim = word();
    handTask(claim, 7);
    expect(receiveTask(claim, 7)).toBe(true);
    expect(takeBackUnbegun(claim, 7)).toBe("received");
    handTask(claim, 8);
    expect(beginTask(claim, 7)).toBe(false);
    expect(receiveTask(claim, 7)).toBe(false);
    expect(receiveTask(claim, 8)).toBe(true);
    expect(beginTask(claim, 8)).toBe(true);
  });

  test("the highest task id goes through every step, distinct from its received and begun marks", () => {
    const claim = word();
    handTask(claim, MAX_TASK_ID);
    expect(receiveTask(claim, MAX_TASK_ID)).toBe(true);
    expect(isUnreceived(claim, MAX_TASK_ID)).toBe(false);
    expect(beginTask(claim, MAX_TASK_ID)).toBe(true);
    expect(takeBackUnbegun(claim, MAX_TASK_ID)).toBeNull();
    handTask(claim, 1);
    expect(takeBackUnbegun(claim, 1)).toBe("handed");
  });

  test("the time a task's handler began is read only for the task begun, and with the wall clock's step between the threads' starts taken off", () => {
    const claim = newClaim();
    const begunAt = beginTimeOf(claim);
    handTask(claim, 7);
    expect(begunAgo(claim, begunAt, 7, 0)).toBeNull();
    expect(receiveTask(claim, 7)).toBe(true);
    expect(begunAgo(claim, begunAt, 7, 0)).toBeNull();
    // Noted by the worker 500 ms ago, before the swap that publishes it.
    begunAt[0] = claimTime() - 500;
    expect(beginTask(claim, 7)).toBe(true);
    expect(begunAgo(claim, begunAt, 7, 0)).toBeGreaterThanOrEqual(500);
    // The same note, from a worker started once the wall clock had stepped 1 s ahead of this thread's time base, is 1 s earlier here.
    expect(begunAgo(claim, begunAt, 7, 1000)).toBeGreaterThanOrEqual(1500);
    // Never less than nothing, whatever a step not seen did.
    expect(begunAgo(claim, begunAt, 7, -10_000)).toBe(0);
    // The next task's, not begun yet, reads as not begun.
    handTask(claim, 8);
    expect(begunAgo(claim, begunAt, 8, 0)).toBeNull();
    expect(begunAgo(claim, begunAt, 7, 0)).toBeNull();
  });
});
