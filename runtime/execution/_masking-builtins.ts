// The built-in methods masking calls (secret-mask.ts and the searches under it), as the thread
// began. A worker masks what its handler logs on the handler's own thread, where the handler may
// replace any of them: one line of a careless polyfill (`String.prototype.indexOf = …`) turned
// masking off for that task and every later one on the worker (docs/containment.md). Masking now
// runs with the originals: replaced ones are put back for the time of the mask and the handler's
// own put back after it, so that the handler's code still sees what it installed.

const WATCHED: ReadonlyArray<readonly [target: object, key: PropertyKey]> = [
  ...(["indexOf", "startsWith", "slice", "charAt", "charCodeAt", "matchAll", "substring", "split"] as const).map((key) => [String.prototype, key] as const),
  ...(["exec", "test", Symbol.matchAll, Symbol.split] as const).map((key) => [RegExp.prototype, key] as const),
  ...(["push", "sort"] as const).map((key) => [Array.prototype, key] as const),
  ...(["get", "set", "has"] as const).map((key) => [Map.prototype, key] as const),
  ...(["get", "set", "has"] as const).map((key) => [WeakMap.prototype, key] as const),
  [Math, "max"],
  [Math, "min"],
] as const;

const originals = WATCHED.map(([target, key]) => Reflect.getOwnPropertyDescriptor(target, key)!);
const values = originals.map((descriptor) => descriptor.value as unknown);
// Called as captured: a handler replacing Reflect's own does not reach them.
const describe = Reflect.getOwnPropertyDescriptor;
const define = Reflect.defineProperty;
const remove = Reflect.deleteProperty;

/**
 * `work()` run with the built-ins masking calls as the thread began; `unsure()` instead when one
 * was replaced in a way that cannot be undone (defined as not configurable): masking that cannot
 * trust its own searches hides the whole text rather than risk showing a secret. Callers ask
 * builtinsIntact() first (the case of every handler but a careless one) and come here only when not.
 */
const S = String.prototype;
const R = RegExp.prototype;
const A = Array.prototype;
const M = Map.prototype;
const W = WeakMap.prototype;
const [sIndexOf, sStartsWith, sSlice, sCharAt, sCharCodeAt, sMatchAll, sSubstring, sSplit, rExec, rTest, rMatchAll, rSplit, aPush, aSort, mGet, mSet, mHas, wGet, wSet, wHas, max, min] = values;

/**
 * True while every built-in masking calls is the one the thread began with. Written out key by
 * key (each read a cached one): the same reads in a loop over WATCHED cost 0.3 µs a call, half of
 * masking a log line.
 */
export function builtinsIntact(): boolean {
  return (
    S.indexOf === sIndexOf &&
    S.startsWith === sStartsWith &&
    S.slice === sSlice &&
    S.charAt === sCharAt &&
    S.charCodeAt === sCharCodeAt &&
    S.matchAll === sMatchAll &&
    S.substring === sSubstring &&
    S.split === sSplit &&
    R.exec === rExec &&
    R.test === rTest &&
    R[Symbol.matchAll] === rMatchAll &&
    R[Symbol.split] === rSplit &&
    A.push === aPush &&
    A.sort === aSort &&
    M.get === mGet &&
    M.set === mSet &&
    M.has === mHas &&
    W.get === wGet &&
    W.set === wSet &&
    W.has === wHas &&
    Math.max === max &&
    Math.min === min
  );
}

export function withOriginalBuiltins<T>(work: () => T, unsure: () => T): T {
  // Indexes and assignments only, here: no method or iterator a handler could have replaced.
  let replaced: number[] | null = null;
  for (let i = 0; i < WATCHED.length; i++) {
    const watched = WATCHED[i]!;
    if ((watched[0] as Record<PropertyKey, unknown>)[watched[1]] !== values[i]) {
      replaced ??= [];
      replaced[replaced.length] = i;
    }
  }
  if (replaced === null) return work();
  const theirs: Array<PropertyDescriptor | undefined> = [];
  let restored = 0;
  for (; restored < replaced.length; restored++) {
    const i = replaced[restored]!;
    const watched = WATCHED[i]!;
    theirs[restored] = describe(watched[0], watched[1]);
    if (!define(watched[0], watched[1], originals[i]!)) break;
  }
  try {
    return restored === replaced.length ? work() : unsure();
  } finally {
    for (let j = 0; j < restored; j++) {
      const watched = WATCHED[replaced[j]!]!;
      const descriptor = theirs[j];
      if (descriptor === undefined) remove(watched[0], watched[1]);
      else define(watched[0], watched[1], descriptor);
    }
  }
}
