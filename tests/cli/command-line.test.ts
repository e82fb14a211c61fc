import { describe, expect, test } from "bun:test";
import type { CommandDef } from "citty";
import { checkCommandLine, repeatedFlag, UsageError, type DocketCommandMeta } from "../../runtime/cli/_command-line.ts";
import { main } from "../../runtime/cli/main.ts";
import { wantsColor } from "../../runtime/cli/_terminal.ts";

const args = {
  target: { type: "positional" as const },
  input: { type: "string" as const },
  "deadline-ms": { type: "string" as const },
  open: { type: "boolean" as const },
};

describe("checkCommandLine", () => {
  test("accepts declared flags in every spelling, a value that looks like a flag, and --no- for booleans", () => {
    expect(() => checkCommandLine(args, ["x", "--input", "-", "--deadline-ms=5", "--no-open"], "docket run")).not.toThrow();
    expect(() => checkCommandLine(args, ["x", "--deadlineMs", "6", "--open"], "docket run")).not.toThrow();
  });

  test("refuses a flag given twice, in any spelling, naming it and not its values; a repeatable one repeats", () => {
    const refused = (tokens: string[]) => () => checkCommandLine(args, tokens, "docket run", { repeatable: ["capabilities"] });
    const twice = (flag: string) => new UsageError(`Option --${flag} of docket run is given more than once; it takes one value (of its options only --capabilities repeat). Give it once.`, "docket run");
    expect(refused(["x", "--input", "A", "--input", "B"])).toThrow(twice("input"));
    expect(refused(["x", "--deadline-ms=5", "--deadlineMs", "6"])).toThrow(twice("deadline-ms"));
    // A switch is named as typed, and holds no value (tester T6: "--no-watch --no-watch" named --watch).
    expect(refused(["x", "--open", "--no-open"])).toThrow("Option --no-open of docket run is given more than once; --open and --no-open are one switch (of its options only --capabilities repeat). Give it once.");
    expect(refused(["x", "--no-open", "--no-open"])).toThrow("Option --no-open of docket run is given more than once; --open and --no-open are one switch");
    expect(refused(["x", "--no-open", "--open"])).toThrow("Option --open of docket run is given more than once; --open and --no-open are one switch");
    const withCapabilities = { ...args, capabilities: { type: "string" as const } };
    expect(() => checkCommandLine(withCapabilities, ["x", "--capabilities", "a", "--capabilities=b"], "docket run", { repeatable: ["capabilities"] })).not.toThrow();
    // An empty folder (an unset variable in a CI step) would name where docket runs: refused.
    expect(() => checkCommandLine(withCapabilities, ["x", "--capabilities", ""], "docket run", { repeatable: ["capabilities"] })).toThrow("Option --capabilities of docket run is given an empty folder (an unset variable?)");
    expect(() => checkCommandLine(withCapabilities, ["x", "--capabilities="], "docket run", { repeatable: ["capabilities"] })).toThrow("is given an empty folder");
    // Without a list, nothing repeats.
    expect(() => checkCommandLine(withCapabilities, ["x", "--capabilities", "a", "--capabilities=b"], "docket run")).toThrow("Option --capabilities of docket run is given more than once; it takes one value. Give it once.");
  });

  test("refuses an unknown flag, a value flag without value, and an extra positional", () => {
    expect(() => checkCommandLine(args, ["x", "--bogus"], "docket run")).toThrow(new UsageError("Unknown option --bogus for docket run.", "docket run"));
    expect(() => checkCommandLine(args, ["x", "--input"], "docket run")).toThrow("Option --input of docket run needs a value.");
    // The next word an option of its own: not taken as the value (tester T5: `--run-id --format json` ran with run id "--format").
    expect(() => checkCommandLine(args, ["x", "--input", "--deadline-ms", "5"], "docket run")).toThrow("Option --input of docket run needs a value, but the next word is the option --deadline-ms. Give its value after it (a value that begins with -- as --input=--…).");
    expect(() => checkCommandLine(args, ["x", "--input", "--bogus=1"], "docket run")).toThrow("but the next word is the option --bogus.");
    // A value given inline, a lone "-" (stdin) and a negative number are values.
    expect(() => checkCommandLine(args, ["x", "--input=--x", "--deadline-ms", "-5"], "docket run")).not.toThrow();
    expect(() => checkCommandLine(args, ["x", "y"], "docket run")).toThrow('Unexpected argument "y" for docket run.');
  });

  test("refuses a flag in a spelling the parser would ignore (another case, snake_case), naming the one meant", () => {
    for (const wrong of ["--Deadline-Ms", "--deadline_ms", "--DEADLINE-MS"]) {
      expect(() => checkCommandLine(args, ["x", wrong, "5"], "docket run")).toThrow(`Unknown option ${wrong} for docket run. Did you mean "--deadline-ms"?`);
    }
  });
});

describe("DocketCommandMeta.repeatable", () => {
  test("every command lets repeat exactly the flags its help calls repeatable", async () => {
    const commands: Array<[string, CommandDef<any>]> = [];
    const walk = async (name: string, cmd: CommandDef<any>) => {
      commands.push([name, cmd]);
      for (const [sub, def] of Object.entries((await resolved(cmd.subCommands)) ?? {})) await walk(`${name} ${sub}`, (await resolved(def)) as CommandDef<any>);
    };
    await walk("docket", main);
    expect(commands.length).toBeGreaterThan(10);
    for (const [name, cmd] of commands) {
      const args = ((await resolved(cmd.args)) ?? {}) as Record<string, { description?: string }>;
      const saysRepeatable = Object.entries(args).filter(([, def]) => /\brepeatable\b/.test(def.description ?? "")).map(([flag]) => flag);
      expect({ name, repeatable: [...(((await resolved(cmd.meta)) as DocketCommandMeta | undefined)?.repeatable ?? [])].sort() }).toEqual({ name, repeatable: saysRepeatable.sort() });
    }
  });
});

async function resolved<T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> {
  return typeof value === "function" ? await (value as () => T | Promise<T>)() : await value;
}

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
