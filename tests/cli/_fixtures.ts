// Capability files as a user writes them: they import only "docket" and "valibot".

/** Greets; its input's name picks a way to fail (boom, typed, shape) so one file covers every ending. */
export const GREET = `import { capability, CapabilityError } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.greet",
  title: "Greet someone",
  description: "Greets by name, and fails on request.",
  effect: "read",
  errors: ["no_such_person"],
  input: v.object({ name: v.pipe(v.string(), v.minLength(1)) }),
  output: v.object({ greeting: v.string() }),
  examples: [{ name: "Ada" }],
  async handler(input, ctx) {
    ctx.progress.step("compose", "Composing the greeting");
    ctx.progress.progress(1, 2, "half way");
    ctx.progress.log("about to greet", "warn");
    ctx.progress.diagnostic({ severity: "error", message: "a finding, with a comma: and 100%", file: "src/a,b.ts", line: 3, column: 7, code: "demo_finding" });
    ctx.progress.stepDone("compose", true, "composed");
    if (input.name === "boom") throw new Error("kaboom from the handler");
    if (input.name === "forge") throw new Error("kaboom\\n::error title=forged::from a stack");
    if (input.name === "typed") throw new CapabilityError("no_such_person", "Nobody is called typed.", { suggestion: "Greet Ada instead." });
    if (input.name === "shape") return { greeting: 42 } as never;
    return { greeting: "Hello, " + input.name + "!" };
  },
});
`;

/**
 * A capability whose own schema throws: its output check builds a URL from the output (a
 * TypeError for "not a url …"), its input transform parses JSON (a SyntaxError quoting the text).
 */
export const THROWING_SCHEMA = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.throwing",
  title: "Check by throwing",
  description: "A schema whose check and transform throw.",
  effect: "write",
  input: v.object({ link: v.string(), cfg: v.optional(sensitive(v.pipe(v.string(), v.transform((text) => JSON.parse(text) as unknown), v.any()))) }),
  output: v.pipe(v.object({ link: v.string() }), v.check((out) => new URL(out.link).protocol === "https:", "an https link")),
  handler(input) {
    return { link: input.link };
  },
});
`;

/** Schema transforms that make what JSON cannot hold: a BigInt from the input; a cycle, a Promise, a Map or an Infinity in the output. */
/** A secret from the environment by default, never sent, that the input schema's transform moves (tester: s.envdef). */
export const DEFAULTED_SECRET = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.envdef",
  title: "Token from the environment",
  description: "Calls with a token its input defaults to from MY_API_TOKEN.",
  effect: "read",
  input: v.pipe(
    v.object({ repo: v.string(), token: v.optional(sensitive(v.string()), () => process.env.MY_API_TOKEN ?? "none") }),
    v.transform((o) => ({ repo: o.repo, headers: { authorization: o.token } })),
  ),
  output: v.object({ sent: v.string() }),
  handler(input) {
    console.log("calling with " + JSON.stringify(input.headers));
    return { sent: input.headers.authorization };
  },
});
`;

/** Every field optional, a secret among them defaulted: run with no --input at all (tester, session 33). */
export const DEFAULTED_ONLY = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.defonly",
  title: "Token by default",
  description: "Writes its defaulted token where no mask reaches (fd 2).",
  effect: "read",
  input: v.object({ token: v.optional(sensitive(v.string()), "s3cr3t-default-9f2") }),
  output: v.object({ ok: v.boolean() }),
  handler(input) {
    require("node:fs").writeSync(2, "RAW:" + input.token + "\\n");
    return { ok: true };
  },
});
`;

export const NOT_JSON_TRANSFORMS = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.notjson",
  title: "Transforms into what JSON cannot hold",
  description: "Input and output transforms that break JSON.",
  effect: "write",
  input: v.object({
    big: v.optional(v.pipe(v.string(), v.transform((text) => BigInt(text.length)))),
    lazyBig: v.optional(v.lazy(() => v.pipe(v.string(), v.transform((text) => BigInt(text.length))))),
    later: v.optional(v.pipe(v.string(), v.transform(async (text) => text))),
    mode: v.string(),
  }),
  // The output transform makes, by the mode the handler echoes: a cycle, a Promise, a Map, an Infinity; "plain" stays JSON.
  output: v.pipe(
    v.object({ a: v.string() }),
    v.transform((out): unknown => {
      if (out.a === "plain") return { a: "plain", at: new Date(0) };
      if (out.a === "promise") return Promise.resolve(out);
      if (out.a === "map") return { a: out.a, index: new Map([["k", 1]]) };
      if (out.a === "infinite") return { a: out.a, n: Infinity };
      const x: Record<string, unknown> = { ...out };
      x.self = x;
      return x;
    }),
    v.any(),
  ),
  handler(input) {
    return { a: input.mode };
  },
});
`;

