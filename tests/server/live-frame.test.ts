import { describe, expect, test } from "bun:test";
import { estimatedFrameBytes } from "../../runtime/server/live-frame.ts";
import { allEvents, draft, idOf, limitsWith, newExecution } from "../store/_fixtures.ts";
import { createMemoryStore } from "../../runtime/store/index.ts";

describe("estimatedFrameBytes", () => {
  test("estimatedFrameBytes is within a fifth of the frame's UTF-8 bytes for every kind of event a handler emits, short or long, ASCII or not", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    const long = "é".repeat(3000);
    store.append(idOf(1), [draft.started(), draft.step("build"), draft.progress(1), draft.progress(123_456, 200_000), draft.log("compiling src/index.ts"), draft.log(long)]);
    store.append(idOf(1), [draft.stream("out 1\n"), draft.stream(long), draft.diagnostic("unused variable x"), draft.stepDone("build", true, "done"), draft.completed("succeeded")]);
    for (const event of allEvents(store, idOf(1))) {
      const frame = Buffer.byteLength(JSON.stringify(event));
      const ratio = estimatedFrameBytes(event) / frame;
      expect({ type: event.type, frame, close: ratio >= 0.8 && ratio <= 1.25 }).toEqual({ type: event.type, frame, close: true });
    }
  });
});
