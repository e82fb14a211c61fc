// A task's secrets left in its worker's environment (`process.env.GITHUB_TOKEN = input.token`, a
// careless and common line): `process.env` (and `Bun.env`, the same object) is the worker's, so the
// next task on it, of any capability, read the secret, and its mask knows only its own secrets
// (containment tester, session 40). What a task with secrets set there that holds one of them is
// put back as it was before the task once it ends, and what work a task left running sets later
// (a timer) as the next task begins (docs/containment.md).

/** The environment's values as a task with secrets begins: about a microsecond for 40 variables. */
export function environmentBefore(): Record<string, string | undefined> {
  return { ...process.env };
}

/**
 * Puts back each variable the task set or changed to a value holding one of its secrets (`mask`
 * changes it): the value before the task, or none. A value that held the secret before the task
 * began (the server's own `GITHUB_TOKEN`, passed as an input too) is not the task's and stays.
 * Answers the names put back.
 */
export function putBackSecretVariables(before: Record<string, string | undefined>, mask: (text: string) => string): string[] {
  const env = process.env;
  const putBack: string[] = [];
  for (const key of Object.keys(env)) {
    const value = env[key];
    if (value === before[key] || typeof value !== "string") continue;
    // A secret as the variable's value, or as its name (`process.env["T_" + token] = "1"`).
    if (mask(value) === value && (Object.hasOwn(before, key) || mask(key) === key)) continue;
    const was = before[key];
    if (was === undefined) delete env[key];
    else env[key] = was;
    putBack.push(key);
  }
  return putBack;
}
