/** Counts the JSON.stringify calls made while `fn` runs (and, when it returns a promise, until it settles). */
export async function countStringify(fn: () => unknown): Promise<number> {
  const original = JSON.stringify;
  let calls = 0;
  JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
    calls++;
    return original(...args);
  }) as typeof JSON.stringify;
  try {
    await fn();
  } finally {
    JSON.stringify = original;
  }
  return calls;
}
