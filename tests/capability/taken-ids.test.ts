import { describe, expect, test } from "bun:test";
import { TakenIds, toolNameOf } from "../../runtime/capability/taken-ids.ts";

const builtin = (file: string) => ({ kind: "builtin" as const, file });
const file = (path: string) => ({ kind: "file" as const, file: path });

describe("TakenIds", () => {
  test("TakenIds.conflict names the holder of an id or of a tool name, and refuses docket's own tool names to files only", () => {
    const taken = new TakenIds();
    taken.take({ id: "files.digest", source: builtin("files.digest.ts") });
    taken.take({ id: "team_a.hello", source: file("capabilities/team_a.hello.ts") });
    expect(taken.conflict("files.digest", file("capabilities/files.digest.ts"))).toEqual({
      reason: 'id "files.digest" is already declared by the built-in files.digest.ts',
      holder: { id: "files.digest", source: builtin("files.digest.ts") },
    });
    expect(taken.conflict("team.a_hello", file("capabilities/team.a_hello.ts"))?.reason).toBe(
      'id "team.a_hello" has the MCP tool name team_a_hello, which team_a.hello (capabilities/team_a.hello.ts) has already',
    );
    expect(taken.conflict("docket.x", file("capabilities/docket.x.ts"))).toMatchObject({ holder: null, reason: expect.stringContaining("names beginning docket_ are docket's own tools") });
    expect(taken.conflict("docket.x", builtin("docket.x.ts"))).toBeNull();
    expect(taken.conflict("team.hello", file("capabilities/team.hello.ts"))).toBeNull();
  });

  test("TakenIds.conflict refuses a file the id of a route docket answers itself (executions.artifact is the artifact download)", () => {
    const taken = new TakenIds();
    expect(taken.conflict("executions.artifact", file("capabilities/executions.artifact.ts"))).toEqual({
      reason: `id "executions.artifact" would be served at GET /api/v1/executions/artifact, docket's artifact download; choose another id`,
      holder: null,
    });
    expect(taken.conflict("executions.artifacts", file("capabilities/executions.artifacts.ts"))).toBeNull();
  });

  test("TakenIds.take keeps the first holder of an id and of a tool name", () => {
    const taken = new TakenIds();
    taken.take({ id: "a.b", source: builtin("a.b.ts") });
    taken.take({ id: "a.b", source: file("capabilities/a.b.ts") });
    expect(taken.conflict("a.b", file("x"))?.reason).toContain("the built-in a.b.ts");
    expect(toolNameOf("team.lint-check.run")).toBe("team_lint-check_run");
  });
});
