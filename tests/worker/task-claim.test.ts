import { describe, expect, test } from "bun:test";
import { beginTask, handTask, isUnreceived, MAX_TASK_ID, receiveTask, takeBackUnbegun, takeBackUnreceived } from "../../runtime/worker/_task-claim.ts";

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
});
