import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { join } from "node:path";
import { sensitive } from "../../runtime/capability/sensitive.ts";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { createSecretMask, maskChanged, maskOf, NO_MASK, sensitiveValues, unfinishedSecretLength, URL_FORMS_MAX_LENGTH } from "../../runtime/execution/secret-mask.ts";
import { INDEXED_FROM } from "../../runtime/execution/_secret-index.ts";
import { sanitizeText } from "../../runtime/execution/text-sanitize.ts";

const schema = {
  type: "object",
  properties: {
    user: { type: "string" },
    token: { type: "string", "x-docket-sensitive": true },
    auth: { type: "object", properties: { password: { type: "string", format: "password" } } },
    keys: { type: "array", items: { type: "object", properties: { key: { type: "string", writeOnly: true } } } },
    vault: { type: "object", "x-docket-sensitive": true },
    either: { anyOf: [{ type: "number" }, { type: "string", "x-docket-sensitive": true }] },
  },
};

describe("sensitiveValues", () => {
  test("sensitiveValues collects every string the schema marks, at any depth, and everything inside a sensitive object", () => {
    const input = { user: "ada", token: "tok-1111", auth: { password: "pw-2222" }, keys: [{ key: "k-3333" }, { key: "k-4444" }], vault: { a: "v-5555", b: ["v-6666"] }, either: "e-7777" };
    expect(sensitiveValues(input, schema).sort()).toEqual(["e-7777", "k-3333", "k-4444", "pw-2222", "tok-1111", "v-5555", "v-6666"]);
  });

  test("sensitiveValues takes a sensitive number as its decimal text, and never a number nothing marks", () => {
    const numbers = { type: "object", properties: { pin: { type: "number", "x-docket-sensitive": true }, count: { type: "number" }, codes: { type: "array", "x-docket-sensitive": true } } };
    expect(sensitiveValues({ pin: 73914562, count: 99999999, codes: [1234.5, -7777, "c-8888"] }, numbers).sort()).toEqual(["-7777", "1234.5", "73914562", "c-8888"]);
    const mask = maskOf(sensitiveValues({ pin: 73914562, count: 5 }, numbers));
    expect(mask.text("pin=73914562 count=5")).toBe("pin=[redacted] count=5");
    // A number of an output that is the secret becomes the text that hides it; others, even one
    // holding its digits (another number), stay numbers (tester T: a count of 10000 with a pin of 1000).
    expect(mask.value<unknown>({ pin: 73914562, near: 739145620, other: 7391456, list: [73914562, 1] })).toEqual({ pin: "[redacted]", near: 739145620, other: 7391456, list: ["[redacted]", 1] });
    const changed = (value: unknown) => maskChanged(value, mask.value(value));
    expect(changed({ a: [1, { b: 73914562 }] })).toBe(true);
    expect(changed({ a: [1, { b: 739145620 }], c: "7391" })).toBe(false);
    expect(changed({ c: "pin 73914562" })).toBe(true);
    expect(changed({ "key 73914562": 1 })).toBe(true);
    expect(changed([new String("pin 73914562")])).toBe(true);
    expect(changed([new String("pin"), new Date(0), null, true])).toBe(false);
  });

  test("sensitiveValues takes the keys of a sensitive record as secrets, but not the field names a sensitive object declares", () => {
    const declared = toCapabilityJsonSchema(
      v.object({
        keys: sensitive(v.record(v.string(), v.string())),
        login: sensitive(v.object({ user: v.string(), pass: v.string() })),
        either: sensitive(v.union([v.object({ name: v.string() }), v.object({ code: v.string() })])),
      }),
      "input",
    );
    const input = { keys: { SECRETKEYNAME: "value-1", abc: "value-2" }, login: { user: "ada-lovelace", pass: "pw-3333" }, either: { name: "branch-4444" } };
    expect(sensitiveValues(input, declared).sort()).toEqual(["SECRETKEYNAME", "ada-lovelace", "branch-4444", "pw-3333", "value-1", "value-2"]);
    const mask = maskOf(sensitiveValues(input, declared));
    expect(mask.text("keys SECRETKEYNAME for user ada-lovelace, name and code")).toBe("keys [redacted] for user [redacted], name and code");
  });

  test("sensitiveValues takes the keys of a record whose keys the schema marks (propertyNames), and not its values (containment tester, session 47)", () => {
    const declared = toCapabilityJsonSchema(v.object({ keys: v.record(sensitive(v.string()), v.string()) }), "input");
    const found = sensitiveValues({ keys: { sk_live_SUPERSECRET99: "prod", other_key_name: "staging" } }, declared);
    expect(found.sort()).toEqual(["other_key_name", "sk_live_SUPERSECRET99"]);
    expect(maskOf(found).text("using sk_live_SUPERSECRET99 for prod")).toBe("using [redacted] for prod");
    // Beside an object in an intersect, the object's declared fields are no secret keys (checking tester, session 47).
    const both = toCapabilityJsonSchema(v.intersect([v.object({ region: v.string() }), v.record(sensitive(v.string()), v.string())]), "input");
    expect(sensitiveValues({ region: "eu-west-1", sk_live_KEY99: "x" }, both)).toEqual(["sk_live_KEY99"]);
    expect(sensitiveValues({ region: "eu-west-1" }, both)).toEqual([]);
  });

  test("sensitiveValues follows $ref: a secret inside v.lazy, and at every level of a recursive schema, however deep", () => {
    type Node = { token: string; note: string; children: Node[] };
    const node: v.GenericSchema<Node> = v.object({ token: sensitive(v.string()), note: v.string(), children: v.array(v.lazy(() => node)) });
    const declared = toCapabilityJsonSchema(v.object({ tree: node, lazy: v.lazy(() => sensitive(v.string())), vault: sensitive(v.lazy(() => v.object({ user: v.string(), nested: v.record(v.string(), v.string()) }))) }), "input");
    // A chain 60 levels deep, 120 levels of JSON (an admitted input goes to 128): every level's token is a secret.
    let tree: Node = { token: "token-60", note: "plain-60", children: [] };
    for (let level = 59; level >= 1; level--) tree = { token: `token-${level}`, note: `plain-${level}`, children: [tree] };
    const input = { tree, lazy: "lazy-secret", vault: { user: "ada-lovelace", nested: { KEYNAME: "kept-secret" } } };
    const found = sensitiveValues(input, declared);
    for (let level = 1; level <= 60; level++) expect(found).toContain(`token-${level}`);
    expect(found.some((value) => value.startsWith("plain-"))).toBe(false);
    // A declared field name of a secret object stays readable through the reference; its data does not.
    expect(found.sort()).toEqual([...Array.from({ length: 60 }, (_, i) => `token-${i + 1}`), "KEYNAME", "ada-lovelace", "kept-secret", "lazy-secret"].sort());
    expect(found).not.toContain("user");
    expect(maskOf(sensitiveValues(input, declared)).text("deep token-60 and lazy-secret")).toBe("deep [redacted] and [redacted]");
  });

  test("sensitiveValues ends on a cycle of references", () => {
    const cyclic = { type: "object", properties: { a: { $ref: "#/$defs/x" } }, $defs: { x: { anyOf: [{ $ref: "#/$defs/y" }, { type: "number" }] }, y: { allOf: [{ $ref: "#/$defs/x" }, { type: "string", format: "password" }] } } };
    expect(sensitiveValues({ a: "cycle-secret" }, cyclic)).toEqual(["cycle-secret"]);
  });

  test("sensitiveValues reads a record's own entries: a key named like an Object method is its data", () => {
    const declared = toCapabilityJsonSchema(v.object({ map: v.record(v.string(), sensitive(v.string())) }), "input");
    expect(sensitiveValues(JSON.parse('{"map":{"constructor":"s1-secret","toString":"s2-secret"}}'), declared).sort()).toEqual(["s1-secret", "s2-secret"]);
  });

  test("sensitiveValues never takes a value by its field's name", () => {
    expect(sensitiveValues({ user: "password-looking" }, { type: "object", properties: { user: { type: "string" } } })).toEqual([]);
    expect(maskOf(sensitiveValues({ password: "plain-text" }, { type: "object", properties: { password: { type: "string" } } }))).toBe(NO_MASK);
  });
});