/** Returns its message as a plain string (printed as is in text mode). */
export const ECHO = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.echo",
  title: "Echo",
  description: "Returns its message.",
  effect: "read",
  input: v.object({ message: v.string() }),
  output: v.string(),
  handler(input) {
    return input.message;
  },
});
`;

/** ECHO whose message the schema trims and upper-cases: the handler gets, and returns, another form of what was sent. */
export const SHOUT = ECHO.replace('id: "demo.echo"', 'id: "demo.shout"').replace("v.object({ message: v.string() })", "v.object({ message: v.pipe(v.string(), v.transform((text) => text.trim().toUpperCase())) })");

/** ECHO whose message the schema splits at commas: the handler gets a list, and returns it as JSON. */
export const SPLIT = ECHO.replace('id: "demo.echo"', 'id: "demo.split"').replace("v.object({ message: v.string() })", 'v.object({ message: v.pipe(v.string(), v.transform((text) => text.split(","))) })').replace("return input.message;", "return JSON.stringify(input.message);");

/** Runs until stopped; with cooperative: true it stops when asked, otherwise it ignores cancellation. */
export const SPIN = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.spin",
  title: "Spin",
  description: "Runs until cancelled (or, ignoring cancellation, until stopped by force).",
  effect: "read",
  cancellable: true,
  input: v.object({ cooperative: v.optional(v.boolean(), true) }),
  output: v.object({}),
  async handler(input, ctx) {
    ctx.progress.step("spin", "Spinning");
    for (;;) {
      if (input.cooperative && ctx.progress.cancelled()) throw ctx.progress.cancellation();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  },
});
`;

/** Runs \`sleep <seconds>\` through ctx.exec: a child that must not outlive its run. */
export const SLEEPS = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.sleeps",
  title: "Sleeps",
  description: "Runs sleep as a child process.",
  effect: "read",
  cancellable: true,
  input: v.object({ seconds: v.string() }),
  output: v.object({}),
  async handler(input, ctx) {
    ctx.progress.step("sleep", "Sleeping");
    await ctx.exec(["sleep", input.seconds]);
    return {};
  },
});
`;

/** Runs sleep as a child and cannot be cancelled: only a forced stop (a second Ctrl-C) ends it. */
export const STUBBORN_SLEEPS = SLEEPS.replace('id: "demo.sleeps"', 'id: "demo.stubborn"').replace("cancellable: true", "cancellable: false");

/** Runs a child that ignores SIGTERM (a shell trapping it, waiting on sleep), and cannot be cancelled. */
export const IGNORES_TERM = STUBBORN_SLEEPS.replace('id: "demo.stubborn"', 'id: "demo.ignores"').replace('await ctx.exec(["sleep", input.seconds]);', 'await ctx.exec(["sh", "-c", `trap "" TERM; sleep ${input.seconds}`]);');

/** Names the fields of its input, which keeps any field (a looseObject). */
export const LOOSE = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.loose",
  title: "Loose",
  description: "Lists the fields it was given.",
  effect: "read",
  input: v.looseObject({}),
  output: v.object({ keys: v.array(v.string()) }),
  handler: (input) => ({ keys: Object.keys(input) }),
});
`;

/** Takes a nested object. */
export const NESTED = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.nested",
  title: "Nested",
  description: "Takes a nested object.",
  effect: "read",
  input: v.object({ auth: v.object({ token: v.string() }) }),
  output: v.object({}),
  handler: () => ({}),
});
`;

/** A no-op, for start-up measurements. */
export const NOOP = `import { capability } from "docket";
import * as v from "valibot";

export default capability({
  id: "demo.noop",
  title: "Nothing",
  description: "Does nothing.",
  effect: "read",
  input: v.object({}),
  output: v.object({ ok: v.boolean() }),
  handler() {
    return { ok: true };
  },
});
`;

/**
 * Echo, whose file takes seconds to load (its top level waits): a run can be stopped before its
 * execution exists. Its top level writes the file $LOADING_MARK first (while docket tries it in a
 * worker, what it prints is not shown), so that a test knows the load has begun.
 */
export const SLOW_LOAD = ECHO.replace('id: "demo.echo"', 'id: "demo.slowload"').replace(
  "export default capability({",
  'import { writeFileSync } from "node:fs";\nwriteFileSync(process.env.LOADING_MARK!, "");\nawait Bun.sleep(20_000);\n\nexport default capability({',
);
