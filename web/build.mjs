// Builds the viewer front end into ../src/kinetoscope/viewer/static (committed), or the unit tests
// into dist-tests/ with --tests. build-info.json records a hash of every source file so a Python
// test can tell when the committed bundle is stale without Node.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

const here = new URL(".", import.meta.url).pathname;
const out = join(here, "..", "src", "kinetoscope", "viewer", "static");

export function sourceHash() {
  const sources = readdirSync(join(here, "src"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
    .map((e) => relative(here, join(e.parentPath, e.name)).split(sep).join("/"));
  const files = ["build.mjs", "package.json", "tsconfig.json", ...sources];
  const hash = createHash("sha256");
  for (const file of files.sort()) {
    hash.update(file + "\0" + readFileSync(join(here, file), "utf8").replace(/\r\n/g, "\n") + "\0");
  }
  return hash.digest("hex");
}

if (process.argv.includes("--tests")) {
  rmSync(join(here, "dist-tests"), { recursive: true, force: true });
  const tests = readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.ts"));
  await build({
    entryPoints: tests.map((f) => join(here, "test", f)), outdir: join(here, "dist-tests"), bundle: true,
    platform: "node", format: "esm", target: "node20", outExtension: { ".js": ".mjs" }, logLevel: "warning",
  });
} else {
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(here, "src", "main.ts")], outfile: join(out, "app.js"), bundle: true, minify: true,
    format: "esm", target: "chrome110", legalComments: "none", logLevel: "warning",
  });
  await build({
    entryPoints: [join(here, "src", "report.ts")], outfile: join(out, "report.js"), bundle: true, minify: true,
    format: "iife", target: "chrome110", legalComments: "none", logLevel: "warning",
  });
  copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
  copyFileSync(join(here, "src", "style.css"), join(out, "style.css"));
  writeFileSync(join(out, "build-info.json"), JSON.stringify({ source_sha256: sourceHash() }, null, 1) + "\n");
}
