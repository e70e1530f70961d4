// @inrupt/solid-client 3 against a pod: containers, datasets, files, reads
// back and deletes, with a fetch that sends the owner's bearer token.
// Usage: node client.mjs <node_modules dir> <pod root URL> <token>
// Prints one JSON line per step; exits 1 at the first step that fails.
import { createRequire } from "node:module";
import path from "node:path";

import { bearerFetch, check, runSteps } from "../steps.mjs";

const [modules, root, token] = process.argv.slice(2);
const sc = createRequire(path.join(modules, "index.js"))("@inrupt/solid-client");

const authFetch = bearerFetch(token);
const opts = { fetch: authFetch };
const FOAF_NAME = "http://xmlns.com/foaf/0.1/name";


async function status(url) {
  return (await authFetch(url)).status;
}

const steps = {
  async createContainerAt() {
    const box = await sc.createContainerAt(`${root}box/`, opts);
    check(sc.getSourceUrl(box) === `${root}box/`, "the container's URL");
    const read = await sc.getSolidDataset(`${root}box/`, opts);
    check(sc.isContainer(read), "box/ reads back as a container");
    return sc.getSourceUrl(box);
  },
  async createContainerInContainer() {
    const inner = await sc.createContainerInContainer(`${root}box/`,
      { ...opts, slugSuggestion: "inner" });
    const url = sc.getSourceUrl(inner);
    check(url.startsWith(`${root}box/`) && url.endsWith("/"), `a container URL: ${url}`);
    check(sc.isContainer(await sc.getSolidDataset(url, opts)), "inner reads back as a container");
    const box = await sc.getSolidDataset(`${root}box/`, opts);
    check(sc.getContainedResourceUrlAll(box).includes(url), "box/ contains it");
    return url;
  },
  async saveSolidDatasetTwice() {
    const url = `${root}box/people`;
    let ann = sc.buildThing(sc.createThing({ name: "ann" })).addStringNoLocale(FOAF_NAME, "Ann").build();
    let ds = await sc.saveSolidDatasetAt(url, sc.setThing(sc.createSolidDataset(), ann), opts);
    ann = sc.getThing(ds, `${url}#ann`);
    ann = sc.setStringNoLocale(ann, FOAF_NAME, "Annie");
    const bob = sc.buildThing(sc.createThing({ name: "bob" })).addStringNoLocale(FOAF_NAME, "Bob").build();
    ds = await sc.saveSolidDatasetAt(url, sc.setThing(sc.setThing(ds, ann), bob), opts); // PATCH
    const read = await sc.getSolidDataset(url, opts);
    const names = sc.getThingAll(read).map((t) => sc.getStringNoLocale(t, FOAF_NAME)).sort();
    check(JSON.stringify(names) === JSON.stringify(["Annie", "Bob"]), `names read back: ${names}`);
    return names;
  },
  async overwriteFile() {
    const bytes = new Uint8Array(Array.from({ length: 1000 }, (_, i) => i % 256));
    await sc.overwriteFile(`${root}box/pic.png`, new Blob([bytes]), { ...opts, contentType: "image/png" });
    const file = await sc.getFile(`${root}box/pic.png`, opts);
    const back = new Uint8Array(await file.arrayBuffer());
    check(back.length === 1000 && back.every((b, i) => b === i % 256), "the bytes read back");
    check(sc.getContentType(file) === "image/png", `content type ${sc.getContentType(file)}`);
    check(sc.isRawData(file), "a file is raw data");
    return back.length;
  },
  async saveFileInContainer() {
    const saved = await sc.saveFileInContainer(`${root}box/`, new Blob(["%PDF-1.4 tiny"]),
      { ...opts, slug: "doc.pdf", contentType: "application/pdf" });
    const url = sc.getSourceUrl(saved);
    const file = await sc.getFile(url, opts);
    check((await file.text()) === "%PDF-1.4 tiny", "the PDF reads back");
    check(sc.getContentType(file) === "application/pdf", "its content type");
    return url;
  },
  async getEffectiveAccess() {
    const info = await sc.getResourceInfo(`${root}box/people`, opts);
    const access = sc.getEffectiveAccess(info);
    check(access.user.read && access.user.write && access.user.append, "the owner's access");
    check(!access.public.read, "no public access");
    return access;
  },
  async deleteFile() {
    await sc.deleteFile(`${root}box/pic.png`, opts);
    check((await status(`${root}box/pic.png`)) === 404, "pic.png is gone");
    return true;
  },
  async deleteAll() {
    const box = await sc.getSolidDataset(`${root}box/`, opts);
    for (const url of sc.getContainedResourceUrlAll(box)) {
      if (url.endsWith("/")) await sc.deleteContainer(url, opts);
      else if (url.endsWith("people")) await sc.deleteSolidDataset(url, opts);
      else await sc.deleteFile(url, opts);
    }
    await sc.deleteContainer(`${root}box/`, opts);
    check((await status(`${root}box/`)) === 404, "box/ is gone");
    return true;
  },
};

await runSteps(steps);
