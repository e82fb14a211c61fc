// What a load error says of an error thrown while a capability file was imported (capability/_import-failure.ts).
import { describe, expect, test } from "bun:test";
import { describeImportFailure } from "../../runtime/capability/_import-failure.ts";

const FILE = "/repo/capabilities/team.cap.ts";

function thrown(message: string, stack: string): Error {
  const error = new Error(message);
  error.stack = `Error: ${message}\n${stack}`;
  return error;
}

describe("describeImportFailure", () => {
  test("an error thrown in a module the file imports names that module and its line", () => {
    const error = thrown("boom", "    at load (/repo/lib/helper.ts:7:11)\n    at /repo/capabilities/other.ts:1:1");
    expect(describeImportFailure(error, FILE).reason).toBe("it threw while loading: boom (in ../lib/helper.ts line 7)");
  });

  test("docket's own code inside the binary is never named as the user's module (it said '(in ../../$bunfs/root/chunk-….js line 276)')", () => {
    const error = thrown("docket no longer holds the text", "    at pinned (/$bunfs/root/chunk-xvjrzphc.js:276:13)\n    at node_modules/x/index.js:1:1");
    expect(describeImportFailure(error, FILE).reason).toBe("it threw while loading: docket no longer holds the text");
  });

  test("a thrown value that is no Error is named as what it is, with its message or value (it read '[object Object]')", () => {
    expect(describeImportFailure({ message: "obj thrown" }, FILE).reason).toBe("it threw while loading: an object (not an Error): obj thrown");
    expect(describeImportFailure({ code: 1 }, FILE).reason).toBe("it threw while loading: an object (not an Error)");
    expect(describeImportFailure(42, FILE).reason).toBe("it threw while loading: a number (not an Error): 42");
    expect(describeImportFailure(undefined, FILE).reason).toBe("it threw while loading: undefined");
    expect(describeImportFailure("plain string", FILE).reason).toBe("it threw while loading: plain string");
  });
});
