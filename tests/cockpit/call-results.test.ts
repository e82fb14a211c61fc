import { expect, test } from "bun:test";
import { createCallResults } from "../../cockpit/call-results.ts";

test("createCallResults keeps a page for its GETs until it is too old, or the oldest of too many or too large ones", () => {
  let now = 0;
  const results = createCallResults(() => now, { ttlMs: 1000, maxPages: 3, maxBytes: 100 });
  const first = results.keep({ html: "a", status: 200, capability: "a.b" })!;
  expect(results.get(first, "a.b")).toEqual({ html: "a", status: 200, capability: "a.b" });
  expect(results.get(first, "a.b")).toEqual({ html: "a", status: 200, capability: "a.b" });
  now = 999;
  expect(results.get(first, "a.b")).not.toBeNull();
  now = 1000;
  expect(results.get(first, "a.b")).toBeNull();
  // At most three: the oldest goes first.
  const tokens = ["b", "c", "d", "e"].map((html) => results.keep({ html, status: 422, capability: "a.b" })!);
  expect(tokens.map((token) => results.get(token, "a.b")?.html ?? null)).toEqual([null, "c", "d", "e"]);
  // At most 100 bytes (two a character): a second 40-character page lets every older one go; one larger than all is not kept.
  const big = results.keep({ html: "x".repeat(40), status: 200, capability: "a.b" })!;
  expect([...tokens, big].map((token) => results.get(token, "a.b")?.html.length ?? null)).toEqual([null, null, 1, 1, 40]);
  const bigger = results.keep({ html: "z".repeat(40), status: 200, capability: "a.b" })!;
  expect([...tokens, big, bigger].map((token) => results.get(token, "a.b")?.html.length ?? null)).toEqual([null, null, null, null, null, 40]);
  expect(results.keep({ html: "y".repeat(51), status: 200, capability: "a.b" })).toBeNull();
  expect(results.get("not-a-token", "a.b")).toBeNull();
});
