// The reload of a live catalog (catalog-reload.ts, docs/authoring.md "Live reload"): one at a time,
// said once, and a capability that loaded is not dropped for a text read half-written.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { capability } from "../../runtime/capability/declaration.ts";
import { MAX_HOLD_MS, MIN_HOLD_READS, createCatalogReload } from "../../runtime/capability/catalog-reload.ts";
import { LiveCatalog, type CatalogChange } from "../../runtime/capability/live-catalog.ts";
import type { CapabilityCatalog, LoadError } from "../../runtime/capability/registered.ts";
import { catalog, registered } from "../_support/registered.ts";

const FILE = "/work/team/capabilities/team.live.ts";
const live = (version: string) => ({
  ...registered(capability({ id: "team.live", title: "Live", description: "Answers N.", effect: "read", input: v.object({}), output: v.object({ n: v.number() }), handler: () => ({ n: 1 }) }), { file: FILE }),
  version,
});
const halfWritten: LoadError = { file: FILE, line: 3, column: 19, reason: "it threw while loading: SyntaxError: Export named 'N' not found in module '_live.ts'." };

/** A reload over `passes`, one catalog per read of the folders; what listeners heard, how many reads, and its clock (`at.ms`). */
function reloadOver(start: CapabilityCatalog, passes: CapabilityCatalog[]) {
  const served = new LiveCatalog(start);
  const heard: CatalogChange[] = [];
  served.subscribe((change) => heard.push(change));
  let reads = 0;
  const at = { ms: 0 };
  const reload = createCatalogReload(served, async () => passes[Math.min(reads++, passes.length - 1)]!, { now: () => at.ms });
  return { served, heard, reload, reads: () => reads, at };
}
/** A read after the folders were quiet, and stayed so through it. */
const quiet = () => true;
/** A read forced while the folders kept changing (a build stamp rewritten every 100 ms). */
const busy = () => false;

