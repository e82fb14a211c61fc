import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startCockpitServer, type CockpitServer } from "./_support/cockpit-server.ts";
import { closeParsed, parseHtml } from "./_support/html.ts";

let server: CockpitServer;

beforeAll(async () => {
  server = await startCockpitServer();
});

afterAll(async () => {
  await closeParsed();
  await server.stop();
});

describe("cockpit: release and run again", () => {
  test("Release deletes a finished execution's artifacts only once confirmed, and says so", async () => {
    const id = await server.start("team.report", {});
    await server.completed(id);
    const file = join(server.root, ".docket", "artifacts", id, "sizes.csv");
    expect(existsSync(file)).toBe(true);
    const unconfirmed = await server.post(`/cockpit/executions/${id}/release`, {});
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.text()).toContain("tick the box to confirm");
    expect(existsSync(file)).toBe(true);
    const released = await server.post(`/cockpit/executions/${id}/release`, { confirmed: "1" });
    expect(released.status).toBe(303);
    expect(released.headers.get("location")).toBe(`/cockpit/executions/${id}?notice=released`);
    expect(existsSync(file)).toBe(false);
    const doc = parseHtml((await server.page(`/cockpit/executions/${id}?notice=released`)).html);
    expect(doc.querySelector('[data-slot="notice"]')!.textContent).toContain("released");
    expect(doc.querySelector('[data-section="artifacts"]')!.hasAttribute("hidden")).toBe(true);
  });

  test("a notice the execution does not bear out is not shown, and one the cockpit does not know is a 400 page (cockpit tester, session 48: ?notice=released above the files it claimed deleted)", async () => {
    const id = await server.start("team.report", {});
    await server.completed(id);
    const notice = async (query: string) => parseHtml((await server.page(`/cockpit/executions/${id}${query}`)).html).querySelector('[data-slot="notice"]')?.textContent?.trim() || null;
    // Its artifacts are still there; it was never asked to stop, nor reconciled.
    expect(await notice("?notice=released")).toBeNull();
    expect(await notice("?notice=cancel-requested")).toBeNull();
    expect(await notice("?notice=reconciled")).toBeNull();
    expect(await notice("")).toBeNull();
    const unknown = await server.page(`/cockpit/executions/${id}?notice=bogus`);
    expect(unknown.status).toBe(400);
    expect(unknown.html).toContain("notice must be one of cancel-requested, cancel-refused, cancel-unrecorded, released, reconciled, check-unsure, got &quot;bogus&quot;.");
  });

  test("Release of a running execution is refused with the reason, on the page and by the route", async () => {
    const id = await server.start("team.gate", { name: "release", steps: 1 });
    try {
      const refused = await server.post(`/cockpit/executions/${id}/release`, { confirmed: "1" });
      expect(refused.status).toBe(400);
      const said = await refused.text();
      expect(said).toContain("once it is terminal");
      // What to do is to wait or cancel, not to correct an input that was right.
      expect(said).toContain("cancel it first");
      expect(said).not.toContain("Correct the input");
      expect((await server.post("/cockpit/executions/not-an-id/release", { confirmed: "1" })).status).toBe(400);
      expect((await server.post("/cockpit/executions/x-20260101T000000Z-00000000/release", { confirmed: "1" })).status).toBe(404);
    } finally {
      server.openGate("release", 1);
      await server.completed(id);
    }
  });

  test("Run again of an unknown, malformed or other capability's execution is a clear problem page", async () => {
    const other = await server.start("team.echo", { message: "hello" });
    await server.completed(other);
    const wrong = await server.page(`/cockpit/capabilities/team.report?again=${other}`);
    expect(wrong.status).toBe(400);
    expect(wrong.html).toContain(`${other} ran team.echo, not team.report`);
    expect((await server.page("/cockpit/capabilities/team.report?again=nope")).status).toBe(400);
    expect((await server.page("/cockpit/capabilities/team.report?again=x-20260101T000000Z-00000000")).status).toBe(404);
    const same = parseHtml((await server.page(`/cockpit/capabilities/team.echo?again=${other}`)).html);
    expect((same.querySelector('[name="input.message"]') as HTMLInputElement).getAttribute("value")).toBe("hello");
    expect(same.querySelector('[data-slot="again"]')!.textContent).toEndWith(`The form holds the input of ${other}.`);
  });

  test("Run again never writes a stored secret back into the form", async () => {
    const id = await server.start("team.deploy", { target: "production", token: "never-shown-token" });
    await server.completed(id);
    const { html } = await server.page(`/cockpit/capabilities/team.deploy?again=${id}`);
    expect(html).not.toContain("never-shown-token");
    expect(html).not.toContain("[redacted]");
    const doc = parseHtml(html);
    expect(doc.querySelector('[name="input.token"]')!.getAttribute("value") ?? "").toBe("");
    expect(doc.querySelector('[name="input.target"] option[selected]')!.textContent).toBe("production");
  });
});
