// The built-in methods masking calls (secret-mask.ts and the searches under it), as the thread
// began. A worker masks what its handler logs on the handler's own thread, where the handler may
// replace any of them: one line of a careless polyfill (`String.prototype.indexOf = …`) turned
// masking off for that task and every later one on the worker (docs/containment.md). Masking
// runs with the originals: replaced ones are put back for the time of the mask and the handler's
// own put back after it, so that the handler's code still sees what it installed; a worker where
// one was replaced is retired once its task ends (worker-entry.ts, pool.ts).

/** What `[][Symbol.iterator]()` inherits: its `next` is what every `for…of` over an array and every destructuring calls. */
const ArrayIterator = Object.getPrototypeOf([][Symbol.iterator]()) as object;
/** The same for a Set's and a Map's iterators, and a matchAll's. */
const SetIterator = Object.getPrototypeOf(new Set()[Symbol.iterator]()) as object;
const MapIterator = Object.getPrototypeOf(new Map()[Symbol.iterator]()) as object;
const RegExpStringIterator = Object.getPrototypeOf(/a/g[Symbol.matchAll]("")) as object;

/**
 * RegExp.prototype's getters that `flags` reads, and `flags` itself: matchAll, split and replace
 * read a regex's flags through them, so one answering wrongly (`global` always false) made masking
 * throw into the handler's log call, or find nothing (containment, session 41). Those this runtime has.
 */
const FLAG_GETTERS = (["flags", "global", "ignoreCase", "multiline", "dotAll", "unicode", "unicodeSets", "sticky", "hasIndices"] as const).filter(
  (key) => Reflect.getOwnPropertyDescriptor(RegExp.prototype, key)?.get !== undefined,
);

const WATCHED: ReadonlyArray<readonly [target: object, key: PropertyKey]> = [
  ...(["indexOf", "startsWith", "slice", "charAt", "charCodeAt", "matchAll", "substring", "split", "replace", "replaceAll"] as const).map((key) => [String.prototype, key] as const),
  ...(["exec", "test", Symbol.match, Symbol.matchAll, Symbol.split, Symbol.replace] as const).map((key) => [RegExp.prototype, key] as const),
  ...FLAG_GETTERS.map((key) => [RegExp.prototype, key] as const),
  [RegExp, Symbol.species],
  ...(["push", "sort", "join", Symbol.iterator] as const).map((key) => [Array.prototype, key] as const),
  [ArrayIterator, "next"],
  ...(["get", "set", "has", Symbol.iterator] as const).map((key) => [Map.prototype, key] as const),
  [MapIterator, "next"],
  ...(["has", "add", Symbol.iterator] as const).map((key) => [Set.prototype, key] as const),
  [SetIterator, "next"],
  [RegExpStringIterator, "next"],
  ...(["get", "set", "has"] as const).map((key) => [WeakMap.prototype, key] as const),
  [Math, "max"],
  [Math, "min"],
  [JSON, "stringify"],
] as const;

// Without a prototype: a descriptor is read member by member, inherited ones included, and a
// handler may add `get` or `value` to Object.prototype for the time of its task.
const originals = WATCHED.map(([target, key]) => Object.assign(Object.create(null) as PropertyDescriptor, Reflect.getOwnPropertyDescriptor(target, key)!));
// Called as captured: a handler replacing Reflect's own does not reach them.
const describe = Reflect.getOwnPropertyDescriptor;
const define = Reflect.defineProperty;
const remove = Reflect.deleteProperty;

const S = String.prototype;
const R = RegExp.prototype;
const A = Array.prototype;
const M = Map.prototype;
const T = Set.prototype;
const W = WeakMap.prototype;
const sIndexOf = S.indexOf, sStartsWith = S.startsWith, sSlice = S.slice, sCharAt = S.charAt, sCharCodeAt = S.charCodeAt, sMatchAll = S.matchAll, sSubstring = S.substring, sSplit = S.split, sReplace = S.replace, sReplaceAll = S.replaceAll;
const rExec = R.exec, rTest = R.test, rMatch = R[Symbol.match], rMatchAll = R[Symbol.matchAll], rSplit = R[Symbol.split], rReplace = R[Symbol.replace];
// The getters, looked at without a descriptor (19 ns, not 36) and without `.call` (a handler may
// replace Function.prototype.call): reading `flags` itself builds a string, a microsecond.
const lookupGetter = (Object.prototype as { __lookupGetter__(key: PropertyKey): unknown }).__lookupGetter__;
const flagsGetterNow = lookupGetter.bind(R, "flags");
const rFlags = flagsGetterNow();
// What the flag getters answer for a regex with every flag and one with none, read as booleans
// (7 ns): a getter replaced by one answering the same for both is seen.
const EVERY_FLAG = /(?:)/dgimsuy;
const NO_FLAG = /(?:)/;
const aPush = A.push, aSort = A.sort, aJoin = A.join, aIterator = A[Symbol.iterator], aNext = (ArrayIterator as { next: unknown }).next;
const mGet = M.get, mSet = M.set, mHas = M.has, mIterator = M[Symbol.iterator], mNext = (MapIterator as { next: unknown }).next;
const tHas = T.has, tAdd = T.add, tIterator = T[Symbol.iterator], tNext = (SetIterator as { next: unknown }).next;
const xNext = (RegExpStringIterator as { next: unknown }).next;
const wGet = W.get, wSet = W.set, wHas = W.has;
const max = Math.max, min = Math.min, stringify = JSON.stringify;

/**
 * True while every built-in masking calls is the one the thread began with: about thirty cached
 * property reads, the flag getters' answers and one getter's lookup (~30 ns; a loop over WATCHED
 * cost 0.3 µs a call, half of masking a log line). A getter installed in place of one
 * (RegExp[Symbol.species]) is called by the read, as by masking itself.
 */
