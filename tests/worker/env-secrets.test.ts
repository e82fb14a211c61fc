import { afterEach, expect, test } from "bun:test";
import { environmentBefore, putBackSecretVariables } from "../../runtime/worker/_env-secrets.ts";
import { createSecretMask } from "../../runtime/execution/secret-mask.ts";

const NAMES = ["DOCKET_T_SET", "DOCKET_T_CHANGED", "DOCKET_T_SERVER_OWN", "DOCKET_T_PLAIN", "DOCKET_T_ghp_secretvalue1234"];
afterEach(() => {
  for (const name of NAMES) delete process.env[name];
});

test("putBackSecretVariables puts back only what the task set to a value holding its secret: not the server's own, not a plain value", () => {
  const mask = createSecretMask(["ghp_secretvalue1234"]);
  process.env.DOCKET_T_CHANGED = "before";
  // The server's own variable holding the same value, passed as an input too: not the task's.
  process.env.DOCKET_T_SERVER_OWN = "ghp_secretvalue1234";
  const before = environmentBefore();
  process.env.DOCKET_T_SET = "token=ghp_secretvalue1234";
  process.env.DOCKET_T_CHANGED = "ghp_secretvalue1234";
  process.env.DOCKET_T_PLAIN = "no secret here";
  // A secret as the name of a variable (checking tester, session 40).
  process.env.DOCKET_T_ghp_secretvalue1234 = "1";
  expect(putBackSecretVariables(before, mask.text).sort()).toEqual(["DOCKET_T_CHANGED", "DOCKET_T_SET", "DOCKET_T_ghp_secretvalue1234"]);
  expect(process.env.DOCKET_T_ghp_secretvalue1234).toBeUndefined();
  expect(process.env.DOCKET_T_SET).toBeUndefined();
  expect(process.env.DOCKET_T_CHANGED).toBe("before");
  expect(process.env.DOCKET_T_SERVER_OWN).toBe("ghp_secretvalue1234");
  expect(process.env.DOCKET_T_PLAIN).toBe("no secret here");
});
