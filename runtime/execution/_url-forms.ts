/**
 * The forms `value` takes once put into a URL (docs/security.md, "Masked by value"): each way a
 * handler commonly encodes it, and each with lower-case hex too (`%c3%a4`, as some libraries
 * write it). Made by the platform's own URL and encoders, so that they are what this runtime
 * writes: Bun's WHATWG path encodes `^`, Node's does not.
 */
export function urlEncodedForms(value: string): string[] {
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
  // The WHATWG URL's percent-encode sets, as `new URL(…)` and its setters write a part: the
  // query of a special scheme (`'` encoded) and of another, the path, the userinfo, the fragment.
  add(() => urlPart("https:", (url) => (url.search = value)).search.slice(1));
  add(() => urlPart("x-docket:", (url) => (url.search = value)).search.slice(1));
  add(() => urlPart("https:", (url) => (url.pathname = `/${value}`)).pathname.slice(1));
  add(() => urlPart("https:", (url) => (url.username = value)).username);
  add(() => urlPart("https:", (url) => (url.hash = value)).hash.slice(1));
  for (const form of [...forms]) forms.add(form.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
  // An encoding only lengthens: a shorter form is a part the URL parser dropped or normalized (a
  // leading `?` or `#`, a `../` segment, a tab), which could be short enough to blank ordinary words.
  return [...forms].filter((form) => form.length >= value.length);
}

function urlPart(scheme: string, set: (url: URL) => void): URL {
  const url = new URL(`${scheme}//h/`);
  set(url);
  return url;
}
