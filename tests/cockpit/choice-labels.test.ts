import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";

// A choice between values that read alike (the number 1 and the text "1") labels them as JSON,
// so a person can tell which is which (a tester saw two options both labelled "1").
const PICKY = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.picky", title: "Picky", description: "Chooses among look-alikes.", effect: "read",
  input: v.object({ pick: v.union([v.literal(1), v.literal("1"), v.literal(true)]), plain: v.picklist(["a", "b"]) }),
  output: v.object({}),
  handler: () => ({}),
});
`;

let server: CockpitServer;
beforeAll(async () => {
  server = await startCockpitServer({}, { "team.picky.ts": PICKY });
});
afterAll(async () => {
  await server?.stop();
});

test("options that read alike are labelled as JSON; others by their text", async () => {
  const { html } = await server.page("/cockpit/capabilities/team.picky");
  const labels = [...html.matchAll(/<option value="[^"]*"[^>]*>([^<]*)<\/option>/g)].map((m) => m[1]);
  expect(labels).toContain("1");
  expect(labels).toContain("&quot;1&quot;");
  expect(labels).toContain("true");
  expect(labels).toContain("a");
  expect(labels).not.toContain("&quot;a&quot;");
});
