/**
 * The semantic_loop canonical form, computed locally (spec/semantic_loop.md, "Canonical form").
 *
 * The server (shared/loopsense/core/canonical.py) and both SDKs write the same bytes:
 *
 * 1. Object keys: NFC, lowercased, not trimmed; entries sorted by the lowered key in code point
 *    order; keys that collide after lowering all stay, ordered by their canonical value's text.
 * 2. Strings: NFC, trimmed of exactly the Unicode White_Space characters (not `trim()`'s set,
 *    which adds U+FEFF), lowercased.
 * 3. Integers: exact digits; `-0` is `0`.
 * 4. Floats: rounded half away from zero to 2 decimals on the shortest round-trip decimal form
 *    of the double; no exponent, no trailing zeros, no decimal point when integral, zero as `0`.
 * 5. true, false, null as themselves; arrays keep their order.
 * 6. Compact JSON, non-ASCII as itself; only `"`, `\` and U+0000..U+001F escaped.
 *
 * Numbers. JSON text tells integers (`5`) from floats (`5.0`), a JS number does not. So:
 *
 * - `canonicalizeJson(text)` parses the text itself and keeps that distinction: an integer token
 *   keeps its exact digits (however long), any other number token is read as a double and goes
 *   through rule 4 — exactly what the server does with the same text.
 * - `canonicalize(value)` takes JS values: every `number` goes through rule 4 (a `bigint` is an
 *   integer with exact digits). That is the canonical form of what `JSON.stringify(value)` sends:
 *   for any finite number, rule 4 on the double gives the same text as the server's rule 3 or 4
 *   on `JSON.stringify`'s output. Like `JSON.stringify`, `toJSON()` is called, `undefined`,
 *   functions and symbols are dropped from objects and written as `null` in arrays.
 */

import { createHash } from "node:crypto";

/** Nested objects/arrays allowed; the 65th level is refused (as on the server). */
export const MAX_DEPTH = 64;
/** Characters (code points) of an object key, as sent. */
export const MAX_KEY_LENGTH = 1024;
/** Python's default limit on the digits of an int written as text (the server cannot go past it). */
const MAX_INT_DIGITS = 4300;
/** Parsing limit for canonicalizeJson's own parser (deeper content may sit under ignored keys). */
const MAX_PARSE_DEPTH = 1000;

/** The value has no canonical form. `issue` names the limit, never the offending value. */
export class CanonicalError extends Error {
  readonly issue: string;
  constructor(issue: string) {
    super(issue);
    this.name = "CanonicalError";
    this.issue = issue;
  }
}

export interface CanonicalOptions {
  /** Keys dropped at any depth before hashing, matched after NFC and lowercasing. */
  ignoreKeys?: Iterable<string>;
}

// Unicode White_Space (PropList.txt), and nothing else.
const WS = "\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const TRIM = new RegExp(`^[${WS}]+|[${WS}]+$`, "g");
const NON_ASCII = /[^\x00-\x7f]/;
const NEEDS_ESCAPE = /["\\\x00-\x1f]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
};

/** Rule 6: a JSON string with only `"`, `\` and U+0000..U+001F escaped (lowercase hex). */
export function quote(text: string): string {
  return '"' + text.replace(NEEDS_ESCAPE, (c) =>
    SHORT_ESCAPES[c] ?? "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")) + '"';
}

/** Rule 2: NFC, trimmed of White_Space, lowercased. */
export function canonicalString(value: string): string {
  const nfc = NON_ASCII.test(value) ? value.normalize("NFC") : value;
  return nfc.replace(TRIM, "").toLowerCase();
}

/** Rule 1: NFC, lowercased, not trimmed. */
export function canonicalKey(key: string): string {
  return (NON_ASCII.test(key) ? key.normalize("NFC") : key).toLowerCase();
}

/** Rule 3: an integer's exact digits, `-0` as `0`. */
function integerText(value: bigint): string {
  const text = value.toString();
  if (text.length - (value < 0n ? 1 : 0) > MAX_INT_DIGITS) {
    throw new CanonicalError("contains a number that cannot be written out");
  }
  return text;
}

const DECIMAL = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

/**
 * Rule 4 as text: `2.675` -> `2.68`, `5` -> `5`, `-0.001` -> `0`, `1e21` ->
 * `1000000000000000000000`. Rounds the digits of `String(x)` (the shortest round-trip form, the
 * digits Python's `repr` has) with integer arithmetic, half away from zero.
 */
