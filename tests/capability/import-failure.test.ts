// What a load error says of an error thrown while a capability file was imported (capability/_import-failure.ts).
import { describe, expect, test } from "bun:test";
import { describeImportFailure } from "../../runtime/capability/_import-failure.ts";
import { CapabilityError } from "../../runtime/capability/capability-error.ts";
import { UNSAID } from "../../runtime/execution/thrown.ts";

const FILE = "/repo/capabilities/team.cap.ts";

function thrown(message: string, stack: string): Error {
  const error = new Error(message);
  error.stack = `Error: ${message}\n${stack}`;
  return error;
}

describe("describeImportFailure", () => {
  test("an error thrown in a module the file imports names that module and its line", () => {
    const error = thrown("boom", "    at load (/repo/lib/helper.ts:7:11)\n    at /repo/capabilities/other.ts:1:1");
    expect(describeImportFailure(error, FILE)).toMatchObject({ reason: `it threw while loading: Error (in ../lib/helper.ts line 7)${UNSAID}`, detail: "it threw while loading: boom (in ../lib/helper.ts line 7)" });
  });

  test("a package whose compiled addon the runtime cannot load as it is imported says so and what to use instead (tester, session 33)", () => {
    const error = Object.assign(thrown("dlopen failed: /repo/node_modules/bcrypt/build/Release/bcrypt_lib.node: invalid ELF header", "    at /repo/node_modules/bcrypt/bcrypt.js:6:15\n    at /repo/capabilities/team.cap.ts:3:1"), { code: "ERR_DLOPEN_FAILED" });
    const failure = describeImportFailure(error, FILE);
    expect(failure.reason).toContain("it loaded a native addon (a compiled .node module of an npm package) while loading");
    expect(failure.reason).toContain("use a package without native code (bun:sqlite for better-sqlite3, bcryptjs for bcrypt), or run that tool as a command with ctx.exec");
    expect(failure.reason).not.toContain("invalid ELF header");
    expect(failure.detail).toContain("invalid ELF header");
  });

  test("the capability file itself gone before its import is said so, not as an import of docket's own module the file computes (foundation tester, session 48)", async () => {
    const gone = await import(`${FILE}?docket_pin=1`).catch((error: unknown) => error);
    expect(describeImportFailure(gone, FILE)).toEqual({ reason: "the file does not exist (deleted or moved while docket loaded it)", line: null, column: null, outside: true });
  });

  test("docket's own code inside the binary is never named as the user's module (it said '(in ../../$bunfs/root/chunk-….js line 276)')", () => {
    const error = Object.assign(new CapabilityError("not_runnable", "docket no longer holds the text"), { stack: "CapabilityError: docket no longer holds the text\n    at pinned (/$bunfs/root/chunk-xvjrzphc.js:276:13)\n    at node_modules/x/index.js:1:1" });
    // docket's own refusal while loading is in its own words: shown whole.
    expect(describeImportFailure(error, FILE)).toEqual({ reason: "it threw while loading: docket no longer holds the text", line: null, column: null });
  });

  test("a thrown value that is no Error is named as what it is, with its message or value for the log (it read '[object Object]')", () => {
    expect(describeImportFailure({ message: "obj thrown" }, FILE).detail).toBe("it threw while loading: an object (not an Error): obj thrown");
    expect(describeImportFailure({ code: 1 }, FILE).detail).toBe("it threw while loading: an object (not an Error)");
    expect(describeImportFailure(42, FILE).detail).toBe("it threw while loading: a number (not an Error): 42");
    expect(describeImportFailure(undefined, FILE).detail).toBe("it threw while loading: undefined");
    expect(describeImportFailure("plain string", FILE).detail).toBe("it threw while loading: plain string");
    // A client reads what it is, never what it says.
    expect(describeImportFailure({ message: "obj thrown" }, FILE).reason).toBe(`it threw while loading: an object (not an Error)${UNSAID}`);
    expect(describeImportFailure("plain string", FILE).reason).toBe(`it threw while loading: a string (not an Error)${UNSAID}`);
  });

  test("what a top level threw (a URL with its password, a path) is the detail only: the reason every client reads names its class, and a CapabilityError's own text (tester T3)", () => {
    const secret = Object.assign(new Error("connect failed to https://admin:hunter2pass@db.internal:5432/prod"), { stack: `Error: x\n    at ${FILE}:3:11` });
    const failure = describeImportFailure(secret, FILE);
    expect(failure.reason).not.toContain("hunter2pass");
    expect(failure).toMatchObject({ reason: `it threw while loading: Error${UNSAID}`, line: 3, column: 11 });
    expect(failure.detail).toContain("hunter2pass");
    const missing = Object.assign(new Error("ENOENT: no such file or directory, open '/opt/app/credentials/deploy-key'"), { code: "ENOENT", stack: `Error: x\n    at ${FILE}:4:1` });
    expect(describeImportFailure(missing, FILE)).toMatchObject({ reason: `it threw while loading: Error ENOENT${UNSAID}`, line: 4 });
    expect(describeImportFailure(new CapabilityError("not_runnable", "set TOKEN first"), FILE).reason).toStartWith("it threw while loading: set TOKEN first");
  });

  test("an Error a file names BuildMessage is no syntax error of the runtime's: its class is shown, not what it says (tester R2)", () => {
    const forged = Object.assign(new Error("postgres://u:LEAK01@h/db"), { name: "BuildMessage" });
    expect(describeImportFailure(forged, FILE).reason).not.toContain("LEAK01");
    expect(describeImportFailure(new AggregateError([forged], "x"), FILE).reason).not.toContain("LEAK01");
  });
});