export function builtinsIntact(): boolean {
  return (
    S.indexOf === sIndexOf && S.startsWith === sStartsWith && S.slice === sSlice && S.charAt === sCharAt && S.charCodeAt === sCharCodeAt &&
    S.matchAll === sMatchAll && S.substring === sSubstring && S.split === sSplit && S.replace === sReplace && S.replaceAll === sReplaceAll &&
    R.exec === rExec && R.test === rTest && R[Symbol.match] === rMatch && R[Symbol.matchAll] === rMatchAll && R[Symbol.split] === rSplit && R[Symbol.replace] === rReplace &&
    flagsGetterNow() === rFlags && flagsAnswerRight() &&
    // An index of Array.prototype (itself an array: one defined there lengthens it) is what every
    // array masking fills reads or writes through when it lacks one of its own (a setter at "0"
    // changed each range masking found; checking tester, session 41).
    A.length === 0 && arraysInheritPlainly() &&
    (RegExp as unknown as Record<symbol, unknown>)[Symbol.species] === RegExp &&
    A.push === aPush && A.sort === aSort && A.join === aJoin && A[Symbol.iterator] === aIterator && (ArrayIterator as { next: unknown }).next === aNext &&
    M.get === mGet && M.set === mSet && M.has === mHas && M[Symbol.iterator] === mIterator && (MapIterator as { next: unknown }).next === mNext &&
    T.has === tHas && T.add === tAdd && T[Symbol.iterator] === tIterator && (SetIterator as { next: unknown }).next === tNext &&
    (RegExpStringIterator as { next: unknown }).next === xNext &&
    W.get === wGet && W.set === wSet && W.has === wHas &&
    Math.max === max && Math.min === min && JSON.stringify === stringify
  );
}

const getPrototypeOf = Object.getPrototypeOf;
const OP = Object.prototype;

/**
 * Whether arrays inherit, past Array.prototype, from Object.prototype with no first index of its
 * own: a setter there (or on a prototype put between) acts in every array as one on Array.prototype
 * does (checking tester, session 41). Two looks, no allocation.
 */
function arraysInheritPlainly(): boolean {
  return getPrototypeOf(A) === OP && describe(OP, "0") === undefined;
}

/** Whether RegExp.prototype's flag getters answer as the thread began, for a regex with every flag and one with none. */
function flagsAnswerRight(): boolean {
  const every = EVERY_FLAG as RegExp & { unicodeSets?: boolean };
  const none = NO_FLAG as RegExp & { unicodeSets?: boolean };
  return (
    every.global && every.ignoreCase && every.multiline && every.dotAll && every.unicode && every.sticky && every.hasIndices && every.unicodeSets !== true &&
    !none.global && !none.ignoreCase && !none.multiline && !none.dotAll && !none.unicode && !none.sticky && !none.hasIndices && none.unicodeSets !== true
  );
}

/** Whether `now` is the descriptor the thread began with (`was`): the same value, getter and setter. */
function unchanged(now: PropertyDescriptor | undefined, was: PropertyDescriptor): boolean {
  return now !== undefined && now.value === was.value && now.get === was.get && now.set === was.set;
}

/**
 * `work()` run with the built-ins masking calls as the thread began; `unsure()` instead when one
 * was replaced in a way that cannot be undone (defined as not configurable): masking that cannot
 * trust its own searches hides the whole text rather than risk showing a secret. Callers ask
 * builtinsIntact() first (the case of every handler but a careless one) and come here only when not.
 */
export function withOriginalBuiltins<T>(work: () => T, unsure: () => T): T {
  // An index defined on Array.prototype acts in every array, this function's own included: not
  // taken away and put back, the text is hidden whole (the worker is replaced after its task).
  if (A.length !== 0 || !arraysInheritPlainly()) return unsure();
  // Indexes and assignments only, here: no method or iterator a handler could have replaced.
  let replaced: number[] | null = null;
  for (let i = 0; i < WATCHED.length; i++) {
    const watched = WATCHED[i]!;
    if (!unchanged(describe(watched[0], watched[1]), originals[i]!)) {
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

/** The names of the watched built-ins replaced now (`String.prototype.indexOf`): for the server's log, off the hot path. */
export function replacedBuiltins(): string[] {
  const names: string[] = A.length === 0 ? [] : ["Array.prototype's indexes"];
  if (!arraysInheritPlainly()) names[names.length] = getPrototypeOf(A) === OP ? "Object.prototype's index 0" : "Array.prototype's prototype";
  for (let i = 0; i < WATCHED.length; i++) {
    const watched = WATCHED[i]!;
    if (unchanged(describe(watched[0], watched[1]), originals[i]!)) continue;
    const key = typeof watched[1] === "symbol" ? `[${watched[1].description}]` : `.${String(watched[1])}`;
    names[names.length] = `${OWNER_NAMES.get(watched[0]) ?? "a built-in"}${key}`;
  }
  return names;
}

const OWNER_NAMES = new Map<object, string>([
  [String.prototype, "String.prototype"],
  [RegExp.prototype, "RegExp.prototype"],
  [RegExp, "RegExp"],
  [Array.prototype, "Array.prototype"],
  [ArrayIterator, "%ArrayIteratorPrototype%"],
  [Map.prototype, "Map.prototype"],
  [MapIterator, "%MapIteratorPrototype%"],
  [Set.prototype, "Set.prototype"],
  [SetIterator, "%SetIteratorPrototype%"],
  [RegExpStringIterator, "%RegExpStringIteratorPrototype%"],
  [WeakMap.prototype, "WeakMap.prototype"],
  [Math, "Math"],
  [JSON, "JSON"],
]);
