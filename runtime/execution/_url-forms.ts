/**
 * The forms `value` takes once put into a URL (docs/security.md, "Masked by value"): each way a
 * handler commonly encodes it, and each with lower-case hex too (`%c3%a4`, as some libraries
 * write it). Made by the platform's own URL and encoders, so that they are what this runtime
 * writes: Bun's WHATWG path encodes `^`, Node's does not.
 */
export function urlEncodedForms(value: string): string[] {
  // Every secret's forms are searched for in every text: one made only of characters that no
  // encoding below changes has a single form, itself, and is spared building the rest.
  if (NEVER_ENCODED.test(value)) return [value];
  const forms = new Set<string>();
  const add = (form: () => string) => {
    try {
      forms.add(form());
    } catch {
      // A lone surrogate cannot be URL-encoded by encodeURI*, so it cannot appear that way either.
    }
  };
  add(() => encodeURIComponent(value));
  add(() => encodeURI(value));
  // application/x-www-form-urlencoded: a space as `+` (URLSearchParams, a form post).
  add(() => new URLSearchParams([["", value]]).toString().slice(1));
  // axios's query parameters (its buildURL): encodeURIComponent with `: $ , [ ]` put back and a
  // space as `+`; axios before 1.0 put `@` back too.
  add(() => putBack(encodeURIComponent(value), ":$,[]").replaceAll("%20", "+"));
  add(() => putBack(encodeURIComponent(value), ":$,[]@").replaceAll("%20", "+"));
  // RFC 3986 strictly (OAuth 1.0 signatures, AWS SigV4): `! ' ( ) *` encoded as well.
  add(() => encodeURIComponent(value).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`));
  // The legacy escape(): Latin-1 as `%E4`, beyond it as `%u20AC`, `@ * + /` left as they are.
  add(() => escape(value));
  // The WHATWG URL's percent-encode sets, as `new URL(…)` and its setters write a part: the
  // query of a special scheme (`'` encoded) and of another, the path, the userinfo, the fragment,
  // and the opaque path of a non-special scheme (`x-foo:` + value: only controls and non-ASCII).
  add(() => urlPart("https:", (url) => (url.search = value)).search.slice(1));
  add(() => urlPart("x-docket:", (url) => (url.search = value)).search.slice(1));
  add(() => urlPart("https:", (url) => (url.pathname = `/${value}`)).pathname.slice(1));
  add(() => urlPart("https:", (url) => (url.username = value)).username);
  add(() => urlPart("https:", (url) => (url.hash = value)).hash.slice(1));
  add(() => new URL(`x-docket:${value}`).href.slice("x-docket:".length));
  for (const form of [...forms]) forms.add(form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
  // An encoding only lengthens, once the tabs and line breaks that the URL parser drops wherever
  // they are are left out (a secret "tab\tsep\tsecret" is written "tabsepsecret"): a shorter form
  // is a part the parser dropped or normalized (a leading `?` or `#`, a `../` segment), which could
  // be short enough to blank ordinary words.
  const whole = value.replace(/[\t\n\r]/g, "").length;
  return [...forms].filter((form) => form.length >= whole);
}

/** Characters that every encoding above writes as they are. */
const NEVER_ENCODED = /^[A-Za-z0-9_.-]*$/;

/** `encoded` with the escapes of these characters turned back into the characters. */
function putBack(encoded: string, chars: string): string {
  return encoded.replace(/%[0-9A-F]{2}/g, (escape) => {
    const char = String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    return chars.includes(char) ? char : escape;
  });
}

function urlPart(scheme: string, set: (url: URL) => void): URL {
  const url = new URL(`${scheme}//h/`);
  set(url);
  return url;
}
