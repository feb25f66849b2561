// Compile Vega-Lite specs to Vega with the project's pinned vega-lite and list every expression.
//
// stdin: a JSON array of Vega-Lite specs. stdout: {"compiled": n, "expressions": m, "found":
// [[spec index, where, expression], ...]} for every string Vega parses as an expression: signal
// definitions and handlers (init, update, expr), signal references ({"signal": ...}), production
// rules (test), formula and filter transforms (expr). tests/browser/test_hostile_site.py looks for
// input strings among them; inputs must stay data.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

// Resolve vega-lite from NODE_PATH (the project's node_modules), as the site's build does.
const base = (process.env.NODE_PATH || "node_modules").split(":")[0];
const require = createRequire(join(resolve(base), "noop.js"));
const vl = await import(pathToFileURL(require.resolve("vega-lite")).href);

const EXPRESSION_KEYS = new Set(["init", "update", "expr", "signal", "test"]);

function walk(node, where, out) {
  if (Array.isArray(node)) {
    node.forEach((item, i) => walk(item, `${where}[${i}]`, out));
  } else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (EXPRESSION_KEYS.has(key) && typeof value === "string") out.push([`${where}.${key}`, value]);
      else walk(value, `${where}.${key}`, out);
    }
  }
}

const specs = JSON.parse(readFileSync(0, "utf8"));
const found = [];
let expressions = 0;
specs.forEach((spec, index) => {
  const vega = vl.compile(spec).spec;
  const out = [];
  walk(vega, "", out);
  expressions += out.length;
  for (const [where, expr] of out) found.push([index, where, expr]);
});
process.stdout.write(JSON.stringify({ compiled: specs.length, expressions, found }));