describe("catalog reload", () => {
  test("a reload that read a served capability's file (or helper) half-written keeps it and says so; the next read judges: saved whole since, it loads, and no surface ever saw it gone (tester A)", async () => {
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

  test("a real error is the load error at the next read once the folders are quiet, and the capability is not kept in its place", async () => {
    const { served, reload } = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten])]);
    expect((await reload(busy)).held).toEqual([FILE]);
    const change = await reload(quiet);
    expect(change).toMatchObject({ held: [], removed: ["team.live"], newErrors: [halfWritten] });
    expect(served.get("team.live")).toBeNull();
    expect(served.loadErrors()).toEqual([halfWritten]);
    // Broken it stays: nothing is held any more, quiet or not.
    expect((await reload(busy)).held).toEqual([]);
  });

  test("a quiet read holds a served capability whose file was written just now and fails: a save that paused mid-write is not judged broken until the file is older (authoring tester, session 46)", async () => {
    const served = new LiveCatalog(catalog([live("sha256:one")]));
    let fresh = true;
    let reads = 0;
    const passes = [catalog([], [halfWritten]), catalog([], [halfWritten]), catalog([live("sha256:two")])];
    const reload = createCatalogReload(served, async () => passes[Math.min(reads++, passes.length - 1)]!, { now: () => 0, writtenJustNow: (file) => fresh && file === FILE });
    expect(await reload(quiet)).toMatchObject({ held: [FILE], removed: [], newErrors: [] });
    expect(served.get("team.live")?.version).toBe("sha256:one");
    // The rest of the save lands: it loads, never having been removed.
    fresh = false;
    reads = 2;
    expect(await reload(quiet)).toMatchObject({ held: [], changed: ["team.live"], removed: [] });
    // A file broken and left so is judged once it is no longer fresh.
    const broken = new LiveCatalog(catalog([live("sha256:one")]));
    let young = true;
    const judge = createCatalogReload(broken, async () => catalog([], [halfWritten]), { now: () => 0, writtenJustNow: () => young });
    expect((await judge(quiet)).held).toEqual([FILE]);
    young = false;
    expect(await judge(quiet)).toMatchObject({ held: [], removed: ["team.live"], newErrors: [halfWritten] });
  });

  test("a read after quiet folders judges at once: a served capability's file broken or deleted then is the load error or the removal", async () => {
    const broken = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten])]);
    expect(await broken.reload(quiet)).toMatchObject({ held: [], removed: ["team.live"], newErrors: [halfWritten] });
    const deleted = reloadOver(catalog([live("sha256:one")]), [catalog([])]);
    expect(await deleted.reload(quiet)).toMatchObject({ held: [], removed: ["team.live"] });
  });

  test("a served capability whose file is missing from a read of busy folders (renamed away, or unlinked, mid-save) is kept, its last version served, until a quiet read (tester B)", async () => {
    const { served, heard, reload } = reloadOver(catalog([live("sha256:one")]), [catalog([]), catalog([]), catalog([live("sha256:two")])]);
    expect(await reload(busy)).toMatchObject({ held: [FILE], removed: [] });
    expect(served.get("team.live")?.version).toBe("sha256:one");
    expect(served.list().map((c) => c.id)).toEqual(["team.live"]);
    expect(await reload(busy)).toMatchObject({ held: [FILE], removed: [] });
    expect(await reload(quiet)).toMatchObject({ held: [], changed: ["team.live"], removed: [] });
    expect(served.get("team.live")?.version).toBe("sha256:two");
    expect(heard.flatMap((c) => c.removed)).toEqual([]);
  });

  test("reads of busy folders that land mid-save again and again keep the capability: the hold is not once only (tester B)", async () => {
    const { served, heard, reload } = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten]), catalog([]), catalog([], [halfWritten]), catalog([live("sha256:two")])]);
    for (let pass = 0; pass < 3; pass++) expect((await reload(busy)).held).toEqual([FILE]);
    expect(served.get("team.live")?.version).toBe("sha256:one");
    expect(served.loadErrors()).toEqual([]);
    expect(await reload(busy)).toMatchObject({ held: [], changed: ["team.live"] });
    expect(heard.flatMap((c) => [...c.removed, ...c.newErrors.map((e) => e.file)])).toEqual([]);
  });

  test("folders that are never quiet hold a deleted or broken capability no longer than the longest hold from the first read that found it gone", async () => {
    const deleted = reloadOver(catalog([live("sha256:one")]), [catalog([])]);
    for (let read = 0; read < MIN_HOLD_READS; read++) {
      deleted.at.ms = read * 100;
      expect((await deleted.reload(busy)).held).toEqual([FILE]);
    }
    deleted.at.ms = MAX_HOLD_MS - 1;
    expect((await deleted.reload(busy)).held).toEqual([FILE]);
    deleted.at.ms = MAX_HOLD_MS;
    expect(await deleted.reload(busy)).toMatchObject({ held: [], removed: ["team.live"] });
    expect(deleted.served.get("team.live")).toBeNull();

    const broken = reloadOver(catalog([live("sha256:one")]), [catalog([], [halfWritten])]);
    broken.at.ms = 1000;
    for (let read = 0; read < MIN_HOLD_READS; read++) expect((await broken.reload(busy)).held).toEqual([FILE]);
    broken.at.ms = 1000 + MAX_HOLD_MS;
    expect(await broken.reload(busy)).toMatchObject({ held: [], removed: ["team.live"], newErrors: [halfWritten] });
    expect(broken.served.loadErrors()).toEqual([halfWritten]);
  });

  test("on a machine so busy that one read outlasts the longest hold, a capability is still kept through several reads before an unquiet one drops it", async () => {
    const { served, reload, at } = reloadOver(catalog([live("sha256:one")]), [catalog([])]);
    for (let read = 0; read < MIN_HOLD_READS; read++) {
      at.ms = read * (MAX_HOLD_MS + 1);
      expect((await reload(busy)).held).toEqual([FILE]);
    }
    expect(served.get("team.live")?.version).toBe("sha256:one");
    at.ms += MAX_HOLD_MS + 1;
    expect(await reload(busy)).toMatchObject({ held: [], removed: ["team.live"] });
  });

  test("a hold ends when the file loads again: a later failure is held afresh, for the whole longest hold", async () => {
    const { reload, at } = reloadOver(catalog([live("sha256:one")]), [catalog([]), catalog([live("sha256:two")]), catalog([])]);
    expect((await reload(busy)).held).toEqual([FILE]);
    at.ms = MAX_HOLD_MS - 1;
    expect((await reload(busy)).held).toEqual([]);
    at.ms = MAX_HOLD_MS + 1;
    expect((await reload(busy)).held).toEqual([FILE]);
  });

  test("a load error of a file that served nothing, or a change that drops nothing, is said at once", async () => {
    const broken = reloadOver(catalog([]), [catalog([], [halfWritten])]);
    expect(await broken.reload()).toMatchObject({ held: [], newErrors: [halfWritten] });
    const edited = reloadOver(catalog([live("sha256:one")]), [catalog([live("sha256:two")])]);
    expect(await edited.reload()).toMatchObject({ held: [], changed: ["team.live"] });
  });

  test("a change met while a pass reads the folders unsettles it: a quiet start does not let that pass judge a file it read mid-save", async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const served = new LiveCatalog(catalog([live("sha256:one")]));
    let reads = 0;
    const reload = createCatalogReload(served, async () => {
      reads++;
      if (reads === 1) await gate;
      return reads === 1 ? catalog([], [halfWritten]) : catalog([live("sha256:two")]);
    });
    const first = reload(quiet);
    // The save's own events, met while the first pass read: they ask for another pass.
    const second = reload(quiet);
    release();
    expect(await first).toBe(await second);
    expect(await first).toMatchObject({ held: [], changed: ["team.live"], removed: [], newErrors: [] });
    expect(reads).toBe(2);
  });

  test("a file whose trial load is parked keeps what was served of it, its capability or its load error, whatever the read; the others' changes are swapped in at once, and the reload says when to read again", async () => {
    const OTHER = "/work/team/capabilities/team.other.ts";
    const other = (version: string) => ({ ...registered(capability({ id: "team.other", title: "Other", description: "Another.", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) }), { file: OTHER }), version });
    const otherError: LoadError = { file: OTHER, line: null, column: null, reason: "it threw while loading: Error" };
    let verdict = () => {};
    const verdictKnown = new Promise<void>((resolve) => (verdict = resolve));
    const parkedRead = (capabilities: ReturnType<typeof live>[], errors: LoadError[], parkedFiles: string[]): CapabilityCatalog => ({ ...catalog(capabilities, errors), parked: () => new Map(parkedFiles.map((file) => [file, verdictKnown])) });
    const { served, heard, reload } = reloadOver(catalog([live("sha256:one")], [otherError]), [
      // team.live's file parked; team.other's fixed.
      parkedRead([other("sha256:fixed")], [], [FILE]),
      // Then team.other's file parked, team.live's judged.
      parkedRead([live("sha256:two")], [], [OTHER]),
    ]);
    const first = await reload(quiet);
    expect(first).toMatchObject({ held: [], added: ["team.other"], removed: [], changed: [], newErrors: [], clearedErrors: 1 });
    expect(served.get("team.live")?.version).toBe("sha256:one");
    expect(served.get("team.other")?.version).toBe("sha256:fixed");
    expect(first.parked).not.toBeNull();
    let told = false;
    void first.parked!.then(() => (told = true));
    await Bun.sleep(1);
    expect(told).toBe(false);
    verdict();
    await first.parked;
    // A parked file that served a load error keeps it, and one that served a capability keeps that.
    const erroring = reloadOver(catalog([], [otherError]), [parkedRead([live("sha256:two")], [], [OTHER])]);
    expect(await erroring.reload(quiet)).toMatchObject({ added: ["team.live"], newErrors: [], clearedErrors: 0 });
    expect(erroring.served.loadErrors()).toEqual([otherError]);
    const second = await reload(busy);
    expect(second).toMatchObject({ changed: ["team.live"], removed: [], held: [] });
    expect(served.get("team.other")?.version).toBe("sha256:fixed");
    expect(heard.flatMap((change) => change.removed)).toEqual([]);
    // Nothing parked: nothing to read again for.
    const plain = reloadOver(catalog([]), [catalog([live("sha256:one")])]);
    expect((await plain.reload(quiet)).parked).toBeNull();
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
