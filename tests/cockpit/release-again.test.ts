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
    expect(released.headers.get("location")).toMatch(new RegExp(`^/cockpit/executions/${id}\\?notice=[0-9a-f]{16}$`));
    expect(existsSync(file)).toBe(false);
    const doc = parseHtml((await server.page(released.headers.get("location")!)).html);
    expect(doc.querySelector('[data-slot="notice"]')!.textContent).toContain("released");
    expect(doc.querySelector('[data-section="artifacts"]')!.hasAttribute("hidden")).toBe(true);
  });

  test("a page shows only a notice this server gave, for that execution: a key named in a link is a 400 page, a token it never gave shows nothing (cockpit testers, session 48: ?notice=released above the files it claimed deleted)", async () => {
    const id = await server.start("team.report", {});
    await server.completed(id);
    const notice = async (query: string) => parseHtml((await server.page(`/cockpit/executions/${id}${query}`)).html).querySelector('[data-slot="notice"]')?.textContent?.trim() || null;
    expect(await notice("?notice=0123456789abcdef")).toBeNull();
    expect(await notice("")).toBeNull();
    for (const named of ["released", "cancel-requested", "bogus"]) {
      const refused = await server.page(`/cockpit/executions/${id}?notice=${named}`);
      expect(refused.status).toBe(400);
      expect(refused.html).toContain(`notice must be a token this server gave when one of the page&#39;s forms was sent, got &quot;${named}&quot;.`);
    }
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
