// A secret split by what a terminal does not show — a colour escape between two writes, a C1
// escape, a single shift, a zero-width space — reads whole, so it is masked as it reads: no byte
// `docket run` prints (progress, output, failure) may hold either half of it (docs/security.md).
import { afterAll, describe, expect, test } from "bun:test";
import { docket, fromSource, oneJsonDocument, removeTempDirs, tempCheckout, writeFiles } from "./_harness.ts";

const SECRET = "Qz7kWp3mVb9tRx";
const [HEAD, TAIL] = [SECRET.slice(0, 5), SECRET.slice(5)];

const SPLIT = `import { capability, sensitive } from "docket";
import * as v from "valibot";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export default capability({
  id: "leak.split",
  title: "Leak split",
  description: "Writes its secret split by what a terminal does not show.",
  effect: "read",
  input: v.object({ token: sensitive(v.string()), mode: v.picklist(["streams", "bell-artifact"]) }),
  output: v.any(),
  async handler({ token, mode }, ctx) {
    const a = token.slice(0, 5), b = token.slice(5);
    if (mode === "bell-artifact") {
      await ctx.artifacts.write("x" + a + "\\u0007" + b + ".txt", "x");
      return {};
    }
    // Each list is written one piece at a time, a timer apart: a write's end never sees the next.
    const pieces = [
      [a + "\\u001b[31m", b + "\\u001b[0m\\n"],
      [a, "\\u001b[31m", b + "\\n"],
      [a, "\\u001b\\u001b[31m", b + "\\n"],
      [a + "\\u001b[38:2::255:0:0m", b + "\\n"],
      [a + "\\u001bO", "A" + b + "\\n"],
    ];
    for (const list of pieces) {
      for (const piece of list) {
        process.stdout.write(piece);
        await sleep(5);
      }
    }
    for (const piece of [a, "\\u001b[31m", b + "\\n"]) {
      ctx.progress.stream("stdout", piece);
      await sleep(5);
    }
    for (const hidden of ["\\u001bOA", "\\u008fA", "\\u001bNA", "\\u200b", "\\u009b31m"]) ctx.progress.log(a + hidden + b);
    console.log({ k: a + "\\u001b[31m" + b });
    console.log(JSON.stringify({ k: a + "\\u001b[31m" + b }));
    for (const name of [a + "\\u009b1m" + b, a + "\\u200b" + b]) {
      try {
        await ctx.artifacts.write(name, "x");
        ctx.progress.log("accepted");
      } catch (error) {
        ctx.progress.log("refused: " + (error as Error).message);
      }
    }
    return { c1: a + "\\u009b31m" + b, zero: a + "\\u200b" + b, colour: a + "\\u001b[31m" + b };
  },
});
`;

afterAll(removeTempDirs);

function expectClean(what: string, text: string): void {
  for (const piece of [HEAD, TAIL]) {
    if (text.includes(piece)) throw new Error(`${what} holds ${JSON.stringify(piece)}:\n${text}`);
  }
}

describe("docket run with a secret split by what a terminal does not show", () => {
  test("written in pieces around a colour escape, logged around a single shift, a C1 escape or a zero-width space, returned in an output: masked everywhere", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/leak.split.ts": SPLIT });
    const ran = await docket(fromSource, ["run", "leak.split", "--input", JSON.stringify({ mode: "streams" }), "--input-env", "token=SPLIT_TOKEN", "--format", "json"], {
      cwd: checkout,
      env: { SPLIT_TOKEN: SECRET },
    });
    expect(ran.code).toBe(0);
    expectClean("stdout", ran.stdout);
    expectClean("stderr", ran.stderr);
    const document = oneJsonDocument(ran.stdout);
    expect(document.output).toEqual({ c1: "[redacted]", zero: "[redacted]", colour: "[redacted]" });
    // Neither name is listed: the C1 one holds a control character, the other the secret as it reads.
    expect(ran.stderr.match(/refused: Cannot write artifact/g)?.length).toBe(2);
    expect(ran.stderr).not.toContain("accepted");
    expect(ran.stderr.match(/\[redacted\]/g)!.length).toBeGreaterThanOrEqual(14);
  }, 60_000);

  test("an artifact name refused for its control character is quoted with the secret masked", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/leak.split.ts": SPLIT });
    const ran = await docket(fromSource, ["run", "leak.split", "--input", JSON.stringify({ mode: "bell-artifact" }), "--input-env", "token=SPLIT_TOKEN", "--format", "json"], {
      cwd: checkout,
      env: { SPLIT_TOKEN: SECRET },
    });
    expect(ran.code).toBe(1);
    expectClean("stdout", ran.stdout);
    expectClean("stderr", ran.stderr);
    const failure = oneJsonDocument(ran.stdout).failure;
    expect(failure).toMatchObject({ error_code: "invalid_input", context: { name: "x[redacted].txt" } });
    expect(failure.message).toStartWith('Cannot write artifact "x[redacted].txt": ');
  }, 60_000);
});
