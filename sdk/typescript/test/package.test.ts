/**
 * The package both ways: `import` resolves dist/esm, `require` resolves dist/cjs (self-reference
 * through package.json "exports"), and the two builds behave alike; the same for the subpath
 * `@loopsense/sdk/vercel-ai`. The packed tarball installed
 * into an ESM and a CommonJS consumer: tests/sdk/test_typescript_package.py.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, test } from "node:test";

import * as esm from "@loopsense/sdk";
import * as vercelAi from "@loopsense/sdk/vercel-ai";

const require = createRequire(import.meta.url);

describe("package: ESM and CommonJS", () => {
  test("require() gives the CommonJS build, with the same exports", () => {
    const cjs = require("@loopsense/sdk") as typeof esm;
    assert.match(require.resolve("@loopsense/sdk"), /dist[\\/]cjs[\\/]index\.js$/);
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
    assert.notEqual(cjs.Client, esm.Client); // two builds (use one of them per program)
    assert.equal(cjs.semanticSignature({ userId: 7, Plan: "Retry Search" }), "semantic_loop:97a932d8");
    const error = cjs.errorFromResponse(429, JSON.stringify({ error: { code: "QUOTA_EXCEEDED", retryable: true } }),
      new Headers());
    assert.ok(error instanceof cjs.QuotaExceededError && error instanceof cjs.LoopsenseError);
  });

  test("the vercel-ai subpath both ways, importing no ai package", () => {
    const cjs = require("@loopsense/sdk/vercel-ai") as typeof vercelAi;
    assert.match(require.resolve("@loopsense/sdk/vercel-ai"), /dist[\\/]cjs[\\/]adapters[\\/]vercelAi\.js$/);
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(vercelAi).sort());
    assert.equal(cjs.PREFIX, "[loopsense] ");
    const loaded = Object.keys(require.cache).filter((path) => /node_modules[\\/]ai\d?[\\/]/.test(path));
    assert.deepEqual(loaded, []);
  });
});
