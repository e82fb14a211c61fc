import { describe, expect, test } from "bun:test";
import { checkCommandLine, repeatedFlag, UsageError } from "../../runtime/cli/_command-line.ts";
import { wantsColor } from "../../runtime/cli/_terminal.ts";

const args = {
  target: { type: "positional" as const },
  input: { type: "string" as const },
  "deadline-ms": { type: "string" as const },
  open: { type: "boolean" as const },
};

describe("checkCommandLine", () => {
  test("accepts declared flags in every spelling, a value that looks like a flag, and --no- for booleans", () => {
    expect(() => checkCommandLine(args, ["x", "--input", "-", "--deadline-ms=5", "--deadlineMs", "6", "--no-open"], "docket run")).not.toThrow();
  });

  test("refuses an unknown flag, a value flag without value, and an extra positional", () => {
    expect(() => checkCommandLine(args, ["x", "--bogus"], "docket run")).toThrow(new UsageError("Unknown option --bogus for docket run.", "docket run"));
    expect(() => checkCommandLine(args, ["x", "--input"], "docket run")).toThrow("Option --input of docket run needs a value.");
    expect(() => checkCommandLine(args, ["x", "y"], "docket run")).toThrow('Unexpected argument "y" for docket run.');
  });

  test("refuses a flag in a spelling the parser would ignore (another case, snake_case), naming the one meant", () => {
    for (const wrong of ["--Deadline-Ms", "--deadline_ms", "--DEADLINE-MS"]) {
      expect(() => checkCommandLine(args, ["x", wrong, "5"], "docket run")).toThrow(`Unknown option ${wrong} for docket run. Did you mean "--deadline-ms"?`);
    }
  });
});

describe("repeatedFlag", () => {
  test("collects every value in order, in both spellings", () => {
    expect(repeatedFlag(["--capabilities", "a", "x", "--capabilities=b", "--", "--capabilities", "c"], "capabilities")).toEqual(["a", "b"]);
  });
});

describe("wantsColor", () => {
  test("a TTY gets colour unless NO_COLOR or TERM=dumb; FORCE_COLOR turns it on for pipes", () => {
    expect(wantsColor({ isTTY: true }, {})).toBe(true);
    expect(wantsColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(wantsColor({ isTTY: true }, { TERM: "dumb" })).toBe(false);
    expect(wantsColor({ isTTY: false }, {})).toBe(false);
    expect(wantsColor({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(true);
    expect(wantsColor({ isTTY: false }, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false);
  });
});