export function canonicalFloat(value: number): string {
  if (!Number.isFinite(value)) throw new CanonicalError("contains a number that is not finite");
  if (value === 0) return "0";
  const match = DECIMAL.exec(String(Math.abs(value)));
  if (!match) throw new CanonicalError("contains a number that cannot be written out");
  const whole = match[1] ?? "";
  const fraction = match[2] ?? "";
  const digits = whole + fraction; // the value is digits * 10^-scale
  const scale = fraction.length - Number(match[3] ?? 0);
  let hundredths: bigint;
  if (scale <= 2) {
    hundredths = BigInt(digits + "0".repeat(2 - scale));
  } else {
    const keep = digits.length - (scale - 2); // digits up to the second decimal
    const kept = keep > 0 ? digits.slice(0, keep) : "0";
    const next = keep >= 0 && keep < digits.length ? digits.charCodeAt(keep) - 48 : 0;
    hundredths = BigInt(kept) + (next >= 5 ? 1n : 0n);
  }
  if (hundredths === 0n) return "0";
  let text = (hundredths / 100n).toString();
  const cents = hundredths % 100n;
  if (cents !== 0n) text += "." + cents.toString().padStart(2, "0").replace(/0$/, "");
  return (value < 0 ? "-" : "") + text;
}

/** Compares two strings by code point (JS `<` compares UTF-16 code units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return rank(x) - rank(y);
  }
  return a.length - b.length;
}

/** Surrogates (astral code points) above U+E000..U+FFFF, the rest unchanged in order. */
function rank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function checkKey(key: string): void {
  if (key.length > MAX_KEY_LENGTH && codePointLength(key) > MAX_KEY_LENGTH) {
    throw new CanonicalError(`contains a key longer than ${MAX_KEY_LENGTH} characters`);
  }
}

/** What JSON.stringify would write for a value: toJSON() called, boxed primitives unboxed. */
function jsonView(value: unknown, key: string): unknown {
  if (value !== null && typeof value === "object") {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value, key);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    return value.valueOf();
  }
  return value;
}

function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

class IntegerToken {
  constructor(readonly value: bigint) {}
}

