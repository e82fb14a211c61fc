// `docket run` from source (`bun runtime/cli/main.ts run …`, what `npm start` runs).
import { afterAll, describe } from "bun:test";
import { defineRunCases } from "./_run-cases.ts";
import { fromSource, removeTempDirs } from "./_harness.ts";

afterAll(removeTempDirs);

describe("docket run (source)", () => {
  defineRunCases(() => fromSource);
});
