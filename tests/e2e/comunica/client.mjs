// Comunica (@comunica/query-sparql 4) against a pod: a query over a
// resource, an update of it (PATCH) and an update that creates a new
// resource (Comunica finds how from the 404's Allow/Accept-Put), with a
// fetch that sends the owner's bearer token.
// Usage: node client.mjs <node_modules dir> <pod root URL> <token>
// Prints one JSON line per step; exits 1 at the first step that fails.
import { createRequire } from "node:module";
import path from "node:path";

import { bearerFetch, check, runSteps } from "../steps.mjs";

const [modules, root, token] = process.argv.slice(2);
const { QueryEngine } = createRequire(path.join(modules, "index.js"))("@comunica/query-sparql");

const authFetch = bearerFetch(token);
const engine = new QueryEngine();
const PREFIX = "PREFIX foaf: <http://xmlns.com/foaf/0.1/>\n";

async function names(source) {
  await engine.invalidateHttpCache();
  const bindings = await (await engine.queryBindings(
    `${PREFIX}SELECT ?name WHERE { ?p foaf:name ?name }`,
    { sources: [source], fetch: authFetch, lenient: false })).toArray();
  return bindings.map((b) => b.get("name").value).sort();
}


const steps = {
  async query() {
    const got = await names(`${root}people`);
    check(JSON.stringify(got) === JSON.stringify(["Ann", "Bob"]), `names: ${got}`);
    return got;
  },
  async update() {
    await engine.queryVoid(`${PREFIX}INSERT DATA { <${root}people#c> foaf:name "Cy" }`,
      { sources: [`${root}people`], destination: `${root}people`, fetch: authFetch });
    const got = await names(`${root}people`);
    check(JSON.stringify(got) === JSON.stringify(["Ann", "Bob", "Cy"]), `names: ${got}`);
    return got;
  },
  async create() {
    await engine.queryVoid(`${PREFIX}INSERT DATA { <${root}made/new#d> foaf:name "Dee" }`,
      { sources: [`${root}made/new`], destination: `${root}made/new`, fetch: authFetch });
    const got = await names(`${root}made/new`);
    check(JSON.stringify(got) === JSON.stringify(["Dee"]), `names: ${got}`);
    return got;
  },
  async deleteWhere() {
    await engine.queryVoid(`${PREFIX}DELETE WHERE { ?p foaf:name "Bob" }`,
      { sources: [`${root}people`], destination: `${root}people`, fetch: authFetch });
    const got = await names(`${root}people`);
    check(JSON.stringify(got) === JSON.stringify(["Ann", "Cy"]), `names: ${got}`);
    return got;
  },
};

await runSteps(steps);
