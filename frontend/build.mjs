// Bundle the front end's ES modules into the scripts the packages serve, with esbuild (pinned in
// package-lock.json). The bundles are committed: Colab and pip users have no npm, and the wheel
// ships them. `node frontend/build.mjs` writes them; `--check` only compares a fresh build with
// the committed files and exits 1 if any differs (tests/test_frontend_bundle.py runs it).
import { readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

// entry -> bundle; "iife": a classic script inlined in a figure's HTML (nothing leaks into the
// page); "esm": the anywidget entry, which exports render
export const BUNDLES = [
  { entry: "mha/static/src/main.js", out: "mha/static/live.js", format: "iife" },
  { entry: "mha/static/src/widget.js", out: "mha/static/widget.js", format: "esm" },
  { entry: "mha_book/static/src/main.js", out: "mha_book/static/book.js", format: "iife" },
];

async function build(b) {
  const src = dirname(b.entry);
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [b.entry],
    bundle: true,
    format: b.format,
    target: "es2017",
    minify: false,
    legalComments: "none",
    charset: "ascii",
    write: false,
    logLevel: "warning",
    banner: {
      js:
        `// Built from ${src}/ by frontend/build.mjs (esbuild ${esbuild.version}); do not edit: ` +
        "run `make frontend`.",
    },
  });
  return result.outputFiles[0].text;
}

const check = process.argv.includes("--check");
let stale = [];
for (const b of BUNDLES) {
  const text = await build(b);
  const path = join(ROOT, b.out);
  if (check) {
    let old = null;
    try {
      old = readFileSync(path, "utf8");
    } catch {
      old = null;
    }
    if (old !== text) stale.push(relative(ROOT, path));
  } else {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path, text);
    console.log(`${b.out}: ${text.length.toLocaleString("en")} bytes`);
  }
}
if (stale.length) {
  console.error(`stale bundles (the sources changed; run \`make frontend\`): ${stale.join(", ")}`);
  process.exit(1);
}