describe("createSecretMask", () => {
  test("a mask replaces every occurrence, and its JSON-escaped and URL-encoded forms", () => {
    const mask = createSecretMask(['se"cret/value 1']);
    expect(mask.text('a se"cret/value 1 b')).toBe("a [redacted] b");
    expect(mask.text(JSON.stringify({ token: 'se"cret/value 1' }))).toBe('{"token":"[redacted]"}');
    expect(mask.text(`https://api/x?key=${encodeURIComponent('se"cret/value 1')}`)).toBe("https://api/x?key=[redacted]");
  });

  test("a secret holding a quote or a backslash is masked in a JSON text put into another, up to three times, and console.log of such a text (containment tester, session 47)", () => {
    const { inspect } = require("node:util") as typeof import("node:util");
    const secret = "Tr0ub4dor&\"3\\x'<zz";
    const mask = createSecretMask([secret]);
    const body = JSON.stringify({ password: secret });
    const printed = [
      JSON.stringify({ method: "POST", body }),
      JSON.stringify({ outer: JSON.stringify({ method: "POST", body }) }),
      inspect({ req: { body } }),
      inspect(body),
      inspect({ req: JSON.stringify({ body }) }),
      JSON.stringify(inspect({ password: secret })),
    ];
    for (const text of printed) {
      const masked = mask.text(text);
      expect(masked).toContain("[redacted]");
      expect(masked).not.toContain("Tr0ub4dor");
    }
    // A secret with nothing to escape has no other forms to find.
    expect(createSecretMask(["plain-secret-value"]).secrets).toEqual(["plain-secret-value"]);
  });

  test("a secret holding quotes is masked in each quoting console.log may choose for the line around it, a long one cut by console.log is hidden where it was cut, and its JSON form made safe or put in a URL too (checking tester, session 47)", () => {
    const { inspect } = require("node:util") as typeof import("node:util");
    const quoted = `it's"SECRET-ZQX9`;
    const mask = createSecretMask([quoted]);
    // The line holds a backtick: inspect quotes it with ' and escapes the secret's own '.
    for (const text of [inspect({ cmd: `psql -c \`select 1\` --password ${quoted}` }), inspect({ body: inspect({ pw: quoted }) }), inspect({ a: `${quoted} '` })]) {
      expect(mask.text(text)).not.toContain("SECRET-ZQX9");
    }
    const long = "A1b2C3d4".repeat(1500);
    const longMask = createSecretMask([long]);
    for (const text of [inspect({ auth: `Bearer ${long}` }), inspect({ body: JSON.stringify({ tok: long }) })]) {
      const masked = longMask.text(text);
      expect(masked).toContain("[redacted]");
      expect(masked).not.toContain("A1b2C3d4A1b2");
    }
    // Cut inside a JSON string (the quote escaped), and printed in colour (second checking tester).
    for (const text of [JSON.stringify({ a: inspect(`it's ${"x".repeat(9000)}${long}`) }), inspect({ k: "x".repeat(9000) + long }, { colors: true })]) {
      expect(longMask.text(text)).not.toContain("A1b2C3d4A1b2");
    }
    // A thousand markers look only at the text since the one before: done in one pass, nothing of the secret shown.
    const markers = `'... 1 more characters`.repeat(50_000);
    expect(longMask.text(markers)).toBe(markers);
    // A shared and a secret-starting run between markers.
    expect(longMask.text(`'A1b2C3d4A1b2C3'... 9 more characters'plain text here'... 3 more characters`)).toBe(`'[redacted]'... 9 more characters'plain text here'... 3 more characters`);
    // Escaped again at every level in every quoting: a JSON body inside an object printed beside a backtick (second checking tester: the deeper levels took inspect's own choice).
    const quoted2 = `Tr0ub4dor'&"3xZqW9pLm`;
    const body = JSON.stringify({ text: "Deploy `v1.2` done", password: quoted2 });
    expect(createSecretMask([quoted2]).text(inspect({ method: "POST", body }))).not.toContain("3xZqW9pLm");
    expect(createSecretMask(["Qz7Kp2\\Lm9Xw4'Rt6Yh3Nb8Vc5"]).text(inspect({ req: inspect({ pw: "Qz7Kp2\\Lm9Xw4'Rt6Yh3Nb8Vc5", cmd: "echo `date`" }) }))).not.toContain("Rt6Yh3Nb8Vc5");
    // Cut in colour and then put in JSON; cut and put in JSON twice; and a thousand ordinary cut rows beside a long secret stay as they are (fourth checking tester).
    const { inspect: look } = require("node:util") as typeof import("node:util");
    expect(longMask.text(JSON.stringify(look(`Bearer ${long}`, { colors: true })))).not.toContain("A1b2C3d4A1b2");
    expect(longMask.text(JSON.stringify({ x: JSON.stringify({ h: look({ a: `Bearer ${long}` }) }) }))).not.toContain("A1b2C3d4A1b2");
    const rows = look(Array.from({ length: 700 }, (_, i) => `row${i}:${"x".repeat(12_000)}`), { maxArrayLength: Infinity });
    expect(longMask.text(rows)).toBe(rows);
    // Over 64 KiB with a C0 control and DEL: its JSON form made safe too.
    const binary = "abcdefghijklmnopqrstuvwxyz0123456789ABCD\u0001\u007f".repeat(1700).slice(0, 70_000);
    expect(createSecretMask([binary]).text(sanitizeText(JSON.stringify({ t: binary })))).not.toContain("ABCD\\u0001abcdef");
    // Bun's own inspect writes a control character as JSON does, its hex in upper case; a line of a
    // multi-line secret is found as JSON writes it; a 19 KB value inside a JSON body inside another (third checking tester).
    const escaped = "Zq7Xk9Wm\u001bPL4abc";
    expect(createSecretMask([escaped]).text(Bun.inspect([escaped]))).not.toContain("PL4abc");
    const env = 'A="S3CRETPASSWORD1"\nB=\'SECRETSTRIPE2x`\'';
    expect(createSecretMask([env]).text(JSON.stringify({ env: env.split("\n") }))).not.toMatch(/S3CRET|STRIPE/);
    const kube = JSON.stringify({ clusters: [{ data: "Q".repeat(15_000) }], users: [{ token: `SECRETTOKEN${"z".repeat(3000)}` }] }, null, 2);
    expect(createSecretMask([kube]).text(JSON.stringify({ body: JSON.stringify({ token: kube }) }))).not.toContain("SECRETTOKEN");
    // JSON leaves DEL raw; made safe to print, it is gone from the JSON form.
    const control = "ab\u0001cd\u007fefZQX9";
    const printed = createSecretMask([control]).text(sanitizeText(JSON.stringify({ tok: control })));
    expect(printed).not.toContain("efZQX9");
    const url = `https://x/?q=${encodeURIComponent(JSON.stringify({ tok: `pa'ss"wo\rdZQX9` }))}`;
    expect(createSecretMask([`pa'ss"wo\rdZQX9`]).text(url)).not.toContain("ZQX9");
  });

  test("a secret put into a URL is masked whichever way it was encoded: form encoding, encodeURI, URLSearchParams, each part of a WHATWG URL, either case of hex", () => {
    const spaced = "correct horse battery";
    const quoted = "it'ssecret1";
    const accented = 'pä"ss<&>wörd';
    const mask = createSecretMask([spaced, quoted, accented]);
    // What is left of any of them once masked: a word of each.
    const leaks = (text: string) => /horse|secret1|w(?:ö|%C3%B6)rd/i.test(mask.text(text));
    for (const secret of [spaced, quoted, accented]) {
      const url = new URL("https://h/");
      url.pathname = `/a/${secret}`;
      url.search = new URLSearchParams({ p: secret }).toString();
      url.username = secret;
      url.password = secret;
      url.hash = secret;
      for (const text of [
        new URLSearchParams({ p: secret }).toString(),
        new URL(`https://h/?q=${secret}`).href,
        new URL(`https://h/${secret}`).href,
        new URL(`x-other://h/?q=${secret}`).href,
        url.href,
        encodeURI(`https://h/${secret}`),
        encodeURIComponent(secret).toLowerCase(),
        encodeURI(secret).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
      ]) {
        expect(leaks(text), `${secret} in ${text} -> ${mask.text(text)}`).toBe(false);
        expect(mask.text(text)).toContain("[redacted]");
      }
    }
    expect(mask.text("p=correct+horse+battery&q=it%27ssecret1")).toBe("p=[redacted]&q=[redacted]");
  });

  test("a secret put into a URL is masked as axios, strict RFC 3986 (OAuth 1.0, SigV4), escape() and a non-special scheme's path write it", () => {
    const cases: [secret: string, text: string][] = [
      // axios 1.x puts `: $ , [ ]` back and writes a space as `+`; axios 0.x puts `@` back too.
      ["user:pa$$ word,[1]", "/api?key=user:pa$$+word,[1]"],
      ["me@host:pa$$ word", "/api?key=me@host:pa$$+word"],
      // Strictly RFC 3986: `! ' ( ) *` encoded too.
      ["it's*secret*", "oauth_signature=it%27s%2Asecret%2A"],
      ["it's secret!", "X-Amz-Credential=it%27s%20secret%21"],
      // escape(): Latin-1 as %E4, beyond it as %u20AC.
      ["pässwörd", "q=p%E4ssw%F6rd"],
      ["a€b-secret", "q=a%u20ACb-secret"],
      // new URL("x-foo:" + t): the opaque path encodes only controls and non-ASCII.
      ['pä ss<w>"rd', 'x-foo:p%C3%A4 ss<w>"rd'],
      ["päss wörd", "x-foo:p%c3%a4ss w%c3%b6rd"],
    ];
    const mask = createSecretMask(cases.map(([secret]) => secret));
    for (const [, text] of cases) expect(mask.text(text)).toMatch(/^[^=]*[:=]\[redacted\]$/);
    expect(mask.text(`x${escape("pässwörd")}y ${new URL(`x-foo:${"päss wörd"}`).href}`)).toBe("x[redacted]y x-foo:[redacted]");
  });

  test("a secret no URL encoding changes has one form only, itself (every form is searched for in every text)", () => {
    expect(createSecretMask(["plain-token_1.2"]).secrets).toEqual(["plain-token_1.2"]);
    // `~` is left alone by encodeURIComponent but escaped by escape(): two forms, either case of hex.
    expect(createSecretMask(["token~1234"]).secrets.toSorted()).toEqual(["token%7E1234", "token%7e1234", "token~1234"]);
  });

  test("a URL form shorter than its secret (a part the URL parser dropped) is not masked on its own", () => {
    const mask = createSecretMask(["?abc", "../abcdefg"]);
    expect(mask.text("abc abcdefg")).toBe("abc abcdefg");
    expect(mask.text("q=%3Fabc p=..%2Fabcdefg")).toBe("q=[redacted] p=[redacted]");
  });

  test("a secret holding tabs or line breaks is masked in a URL, which drops them, whole", () => {
    const tabbed = "tab\tsep\tsecret";
    const broken = "first line\nsecond";
    const mask = createSecretMask([tabbed, broken]);
    for (const text of [
      new URL(`https://x.example/p?q=${tabbed}`).href,
      new URL(`https://x.example/${tabbed}`).href,
      new URL(`https://x.example/p#${tabbed}`).href,
      new URL(`x-foo:${tabbed}`).href,
      new URL(`https://x.example/p?q=${broken}`).href,
    ]) {
      expect(mask.text(text), text).toContain("[redacted]");
      expect(mask.text(text), text).not.toMatch(/sepsecret|linesecond|line%20second/);
    }
    // What is left once they are dropped is masked only when it is still long enough to be a secret.
    expect(createSecretMask(["a\tb\tc\td"]).text("abcd")).toBe("[redacted]");
    expect(createSecretMask(["a\t\tbc"]).text("abc")).toBe("abc");
  });

  test("overlapping secrets leave no piece of either behind", () => {
    const mask = createSecretMask(["abcdef", "defghi"]);
    expect(mask.text("xxabcdefghiyy abcdef")).toBe("xx[redacted]yy [redacted]");
  });

  test("values shorter than 4 characters are not masked (they would blank ordinary words)", () => {
    expect(createSecretMask(["abc", ""])).toBe(NO_MASK);
    expect(createSecretMask(["abc", "abcd"]).text("abc abcd")).toBe("abc [redacted]");
  });

  test("mask.value masks strings and keys at any depth and leaves other values alone", () => {
    const mask = createSecretMask(["hunter22"]);
    expect(mask.value<unknown>({ a: ["x hunter22 y", 3, null, true], hunter22: { b: "hunter22" } })).toEqual({ a: ["x [redacted] y", 3, null, true], "[redacted]": { b: "[redacted]" } });
    expect(mask.value("hunter22")).toBe("[redacted]");
  });

  test("mask.value keeps an own __proto__ key as a key (JSON.parse makes one): assigned, it set the copy's prototype and the field vanished", () => {
    const mask = createSecretMask(["hunter22"]);
    const masked = mask.value<Record<string, unknown>>(JSON.parse('{"__proto__":{"echo":"hunter22"},"n":1}'));
    expect(JSON.stringify(masked)).toBe('{"__proto__":{"echo":"[redacted]"},"n":1}');
    expect(Object.getPrototypeOf(masked)).toBe(Object.prototype);
  });

  test("mask.value masks a String object as the text JSON writes for it", () => {
    const mask = createSecretMask(["hunter22"]);
    const boxed = structuredClone({ echoed: new String("x hunter22 y"), list: [new String("hunter22")] });
    expect(JSON.stringify(mask.value(boxed))).toBe('{"echoed":"x [redacted] y","list":["[redacted]"]}');
  });

  test("a secret is masked in each form a text made safe to print gives it: its line breaks and control characters changed", () => {
    const mask = createSecretMask(["LINE1abc\nLINE2abc", "TRAILING42\n", "CR1abcd\r\nCR2abcd", "BEL\u0007abcd"]);
    expect(mask.text("a LINE1abc ⏎ LINE2abc b")).toBe("a [redacted] b");
    expect(mask.text("a TRAILING42 ⏎  b")).toBe("a [redacted] ⏎  b");
    expect(mask.text("a CR1abcd\nCR2abcd b")).toBe("a [redacted] b");
    expect(mask.text("a BELabcd b")).toBe("a [redacted] b");
    // Forms shorter than 4 characters once made safe are not masked by value.
    expect(createSecretMask(["\u0007ab\u0007"]).text("ab")).toBe("ab");
  });

  test("a secret split by what a terminal does not show is masked as it reads: an escape (7- or 8-bit), a control or zero-width character, a colour escape as JSON or console.log spell it", () => {
    const mask = createSecretMask(["Qz7kWp3mVb9tRx"]);
    const [a, b] = ["Qz7kW", "p3mVb9tRx"];
    for (const hidden of ["\u001b[31m", "\u001b[38:2::255:0:0m", "\u009b31m", "\u001bOA", "\u008fA", "\u001bNA", "\u001b]0;title\u0007", "\u0007", "\u200b", "\u00ad", "\u202e"]) {
      expect(mask.text(`x ${a}${hidden}${b} y`)).toBe("x [redacted] y");
    }
    const { inspect } = require("node:util") as typeof import("node:util");
    expect(mask.text(inspect({ k: `${a}\u001b[31m${b}` }))).toBe("{ k: '[redacted]' }");
    expect(mask.text(JSON.stringify({ k: `${a}\u001b[31m${b}` }))).toBe('{"k":"[redacted]"}');
    expect(mask.value({ c1: `${a}\u009b31m${b}` })).toEqual({ c1: "[redacted]" });
    // A line break or a tab shows: the halves are on two lines, or apart.
    expect(mask.text(`${a}\n${b}`)).toBe(`${a}\n${b}`);
    expect(mask.text(`${a}\t${b}`)).toBe(`${a}\t${b}`);
  });

  test("a mask of many secrets (looked up by their first units) masks every text exactly as one search per secret does, overlaps and repeats included, and finds the same unfinished tails", () => {
    // A seeded generator: the same texts every run.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const word = (min: number, max: number) => Array.from({ length: min + Math.floor(next() * (max - min + 1)) }, () => "abc"[Math.floor(next() * 3)]).join("");
    // Letters alone: every form of each secret (JSON, inspect, URL) is itself, so the mask's secrets are these.
    const values = [...new Set(Array.from({ length: INDEXED_FROM + 20 }, () => word(4, 9)))];
    const mask = createSecretMask(values);
    expect(mask.index).not.toBeNull();
    expect([...mask.secrets].sort()).toEqual([...values].sort());
    /** Every occurrence of every secret, merged, as the mask promises. */
    const reference = (text: string) => {
      const covered = new Array<boolean>(text.length).fill(false);
      for (const secret of values) for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) covered.fill(true, at, at + secret.length);
      let out = "";
      for (let i = 0; i < text.length; i++) {
        if (!covered[i]) out += text[i];
        else if (i === 0 || !covered[i - 1]) out += "[redacted]";
      }
      return out;
    };
    const naiveTail = (text: string) => {
      let longest = 0;
      for (const secret of values) for (let at = Math.max(0, text.length - secret.length + 1); at < text.length; at++) if (secret.startsWith(text.slice(at))) longest = Math.max(longest, text.length - at);
      return longest;
    };
    for (let i = 0; i < 400; i++) {
      const text = Array.from({ length: 1 + Math.floor(next() * 6) }, () => (next() < 0.5 ? values[Math.floor(next() * values.length)]! : word(1, 12)) + (next() < 0.3 ? " " : "")).join("");
      expect(mask.text(text)).toBe(reference(text));
      expect(unfinishedSecretLength(text, mask.secrets, mask.index)).toBe(naiveTail(text));
      expect(unfinishedSecretLength(text, mask.secrets)).toBe(naiveTail(text));
    }
  });

  test("a secret of thousands of lines (a certificate bundle) is masked whole, line by line and as JSON; one longer than URL_FORMS_MAX_LENGTH is not searched for in URL encodings, which no URL carries", () => {
    const line = (i: number) => `MIIB${String(i).padStart(6, "0")}Qz7kWp3mVb9tRxAbCdEfGh+/`;
    const bundle = Array.from({ length: 3500 }, (_, i) => line(i)).join("\n");
    expect(bundle.length).toBeGreaterThan(URL_FORMS_MAX_LENGTH);
    const mask = createSecretMask([bundle]);
    expect(mask.index).not.toBeNull();
    // Itself and its made-safe and JSON forms, each line and its inspect form: no dozen URL encodings of the whole.
    expect(mask.secrets.length).toBeLessThan(2 * 3500 + 10);
    expect(mask.secrets.some((secret) => /%2F|%0A|%2B/i.test(secret))).toBe(false);
    expect(mask.text(`ca=${bundle};`)).toBe("ca=[redacted];");
    expect(mask.text(JSON.stringify({ ca: bundle }))).toBe('{"ca":"[redacted]"}');
    expect(mask.text(`line: ${line(1234)} end`)).toBe("line: [redacted] end");
    // A short secret keeps its URL forms.
    expect(createSecretMask(["p@ss word/1"]).text("https://x/?q=p%40ss+word%2F1")).toBe("https://x/?q=[redacted]");
  });

  test("unfinishedSecretLength: the longest tail of a text that starts a secret (any form) without finishing it", () => {
    const { secrets } = createSecretMask(["hunter22", "a/b c:d"]);
    expect(unfinishedSecretLength("password: hun", secrets)).toBe(3);
    expect(unfinishedSecretLength("password: hunter2", secrets)).toBe(7);
    // A whole secret is the mask's, not held: what follows it is.
    expect(unfinishedSecretLength("password: hunter22", secrets)).toBe(0);
    expect(unfinishedSecretLength("h", secrets)).toBe(1);
    expect(unfinishedSecretLength("nothing here", secrets)).toBe(0);
    expect(unfinishedSecretLength("", secrets)).toBe(0);
    // The URL-encoded form counts: "a%2Fb%20c%3A" starts it.
    expect(unfinishedSecretLength("url a%2Fb%20c%3A", secrets)).toBe(12);
    // Of two starts, the longer one: "hunhunte" ends with "hunte", which starts hunter22.
    expect(unfinishedSecretLength("hunhunte", secrets)).toBe(5);
    expect(unfinishedSecretLength("anything", NO_MASK.secrets)).toBe(0);
  });

  test("a secret is masked as console.log writes it inside an object (util.inspect's quoting), and a multi-line one line by line", () => {
    const { inspect } = require("node:util") as typeof import("node:util");
    const quoted = "p'a\"s`sword";
    const pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC\n-----END PRIVATE KEY-----";
    const mask = createSecretMask([quoted, "abc\"de\tfgh", pem]);
    for (const printed of [inspect({ key: quoted }), inspect({ t: "abc\"de\tfgh" }), inspect({ key: pem }), inspect({ deep: { list: [pem] } })]) {
      const masked = mask.text(printed);
      expect(masked).toContain("[redacted]");
      for (const piece of ["p\\'a", "de\\tfgh", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw", "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC"]) expect(masked).not.toContain(piece);
    }
    // A multi-line secret whose lines hold characters inspect escapes: each line in its escaped form too.
    const escaped = "-----BEGIN KEY-----\nB\\'\"xB\\'\"xB\\'\"x\nC\tzC\tzC\tzC\tz\n-----END KEY-----";
    const printed = createSecretMask([escaped]).text(inspect({ key: escaped }, { breakLength: 20 }));
    for (const piece of ["B\\\\", "C\\tz"]) expect(printed).not.toContain(piece);
    // A line too short to be a secret of its own is left alone elsewhere.
    expect(createSecretMask(["abc\nshort\nlonger-line-here"]).text("short and longer-line-here")).toBe("short and [redacted]");
  });
});

describe("masking with built-ins a handler replaced (containment tester, session 40)", () => {
  const SECRET = "Pa55:w0rd/Sekr3t+Z=q";

  test("a replaced String.prototype.indexOf (or slice, or Array.prototype.push) does not turn masking off, and stays the handler's after", () => {
    const mask = createSecretMask([SECRET]);
    const own = { indexOf: String.prototype.indexOf, slice: String.prototype.slice, push: Array.prototype.push };
    const fakeIndexOf = () => -1;
    const fakeSlice = function (this: string) {
      return String(this);
    };
    const fakePush = () => 0;
    try {
      String.prototype.indexOf = fakeIndexOf;
      String.prototype.slice = fakeSlice;
      Array.prototype.push = fakePush;
      expect(mask.text(`LOG ${SECRET} and ${SECRET}.`)).toBe("LOG [redacted] and [redacted].");
      expect(mask.value({ said: `OUT ${SECRET}` })).toEqual({ said: "OUT [redacted]" });
      // What the handler installed is what its code goes on seeing.
      expect(String.prototype.indexOf).toBe(fakeIndexOf);
      expect(String.prototype.slice).toBe(fakeSlice);
      expect(Array.prototype.push).toBe(fakePush);
    } finally {
      String.prototype.indexOf = own.indexOf;
      String.prototype.slice = own.slice;
      Array.prototype.push = own.push;
    }
  });

  test("one replaced for good (defined as not configurable) hides the whole text rather than trust it; a configurable one is put back for the mask", () => {
    // In a process of its own: a built-in made unconfigurable could never be put back for the other tests.
    const script = `
      import { createSecretMask } from ${JSON.stringify(join(import.meta.dir, "../../runtime/execution/secret-mask.ts"))};
      const mask = createSecretMask([${JSON.stringify(SECRET)}]);
      Object.defineProperty(String.prototype, "charCodeAt", { value: () => 0, writable: true, configurable: true });
      const configurable = mask.text("a ${SECRET} b");
      Object.defineProperty(String.prototype, "indexOf", { value: () => -1, writable: false, configurable: false });
      console.log(JSON.stringify([configurable, mask.text("a ${SECRET} b"), "x".indexOf("x")]));
    `;
    const ran = Bun.spawnSync([process.execPath, "-e", script], { stderr: "pipe" });
    expect(ran.stderr.toString()).toBe("");
    expect(JSON.parse(ran.stdout.toString())).toEqual(["a [redacted] b", "[redacted]", -1]);
  });
});

describe("a secret's bytes written as numbers", () => {
  const secret = "ghp_Abc123Def456Ghi789";
  const bytes = [...Buffer.from(secret)];
  const hex = bytes.map((b) => b.toString(16).padStart(2, "0"));
  const mask = createSecretMask([secret]);

  test("are masked as a Buffer, a typed array over several padded lines, and JSON write them, wherever in the text (second checking tester, session 46)", () => {
    expect(mask.text(`<Buffer 62 6f 64 79 3d ${hex.join(" ")} 0a>`)).toBe("<Buffer 62 6f 64 79 3d [redacted] 0a>");
    // As util.inspect groups a long array: padded columns over several lines.
    const grouped = `Uint8Array(22) [\n  ${bytes.slice(0, 8).map((b) => String(b).padStart(3)).join(", ")},\n  ${bytes.slice(8, 16).map((b) => String(b).padStart(3)).join(", ")},\n  ${bytes.slice(16).map((b) => String(b).padStart(3)).join(", ")}\n]`;
    const masked = mask.text(grouped);
    expect(masked).toContain("[redacted]");
    for (const b of bytes.slice(1, -1)) expect(masked).not.toMatch(new RegExp(`\\b${b},`));
    expect(mask.text(`{"body":[1,2,${bytes.join(",")},3]}`)).toBe('{"body":[1,2,[redacted],3]}');
    expect(mask.text(`Promise { <Buffer ${hex.join(" ")}> }`)).toBe("Promise { <Buffer [redacted]> }");
  });

  test("a Buffer printed cut short (its first 50 bytes) shows no start of a secret of eight bytes or more; fewer numbers, or other ones, are left as they are", () => {
    const long = "sk-proj-" + "x".repeat(60);
    const longBytes = [...Buffer.from(long)].map((b) => b.toString(16).padStart(2, "0"));
    const cut = createSecretMask([long]).text(`<Buffer 00 01 ${longBytes.slice(0, 48).join(" ")} ... 14 more bytes>`);
    expect(cut).toBe("<Buffer 00 01 [redacted] ... 14 more bytes>");
    // The first seven bytes alone at a run's end are too few to say.
    expect(mask.text(`<Buffer ${hex.slice(0, 7).join(" ")}>`)).toBe(`<Buffer ${hex.slice(0, 7).join(" ")}>`);
    expect(mask.text("1, 2, 3, 4, 5, 6 and 61 62 63 64")).toBe("1, 2, 3, 4, 5, 6 and 61 62 63 64");
    expect(NO_MASK.text(`<Buffer ${hex.join(" ")}>`)).toBe(`<Buffer ${hex.join(" ")}>`);
  });

  test("an array of bytes holding a secret's in a value (a Buffer returned, Array.from(buffer)) is \"[redacted]\" in its place; other arrays of numbers stay (third checking tester, session 46)", () => {
    expect(mask.value<unknown>({ out: { type: "Buffer", data: bytes }, list: [1, 2, 3, 4], also: [7, ...bytes, 7] })).toEqual({ out: { type: "Buffer", data: "[redacted]" }, list: [1, 2, 3, 4], also: "[redacted]" });
    // With a number beside them that is no byte (fourth checking tester).
    expect(mask.value<unknown>({ a: [...bytes, 256], b: [-1, ...bytes] })).toEqual({ a: "[redacted]", b: "[redacted]" });
  });

  test("an output of many arrays costs one look-up per number, and ordinary numbers are never redacted for the budget (fourth checking tester, session 46: 6.7 s on the server's thread; rows redacted)", () => {
    const secrets = Array.from({ length: 100 }, (_, i) => `${"k".repeat(60)}${String(i).padStart(40, "0")}`);
    const many = createSecretMask(secrets);
    const rows = Array.from({ length: 60_000 }, () => new Array(64).fill(0));
    expect(many.value(rows)).toEqual(rows);
    const text = JSON.stringify(Array.from({ length: 2100 }, (_, i) => Array.from({ length: 64 }, (_, j) => (i + j) % 200)));
    expect(many.text(text)).toBe(text);
  });

  test("coloured numbers (inspect with colors) are read past their escapes, and a run of any length is searched (third checking tester, session 46)", () => {
    const coloured = `Uint8Array(22) [ ${bytes.map((b) => `\x1b[33m${b}\x1b[39m`).join(", ")} ]`;
    const masked = mask.text(coloured);
    expect(masked).toContain("[redacted]");
    expect(masked.replace(/\x1b\[[0-9;]*m/g, "")).not.toContain(bytes.slice(2, 6).join(", "));
    const long = `[${[...bytes, ...new Array(150_000).fill(7)].join(",")}]`;
    expect(mask.text(long).startsWith("[[redacted],7,7,")).toBe(true);
  });

  test("a run that would cost more than its bound to search is hidden whole, never shown unsearched; the search of a long run of one number stays linear (third checking tester: 11 s on the server's thread)", () => {
    // The secret's first bytes met at every place of the run, the rest never.
    const many = createSecretMask([`${"a".repeat(19_999)}b`, ...Array.from({ length: 4 }, (_, i) => `${"a".repeat(20_000)}${i}`)]);
    const run = new Array(99_000).fill(97).join(",");
    expect(many.text(`line ${run} end`)).toBe("line [redacted] end");
    // A secret of one repeated byte in a run of it: found whole, and cut at the end.
    const same = createSecretMask(["a".repeat(20_000)]);
    expect(same.text(run)).toBe("[redacted]");
  });
});
