// The history chart's x axis is an order, not a clock: it says so between its end times (cockpit
// tester, session 43: six runs in one second and one nine minutes later were seven even steps
// under two timestamps, read as a time axis).
import { describe, expect, test } from "bun:test";
import { HistoryChart } from "../../cockpit/components/history-chart.tsx";
import { parseHtml } from "./_support/html.ts";

const point = (n: number, created_at: string) => ({ id: `x-20260908T010203Z-0000000${n}`, state: "succeeded" as const, duration_ms: 100 * n, created_at });

describe("history chart", () => {
  test("says its axis is the order of creation, evenly spaced, between the first and last times", () => {
    const doc = parseHtml(String(HistoryChart({ points: [point(1, "2026-09-08T01:51:06.000Z"), point(2, "2026-09-08T01:51:06.500Z"), point(3, "2026-09-08T02:00:06.000Z")] })));
    const labels = [...doc.querySelectorAll("text.chart-label")].map((label) => label.textContent);
    expect(labels).toContain("2026-09-08 01:51:06 UTC");
    expect(labels).toContain("2026-09-08 02:00:06 UTC");
    expect(doc.querySelector('[data-slot="history-axis"]')!.textContent).toBe("in order, evenly spaced");
    const one = parseHtml(String(HistoryChart({ points: [point(1, "2026-09-08T01:51:06.000Z")] })));
    expect(one.querySelector('[data-slot="history-axis"]')!.textContent).toBe("");
  });
});
