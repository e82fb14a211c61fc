import { expect, test } from "bun:test";
import { createNotices, NOTICE_TOKEN } from "../../cockpit/notices.ts";

test("a notice is read back by its token for its execution only, until it is let go by age or count", () => {
  let now = 0;
  const notices = createNotices<"released" | "reconciled">(() => now, { ttlMs: 1_000, max: 3 });
  const token = notices.issue("x-a", "released");
  expect(token).toMatch(NOTICE_TOKEN);
  expect(notices.read(token, "x-a")).toBe("released");
  // Another execution's page shows none of it, and a reload reads it again.
  expect(notices.read(token, "x-b")).toBeNull();
  expect(notices.read(token, "x-a")).toBe("released");
  now = 1_000;
  expect(notices.read(token, "x-a")).toBeNull();
  const first = notices.issue("x-a", "reconciled");
  for (let i = 0; i < 3; i++) notices.issue("x-a", "released");
  expect(notices.read(first, "x-a")).toBeNull();
});