function write(value: unknown, ignore: ReadonlySet<string>, depth: number): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return quote(canonicalString(value));
  if (typeof value === "number") return canonicalFloat(value);
  if (typeof value === "bigint") return integerText(value);
  if (value instanceof IntegerToken) return integerText(value.value);
  if (typeof value !== "object") throw new CanonicalError("contains a value that is not JSON");
  if (depth >= MAX_DEPTH) throw new CanonicalError(`is nested deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) {
    const items = value.map((item, i) => {
      const viewed = jsonView(item, String(i));
      return isSkipped(viewed) ? "null" : write(viewed, ignore, depth + 1);
    });
    return "[" + items.join(",") + "]";
  }
  const entries: [string, string][] = [];
  for (const key of Object.keys(value)) {
    checkKey(key);
    const lowered = canonicalKey(key);
    if (ignore.has(lowered)) continue;
    const viewed = jsonView((value as Record<string, unknown>)[key], key);
    if (isSkipped(viewed)) continue;
    entries.push([lowered, write(viewed, ignore, depth + 1)]);
  }
  entries.sort((a, b) => compareCodePoints(a[0], b[0]) || compareCodePoints(a[1], b[1]));
  return "{" + entries.map(([k, v]) => quote(k) + ":" + v).join(",") + "}";
}

function ignoreSet(options?: CanonicalOptions): ReadonlySet<string> {
  const keys = new Set<string>();
  for (const key of options?.ignoreKeys ?? []) keys.add(canonicalKey(key));
  return keys;
}

function finish(text: string): string {
  if (LONE_SURROGATE.test(text)) {
    throw new CanonicalError("contains a string that is not valid Unicode");
  }
  return text;
}

/**
 * The canonical text of a JS value (what `JSON.stringify(value)` would send). Every `number` is
 * treated by the float rule (rule 4); a `bigint` keeps its exact digits (rule 3). To tell
 * `5` from `5.0` or keep the digits of integers past 2^53 from JSON text, use canonicalizeJson.
 */
export function canonicalize(value: unknown, options?: CanonicalOptions): string {
  const viewed = jsonView(value, "");
  if (isSkipped(viewed)) throw new CanonicalError("contains a value that is not JSON");
  return finish(write(viewed, ignoreSet(options), 0));
}

/** The canonical text of JSON text, byte for byte what the server computes for it. */
export function canonicalizeJson(text: string, options?: CanonicalOptions): string {
  return finish(write(parseJson(text), ignoreSet(options), 0));
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** SHA-256 of canonicalize(value)'s UTF-8 bytes: 64 lowercase hex digits. */
export function canonicalHash(value: unknown, options?: CanonicalOptions): string {
  return sha256(canonicalize(value, options));
}

/** SHA-256 of canonicalizeJson(text)'s UTF-8 bytes. */
export function canonicalHashJson(text: string, options?: CanonicalOptions): string {
  return sha256(canonicalizeJson(text, options));
}

/**
 * The signature agent.semantic_loop gives a checkpoint with this metadata:
 * `semantic_loop:<first 8 hex digits of canonicalHash(metadata)>`. `undefined` (a checkpoint
 * without metadata) hashes as `{}`, as on the server.
 */
export function semanticSignature(metadata: unknown, options?: CanonicalOptions): string {
  return "semantic_loop:" + canonicalHash(metadata === undefined ? {} : metadata, options).slice(0, 8);
}

/** semanticSignature of metadata given as JSON text (integers and floats told apart). */
export function semanticSignatureJson(text: string, options?: CanonicalOptions): string {
  return "semantic_loop:" + canonicalHashJson(text, options).slice(0, 8);
}

// ---- a JSON parser that keeps integer tokens exact ---------------------------------------------

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const ESCAPES: Record<string, string> = {
  '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t",
};

/**
 * Strict JSON (RFC 8259) to JS values, with integer tokens as IntegerToken (exact digits) and
 * other numbers as doubles. Duplicate keys: the last one wins, as in Python's json.loads.
 */
function parseJson(text: string): unknown {
  let pos = 0;
  const fail = (what: string): never => {
    throw new CanonicalError(`is not valid JSON (${what} at position ${pos})`);
  };
  const skipSpace = (): void => {
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      pos++;
    }
  };
  const parseString = (): string => {
    pos++; // opening quote
    let out = "";
    let start = pos;
    for (;;) {
      if (pos >= text.length) fail("unterminated string");
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(start, pos);
        pos++;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      if (c === 0x5c) {
        out += text.slice(start, pos);
        const e = text[pos + 1];
        if (e === "u") {
          const hex = text.slice(pos + 2, pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          pos += 6;
        } else {
          const mapped = e === undefined ? undefined : ESCAPES[e];
          if (mapped === undefined) fail("bad escape");
          out += mapped;
          pos += 2;
        }
        start = pos;
      } else {
        pos++;
      }
    }
  };
  const parseValue = (depth: number): unknown => {
    if (depth > MAX_PARSE_DEPTH) throw new CanonicalError("is nested too deeply");
    skipSpace();
    const c = text[pos];
    if (c === "{") {
      pos++;
      const object: Record<string, unknown> = Object.create(null);
      skipSpace();
      if (text[pos] === "}") {
        pos++;
        return object;
      }
      for (;;) {
        skipSpace();
        if (text[pos] !== '"') fail("expected a key");
        const key = parseString();
        skipSpace();
        if (text[pos] !== ":") fail("expected ':'");
        pos++;
        object[key] = parseValue(depth + 1);
        skipSpace();
        if (text[pos] === ",") {
          pos++;
        } else if (text[pos] === "}") {
          pos++;
          return object;
        } else {
          fail("expected ',' or '}'");
        }
      }
    }
    if (c === "[") {
      pos++;
      const array: unknown[] = [];
      skipSpace();
      if (text[pos] === "]") {
        pos++;
        return array;
      }
      for (;;) {
        array.push(parseValue(depth + 1));
        skipSpace();
        if (text[pos] === ",") {
          pos++;
        } else if (text[pos] === "]") {
          pos++;
          return array;
        } else {
          fail("expected ',' or ']'");
        }
      }
    }
    if (c === '"') return parseString();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return value;
      }
    }
    NUMBER.lastIndex = pos;
    const number = NUMBER.exec(text);
    if (!number) return fail("unexpected character");
    pos = NUMBER.lastIndex;
    const token = number[0];
    if (number[1] === undefined && number[2] === undefined) return new IntegerToken(BigInt(token));
    return Number(token); // a double, as Python's float(); rule 4 refuses a non-finite one
  };
  const value = parseValue(0);
  skipSpace();
  if (pos !== text.length) fail("trailing data");
  return value;
}
