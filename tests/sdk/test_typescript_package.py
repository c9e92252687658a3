"""The TypeScript SDK as a user gets it: `npm pack`, then installed into new projects.

- Packing a checkout that was never built still ships dist/ (`prepare` builds it).
- The package holds dist/, README.md and package.json only: no .tsbuildinfo, no source maps
  (they would point at src/, which is not shipped).
- A CommonJS project (`npm init -y`'s default) can `require()` it and an ESM project `import`
  it, on this machine's Node; each type-checks against the .d.ts of its own build, with
  @types/node (the optional peer the .d.ts needs) and nothing else.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.sdk.npm import NODE, NPM, PACKAGE, install_and_build, run

pytestmark = pytest.mark.skipif(NPM is None or NODE is None, reason="npm is not installed")

SHIPPED_TOP = {"README.md", "package.json", "LICENSE"}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`npm pack` of a copy of the package without dist/ (its node_modules linked)."""
    assert NPM is not None
    install_and_build()  # node_modules (typescript) for the copy to build with
    copy = tmp_path_factory.mktemp("checkout") / "typescript"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("node_modules", "dist", "build"))
    (copy / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)
    out = tmp_path_factory.mktemp("packed")
    done = run(NPM, "pack", "--json", "--pack-destination", str(out), cwd=copy)
    return out / json.loads(done.stdout)[0]["filename"]


def test_packing_an_unbuilt_checkout_builds_dist(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        names = {member.name.removeprefix("package/") for member in archive.getmembers()}
    for entry in ("dist/esm/index.js", "dist/esm/index.d.ts", "dist/cjs/index.js",
                  "dist/cjs/index.d.ts", "dist/cjs/package.json"):
        assert entry in names, sorted(names)


def test_the_package_ships_dist_readme_and_package_json_only(tarball: Path) -> None:
    assert NPM is not None  # the tarball fixture built dist/ here: no need to build it again
    done = run(NPM, "pack", "--dry-run", "--json", "--ignore-scripts")
    files = [entry["path"] for entry in json.loads(done.stdout)[0]["files"]]
    assert {"README.md", "package.json", "dist/esm/index.js", "dist/cjs/index.js"} <= set(files)
    strays = [f for f in files if not f.startswith("dist/") and f not in SHIPPED_TOP]
    assert not strays
    assert not [f for f in files if f.endswith((".tsbuildinfo", ".map"))]
    for name in files:  # nothing in what ships points at a file that does not
        if name.endswith(".js"):
            assert "sourceMappingURL" not in (PACKAGE / name).read_text(encoding="utf-8"), name


def test_the_package_declares_the_types_its_d_ts_use(tarball: Path) -> None:
    manifest = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    dist = PACKAGE / "dist"
    declarations = "".join(p.read_text(encoding="utf-8") for p in dist.rglob("*.d.ts"))
    if 'reference types="node"' in declarations:
        assert "@types/node" in manifest.get("peerDependencies", {})
    entries = [e for name, e in manifest["exports"].items() if name != "./package.json"]
    assert len(entries) >= 2  # "." and the "./vercel-ai" adapter
    for entry in entries:
        for condition in ("import", "require"):
            target = entry[condition]
            assert (PACKAGE / target["types"]).is_file() and (PACKAGE / target["default"]).is_file()


ESM_CONSUMER = """
import { Client, LoopsenseError, ValidationError, semanticSignature } from "@loopsense/sdk";
const client = new Client({ apiKey: "k", baseUrl: "http://127.0.0.1:9", maxAttempts: 1 });
console.log(semanticSignature({ userId: 7, Plan: "Retry Search" }));
try {
  await client.execute("agent.loop_detect", { events: [{ action: "a" }, { action: "a" }] });
} catch (error) {
  const ours = error instanceof LoopsenseError;
  console.log(ours, error instanceof ValidationError, ours ? error.code : error);
}
"""

CJS_CONSUMER = """
import sdk = require("@loopsense/sdk");  // TypeScript's spelling of require() (emitted as is)
const client = new sdk.Client({ apiKey: "k", baseUrl: "http://127.0.0.1:9", maxAttempts: 1 });
console.log(sdk.semanticSignature({ userId: 7, Plan: "Retry Search" }));
client.execute("agent.loop_detect", { events: [{ action: "a" }, { action: "a" }] }).catch(
  (error: unknown) => {
    const ours = error instanceof sdk.LoopsenseError;
    console.log(ours, error instanceof sdk.ValidationError, ours ? error.code : error);
  });
"""

# Port 9 (discard) on loopback: nothing listens, so the call fails fast as a CONNECTION_ERROR.
EXPECTED = "semantic_loop:97a932d8\ntrue false CONNECTION_ERROR\n"


@pytest.mark.parametrize(("kind", "source"), [("module", ESM_CONSUMER), ("commonjs", CJS_CONSUMER)])
def test_a_new_project_imports_or_requires_the_packed_package(
        kind: str, source: str, tarball: Path, tmp_path: Path) -> None:
    assert NPM is not None and NODE is not None
    project = tmp_path / kind
    project.mkdir()
    run(NPM, "init", "-y", cwd=project)  # CommonJS, as npm makes it
    if kind == "module":
        manifest = json.loads((project / "package.json").read_text(encoding="utf-8"))
        (project / "package.json").write_text(json.dumps({**manifest, "type": "module"}))
    run(NPM, "install", "--offline", "--no-audit", "--no-fund", str(tarball), cwd=project)
    assert not (project / "node_modules" / "@types").exists()  # the peer is optional
    # Type-check as the user's project would (with @types/node), then run the emitted file.
    (project / "node_modules" / "@types").mkdir()
    (project / "node_modules" / "@types" / "node").symlink_to(
        PACKAGE / "node_modules" / "@types" / "node", target_is_directory=True)
    (project / "index.ts").write_text(source, encoding="utf-8")
    (project / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022",
        "strict": True, "types": ["node"], "outDir": "out"}, "files": ["index.ts"]}))
    tsc = PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"
    run(NODE, str(tsc), "-p", "tsconfig.json", cwd=project)
    emitted = (project / "out" / "index.js").read_text(encoding="utf-8")
    assert ('require("@loopsense/sdk")' in emitted) == (kind == "commonjs")
    done = run(NODE, "out/index.js", cwd=project, timeout=60)
    assert done.stdout == EXPECTED, done.stdout + done.stderr
