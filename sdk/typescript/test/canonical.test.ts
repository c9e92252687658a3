/**
 * The canonical form against the repository's spec/vectors/canonical.json (byte for byte), against cases
 * the server's own implementation wrote (LOOPSENSE_EXTRA_VECTORS, set by the pytest wrapper), and
 * the JS-value rules (canonicalize, semanticSignature).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  CanonicalError, canonicalFloat, canonicalHash, canonicalHashJson, canonicalize, canonicalizeJson,
  compareCodePoints, semanticSignature, semanticSignatureJson,
} from "@loopsense/sdk";

// build/test/canonical.test.js -> the package directory (sdk/typescript)
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const VECTORS = process.env.LOOPSENSE_VECTORS
  ?? resolve(PACKAGE_DIR, "..", "..", "spec", "vectors", "canonical.json");

interface Vector { name: string; input: string; canonical: string; sha256?: string }

function load(path: string): Vector[] {
  if (!existsSync(path)) {
    throw new Error(`canonical vectors not found at ${path} (set LOOPSENSE_VECTORS)`);
  }
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { vectors: Vector[] };
  assert.ok(Array.isArray(parsed.vectors) && parsed.vectors.length > 0, `no vectors in ${path}`);
  return parsed.vectors;
}

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

describe("spec vectors (canonical.json)", () => {
  // A throw in a describe callback is reported "not ok" yet not counted in the summary's "fail":
  // a missing file fails as a test instead.
  let vectors: Vector[] = [];
  try {
    vectors = load(VECTORS);
  } catch (error) {
    test("the vector file loads", () => { throw error; });
  }
  test(`the file has the vectors (${vectors.length})`, () => {
    assert.ok(vectors.length >= 31);
  });
  for (const vector of vectors) {
    test(vector.name, () => {
      assert.equal(canonicalizeJson(vector.input), vector.canonical);
      assert.equal(sha256(vector.canonical), vector.sha256);
      assert.equal(canonicalHashJson(vector.input), vector.sha256);
    });
  }
  test("semantic signature of the spec example", () => {
    assert.equal(semanticSignatureJson('{"userId": 7, "Plan": "  Retry Search  "}'),
      "semantic_loop:97a932d8");
  });
});

describe("cases written by the server's canonical.py (LOOPSENSE_EXTRA_VECTORS)", () => {
  const path = process.env.LOOPSENSE_EXTRA_VECTORS;
  test("every case, byte for byte", { skip: path ? false : "LOOPSENSE_EXTRA_VECTORS not set" }, () => {
    const cases = load(path as string);
    const failures: string[] = [];
    for (const c of cases) {
      let got: string;
      try {
        got = canonicalizeJson(c.input);
      } catch (error) {
        got = `<${(error as Error).message}>`;
      }
      if (got !== c.canonical) failures.push(`${c.name}: ${c.input} -> ${got}, want ${c.canonical}`);
    }
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} of ${cases.length} differ`);
  });
});

describe("canonicalize(value): JS values, every number by the float rule", () => {
  test("the spec's two spellings of one state", () => {
    const a = canonicalize({ userId: 7, Plan: "  Retry Search  " });
    const b = canonicalize({ USERID: 7.0, plan: "retry search" });
    assert.equal(a, '{"plan":"retry search","userid":7}');
    assert.equal(a, b);
    assert.equal(semanticSignature({ userId: 7, Plan: "  Retry Search  " }), "semantic_loop:97a932d8");
    assert.equal(canonicalHash({ userId: 7 }), sha256('{"userid":7}'));
  });

  test("numbers: rounding, exponents, big doubles, -0", () => {
    assert.equal(canonicalize(2.675), "2.68");
    assert.equal(canonicalize(1.005), "1.01");
    assert.equal(canonicalize(-2.345), "-2.35");
    assert.equal(canonicalize(4.999), "5");
    assert.equal(canonicalize(-0.001), "0");
    assert.equal(canonicalize(-0), "0");
    assert.equal(canonicalize(1e21), "1000000000000000000000");
    assert.equal(canonicalize(1.5e-3), "0");
    assert.equal(canonicalize(0.005), "0.01");
    assert.equal(canonicalize(0.0049), "0");
    assert.equal(canonicalize(123456789.125), "123456789.13");
    // 2^60 as a double: the digits JSON.stringify sends, which the server keeps as an integer
    assert.equal(canonicalize(2 ** 60), JSON.stringify(2 ** 60));
    assert.equal(canonicalize(Number.MAX_VALUE), "17976931348623157" + "0".repeat(292));
    assert.equal(canonicalize(5e-324), "0");
  });

  test("canonicalize(n) equals canonicalizeJson(JSON.stringify(n)) for many doubles", () => {
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 5000; i++) {
      const magnitude = 10 ** Math.floor(random() * 40 - 15);
      const n = (random() - 0.5) * magnitude;
      assert.equal(canonicalize({ n }), canonicalizeJson(JSON.stringify({ n })), String(n));
    }
  });

  test("bigint keeps exact digits; JSON text keeps integers exact too", () => {
    assert.equal(canonicalize(12345678901234567890123n), "12345678901234567890123");
    assert.equal(canonicalizeJson("12345678901234567890123"), "12345678901234567890123");
    assert.equal(canonicalizeJson("-0"), "0");
    assert.equal(canonicalizeJson("5.0"), "5");
    assert.throws(() => canonicalize(10n ** 4300n), CanonicalError);
  });

  test("like JSON.stringify: toJSON, undefined dropped in objects, null in arrays", () => {
    assert.equal(canonicalize({ a: undefined, b: () => 1, c: 1 }), '{"c":1}');
    assert.equal(canonicalize([undefined, () => 1]), "[null,null]");
    assert.equal(canonicalize({ at: new Date(0) }), '{"at":"1970-01-01t00:00:00.000z"}');
    assert.equal(canonicalize(new String("  X ")), '"x"');
    assert.equal(semanticSignature(undefined), semanticSignature({})); // no metadata hashes as {}
  });

  test("strings: White_Space trimmed, not U+FEFF; NFC; escapes", () => {
    assert.equal(canonicalize("\u00a0\u2003Hello\u3000"), '"hello"');
    assert.equal(canonicalize("\u001fx\ufeff"), '"\\u001fx\ufeff"');
    assert.equal(canonicalize("Cafe\u0301"), '"caf\u00e9"');
    assert.equal(canonicalize("a\u007fb\u0085"), '"a\u007fb"');
    assert.equal(canonicalize("\b\f\n\r\t\u0000"), '"\\b\\f\\n\\r\\t\\u0000"');
  });

  test("keys: lowered, sorted by code point (not UTF-16), collisions ordered by value", () => {
    assert.equal(canonicalize({ "\ud83d\ude00": 1, "\uffff": 2, a: 3 }), '{"a":3,"\uffff":2,"\ud83d\ude00":1}');
    assert.equal(canonicalize({ dup: 2, DUP: 1 }), '{"dup":1,"dup":2}');
    assert.equal(canonicalize({ " Id": 1 }), '{" id":1}');
    assert.ok(compareCodePoints("\ud83d\ude00", "\uffff") > 0);
    assert.ok(compareCodePoints("a", "ab") < 0);
  });

  test("ignoreKeys: matched after lowering, at any depth", () => {
    const options = { ignoreKeys: ["messageId"] };
    assert.equal(canonicalize({ MessageID: "x", a: { messageid: 1, b: 2 } }, options), '{"a":{"b":2}}');
    assert.equal(semanticSignature({ q: 1, messageId: "a" }, options), semanticSignature({ q: 1 }));
  });

  test("limits and refusals name the limit, never the value", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 64; i++) deep = [deep];
    assert.equal(canonicalize(deep).length, 129); // 64 levels are fine
    assert.throws(() => canonicalize([deep]), { name: "CanonicalError", message: "is nested deeper than 64 levels" });
    assert.throws(() => canonicalize({ x: NaN }), /not finite/);
    assert.throws(() => canonicalize({ x: Infinity }), /not finite/);
    assert.throws(() => canonicalizeJson('{"x": 1e400}'), /not finite/);
    assert.throws(() => canonicalize("\ud800"), /not valid Unicode/);
    assert.throws(() => canonicalize({ ["k".repeat(1025)]: 1 }), /longer than 1024/);
    assert.equal(canonicalize({ ["\ud83d\ude00".repeat(1024)]: 1 }).length, 2 * 1024 + 6);
    assert.throws(() => canonicalize(Symbol("s")), /not JSON/);
    for (const bad of ["{", "[1,]", "01", "NaN", '{"a" 1}', '"\u0001"', "1 2", "'a'"]) {
      assert.throws(() => canonicalizeJson(bad), CanonicalError, bad);
    }
  });

  test("canonicalFloat refuses non-finite", () => {
    assert.throws(() => canonicalFloat(NaN), CanonicalError);
  });
});
