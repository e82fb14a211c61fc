import { expect, test } from "bun:test";
import { loadPage, ORIGIN, type FakeFetch } from "./_support/dom.ts";

// catalog-watch.js asks the catalog's signature now and then; a server that does not answer
// (stopped, restarting) is asked less and less often (tester F counted 20 asks in 30 s).

const HTML = `<!doctype html><html><body><main data-catalog="sig-1" data-catalog-url="/cockpit/catalog" data-catalog-ms="1500"></main></body></html>`;

test("catalog-watch asks every 1.5 s while the server answers, and backs off to once in 15 s while it does not", async () => {
  let up = true;
  const urls: string[] = [];
  const fetch = (async (url: string) => {
    urls.push(url);
    if (!up) {
      // Refused, or a proxy's 502 in front of it: no answer from the server either way.
      if (urls.length % 2 === 0) throw new TypeError("Failed to fetch");
      return { ok: false, status: 502, json: async () => ({}), text: async () => "Bad Gateway" };
    }
    return { ok: true, status: 200, json: async () => ({ signature: "sig-1" }), text: async () => "" };
  }) as unknown as FakeFetch;
  const page = loadPage(HTML, { path: "/cockpit", scripts: ["socket.js", "catalog-watch.js"], fetch });
  const asks = () => urls.filter((u) => new URL(u, ORIGIN).pathname === "/cockpit/catalog").length;
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 100) {
      page.clock.advance(100);
      // An ask's answer and its reading take more than one settle's worth of promise turns.
      for (let i = 0; i < 3; i++) await page.settle();
    }
  };
  try {
    await run(15_000);
    expect(asks()).toBe(10);
    up = false;
    const before = asks();
    await run(60_000);
    // 1.5, 3, 6, 12, then 15 s apart: a handful, not forty.
    expect(asks() - before).toBeLessThanOrEqual(8);
    expect(asks() - before).toBeGreaterThanOrEqual(4);
    // Back up: asked at the usual pace again from the next answer on.
    up = true;
    await run(15_100);
    const back = asks();
    await run(15_000);
    expect(asks() - back).toBe(10);
  } finally {
    await page.close();
  }
});
