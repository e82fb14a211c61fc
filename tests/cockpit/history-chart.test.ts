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
    // Under the drawing, in words a narrow screen wraps (drawn in it, they overlapped at 390 px: cockpit tester, session 50).
    const axis = [...doc.querySelectorAll('[data-slot="history-x"] > span')].map((label) => label.textContent);
    expect(axis).toEqual(["2026-09-08 01:51:06 UTC", "in order, evenly spaced", "2026-09-08 02:00:06 UTC"]);
    const one = parseHtml(String(HistoryChart({ points: [point(1, "2026-09-08T01:51:06.000Z")] })));
    expect([...one.querySelectorAll('[data-slot="history-x"] > span')].map((label) => label.textContent)).toEqual(["2026-09-08 01:51:06 UTC", ""]);
  });

  test("its durations are short round figures, and the gutter left of the plot fits the longest as a narrow screen draws them", () => {
    const ticks = (ms: number) => {
      const doc = parseHtml(String(HistoryChart({ points: [{ ...point(1, "2026-09-08T01:51:06.000Z"), duration_ms: ms }] })));
      const labels = [...doc.querySelectorAll("text.chart-label")];
      return { ticks: labels.map((label) => label.textContent), x: Number(labels[0]!.getAttribute("x")) };
    };
    expect(ticks(1_900).ticks).toEqual(["2 s", "1 s", "0"]);
    expect(ticks(290_000).ticks).toEqual(["5 min", "2.5 min", "0"]);
    expect(ticks(7_000).ticks).toEqual(["10 s", "5 s", "0"]);
    expect(ticks(5 * 3_600_000).ticks).toEqual(["5 h", "2.5 h", "0"]);
    // "2.5 min" at 22 units a character of 13.2 (a narrow screen's labels) needs 93 units left of its end.
    expect(ticks(290_000).x).toBeGreaterThanOrEqual(93);
  });
});
