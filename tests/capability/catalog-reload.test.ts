// The reload of a live catalog (catalog-reload.ts, docs/authoring.md "Live reload"): one at a time,
// said once, and a capability that loaded is not dropped for a text read half-written.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { capability } from "../../runtime/capability/declaration.ts";
import { createCatalogReload } from "../../runtime/capability/catalog-reload.ts";
import { LiveCatalog, type CatalogChange } from "../../runtime/capability/live-catalog.ts";
import type { CapabilityCatalog, LoadError } from "../../runtime/capability/registered.ts";
import { catalog, registered } from "../_support/registered.ts";

const FILE = "/work/team/capabilities/team.live.ts";
const live = (version: string) => ({
  ...registered(capability({ id: "team.live", title: "Live", description: "Answers N.", effect: "read", input: v.object({}), output: v.object({ n: v.number() }), handler: () => ({ n: 1 }) }), { file: FILE }),
  version,
});
const halfWritten: LoadError = { file: FILE, line: 3, column: 19, reason: "it threw while loading: SyntaxError: Export named 'N' not found in module '_live.ts'." };

/** A reload over `passes`, one catalog per read of the folders; what listeners heard, and how many reads. */
function reloadOver(start: CapabilityCatalog, passes: CapabilityCatalog[]) {
  const served = new LiveCatalog(start);
  const heard: CatalogChange[] = [];
  served.subscribe((change) => heard.push(change));
  let reads = 0;
  const reload = createCatalogReload(served, async () => passes[Math.min(reads++, passes.length - 1)]!);
  return { served, heard, reload, reads: () => reads };
}

describe("catalog reload", () => {
  test("a reload that read a served capability's file (or helper) half-written keeps it, once, and says so; the next read judges: saved whole since, it loads, and no surface ever saw it gone (tester A)", async () => {
    const { served, heard, reload, reads } = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten]), catalog([live("sha256:two")])]);
    const first = await reload();
    expect(first).toMatchObject({ held: [FILE], removed: [], newErrors: [] });
    expect(served.get("team.live")?.version).toBe("sha256:one");
    expect(served.loadErrors()).toEqual([]);
    const second = await reload();
    expect(reads()).toBe(2);
    expect(second).toMatchObject({ held: [], changed: ["team.live"], removed: [], newErrors: [] });
    expect(served.get("team.live")?.version).toBe("sha256:two");
    expect(heard.flatMap((c) => [...c.removed, ...c.newErrors.map((e) => e.file)])).toEqual([]);
  });

  test("a real error is the load error at the next read, and the capability is not kept in its place", async () => {
    const { served, reload } = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten])]);
    expect((await reload()).held).toEqual([FILE]);
    const change = await reload();
    expect(change).toMatchObject({ held: [], removed: ["team.live"], newErrors: [halfWritten] });
    expect(served.get("team.live")).toBeNull();
    expect(served.loadErrors()).toEqual([halfWritten]);
    // Broken it stays: nothing is held any more.
    expect((await reload()).held).toEqual([]);
  });

  test("a load error of a file that served nothing, or a change that drops nothing, is said at once", async () => {
    const broken = reloadOver(catalog([]), [catalog([], [halfWritten])]);
    expect(await broken.reload()).toMatchObject({ held: [], newErrors: [halfWritten] });
    const edited = reloadOver(catalog([live("sha256:one")]), [catalog([live("sha256:two")])]);
    expect(await edited.reload()).toMatchObject({ held: [], changed: ["team.live"] });
  });

  test("a reload asked for while one runs joins it: one more pass, and the change is said once", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const served = new LiveCatalog(catalog([live("sha256:one")]));
    let reads = 0;
    const reload = createCatalogReload(served, async () => {
      reads++;
      if (reads === 1) await gate;
      return catalog([live(`sha256:${reads}`)]);
    });
    const first = reload();
    const second = reload();
    release();
    expect(await first).toBe(await second);
    expect(reads).toBe(2);
    expect(served.get("team.live")?.version).toBe("sha256:2");
  });
});
