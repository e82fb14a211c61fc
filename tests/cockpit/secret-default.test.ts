import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";

// A secret's default is the author's value, and still a secret: no page, nor the published
// schema, carries it; it applies all the same (a tester saw it on the capability page).
const KEYED = `import { capability, sensitive } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.keyed", title: "Keyed", description: "Has a secret with a default.", effect: "read",
  input: v.object({ key: v.optional(sensitive(v.string()), "default-secret-value") }),
  output: v.object({ length: v.number() }),
  handler: (input) => ({ length: input.key.length }),
});
`;

let server: CockpitServer;
beforeAll(async () => {
  server = await startCockpitServer({}, { "team.keyed.ts": KEYED });
});
afterAll(async () => {
  await server?.stop();
});

test("the capability page and the published schema leave a secret's default out, and say it applies; a run without the field uses it", async () => {
  const { html } = await server.page("/cockpit/capabilities/team.keyed");
  expect(html).not.toContain("default-secret-value");
  expect(html).toContain("It has a default of its own, a secret not shown here: leave it empty to use it.");
  const listed = await (await fetch(`${server.url}/api/v1/capabilities/get?id=team.keyed`)).text();
  expect(listed).not.toContain("default-secret-value");
  const id = await server.start("team.keyed", {});
  expect((await server.completed(id)).data).toMatchObject({ state: "succeeded", output: { length: "default-secret-value".length } });
});
