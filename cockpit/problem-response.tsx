/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import { ProblemPage, type ProblemProps } from "./pages/problem.tsx";
import { htmlPage } from "./render.ts";

/** Answers a problem page (400, 404, 413, 415, 500 …) with its status. */
export function problemResponse(c: Context, root: string, problem: Omit<ProblemProps, "root">): Response {
  return htmlPage(c, <ProblemPage root={root} {...problem} />, problem.status);
}
