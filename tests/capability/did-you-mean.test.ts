import { describe, expect, test } from "bun:test";
import { didYouMean, didYouMeanText, MAX_NAME_UNITS } from "../../runtime/capability/did-you-mean.ts";
import { unknownCapabilityHint } from "../../runtime/capability/unknown-capability.ts";
import { catalog, registered } from "../_support/registered.ts";
import * as v from "valibot";

const IDS = ["files.digest", "files.verify", "health.report", "capabilities.list", "executions.list"];

describe("didYouMean", () => {
  test("didYouMean finds a typo, a swapped pair and a missing letter, best first", () => {
    expect(didYouMean("file.digest", IDS)).toEqual(["files.digest"]);
    expect(didYouMean("helath.report", IDS)).toEqual(["health.report"]);
    expect(didYouMean("capabilites", ["capabilities", "executions", "run"])).toEqual(["capabilities"]);
  });

  test("didYouMean puts the same name but for case first (Cancellable → cancellable)", () => {
    expect(didYouMean("Cancellable", ["cancellable", "cache", "errors"])).toEqual(["cancellable"]);
    expect(didYouMean("timeout_MS", ["timeout_ms", "examples"])).toEqual(["timeout_ms"]);
  });

  test("didYouMean suggests a name that contains what was typed", () => {
    expect(didYouMean("digest", IDS)).toEqual(["files.digest"]);
  });

  test("didYouMean suggests nothing for a name far from every candidate, or the name itself", () => {
    expect(didYouMean("deploy.production", IDS)).toEqual([]);
    expect(didYouMean("files.digest", ["files.digest"])).toEqual([]);
  });

  test("didYouMean suggests nothing for a name longer than any id, without measuring it (a client may send megabytes)", () => {
    expect(didYouMean(`files.digest${"x".repeat(MAX_NAME_UNITS)}`, IDS)).toEqual([]);
    expect(didYouMean("x".repeat(5_000_000), IDS)).toEqual([]);
    // At the bound it still measures: a long name one letter off a long id.
    const long = `files.${"d".repeat(MAX_NAME_UNITS - 7)}`;
    expect(didYouMean(`${long}x`.slice(0, MAX_NAME_UNITS), [long])).toEqual([long]);
  });

  test("didYouMeanText lists several as a sentence", () => {
    expect(didYouMeanText("files.verif", ["files.verify", "files.verity"])).toBe('Did you mean "files.verify" or "files.verity"?');
    expect(didYouMeanText("zzz", ["files.verify"])).toBe("");
  });
});

describe("unknownCapabilityHint", () => {
  const def = { id: "hello.greet", title: "t", description: "d", effect: "read" as const, input: v.object({}), output: v.object({}), handler: () => ({}) };

  test("unknownCapabilityHint names the file of that id that did not load, with its reason", () => {
    const hint = unknownCapabilityHint("repo.lint-check", catalog([registered(def)], [{ file: "/c/capabilities/repo.lint-check.ts", line: 3, column: 1, reason: "syntax error: Unexpected }" }]));
    expect(hint).toBe("/c/capabilities/repo.lint-check.ts:3 did not load: syntax error: Unexpected }");
  });

  test("unknownCapabilityHint suggests the closest loaded id, then where the list is", () => {
    expect(unknownCapabilityHint("hello.gret", catalog([registered(def)]))).toBe('Did you mean "hello.greet"? List the loaded capabilities with capabilities.list (docket capabilities list).');
  });
});
