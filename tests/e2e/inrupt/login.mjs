// Solid-OIDC with @inrupt/solid-client-authn-node: two WebIDs of a Community
// Solid Server 7 (the identity provider) log in with client credentials and,
// with session.fetch (DPoP-bound tokens), use a pod on our server: Alice, its
// owner, makes a container, a dataset and a file, reads her effective access
// and grants Bob Read on the dataset (universalAccess, which writes an ACL
// document); Bob then reads exactly that.
// Usage: node login.mjs <node_modules> <issuer> <pod root URL> <alice id> <alice secret>
//                       <bob id> <bob secret>
// Prints one JSON line per step; exits 1 at the first step that fails.
import { createRequire } from "node:module";
import path from "node:path";

import { check, runSteps } from "../steps.mjs";

const [modules, issuer, root, aliceId, aliceSecret, bobId, bobSecret] = process.argv.slice(2);
const load = createRequire(path.join(modules, "index.js"));
const sc = load("@inrupt/solid-client");
const { Session } = load("@inrupt/solid-client-authn-node");

const FOAF_NAME = "http://xmlns.com/foaf/0.1/name";
const people = `${root}shared/people`;
const secret = `${root}shared/secret.txt`;
const alice = new Session();
const bob = new Session();

async function login(session, clientId, clientSecret) {
  await session.login({ clientId, clientSecret, oidcIssuer: issuer, tokenType: "DPoP" });
  check(session.info.isLoggedIn, "logged in");
  return session.info.webId;
}

async function refused(run) {
  try {
    await run();
  } catch (e) {
    return e.statusCode ?? e.response?.status ?? String(e);
  }
  throw new Error("check failed: the request succeeded");
}

const steps = {
  async aliceLogsIn() {
    return login(alice, aliceId, aliceSecret);
  },
  async createContainerAt() {
    const c = await sc.createContainerAt(`${root}shared/`, { fetch: alice.fetch });
    check(sc.isContainer(await sc.getSolidDataset(`${root}shared/`, { fetch: alice.fetch })),
      "shared/ reads back as a container");
    return sc.getSourceUrl(c);
  },
  async saveSolidDatasetAt() {
    const ann = sc.buildThing(sc.createThing({ name: "ann" })).addStringNoLocale(FOAF_NAME, "Ann").build();
    await sc.saveSolidDatasetAt(people, sc.setThing(sc.createSolidDataset(), ann), { fetch: alice.fetch });
    const read = await sc.getSolidDataset(people, { fetch: alice.fetch });
    return sc.getThingAll(read).map((t) => sc.getStringNoLocale(t, FOAF_NAME));
  },
  async overwriteFile() {
    await sc.overwriteFile(secret, new Blob(["for Alice only"]), { fetch: alice.fetch, contentType: "text/plain" });
    const file = await sc.getFile(secret, { fetch: alice.fetch });
    return file.text();
  },
  async aliceEffectiveAccess() {
    const access = sc.getEffectiveAccess(await sc.getResourceInfo(people, { fetch: alice.fetch }));
    check(access.user.read && access.user.write && access.user.append, "the owner's access");
    check(!access.public.read, "no public access");
    return access;
  },
  async grantBobRead() {
    const bobWebId = (await login(bob, bobId, bobSecret));
    await bob.logout();
    const granted = await sc.universalAccess.setAgentAccess(people, bobWebId, { read: true },
      { fetch: alice.fetch });
    check(granted !== null, "the grant was written");
    const back = await sc.universalAccess.getAgentAccess(people, bobWebId, { fetch: alice.fetch });
    check(back.read && !back.write && !back.append, `read back: ${JSON.stringify(back)}`);
    return back;
  },
  async bobLogsIn() {
    return login(bob, bobId, bobSecret);
  },
  async bobReadsWhatWasGranted() {
    const read = await sc.getSolidDataset(people, { fetch: bob.fetch });
    return sc.getThingAll(read).map((t) => sc.getStringNoLocale(t, FOAF_NAME));
  },
  async bobEffectiveAccess() {
    const access = sc.getEffectiveAccess(await sc.getResourceInfo(people, { fetch: bob.fetch }));
    check(access.user.read && !access.user.write && !access.user.append, JSON.stringify(access));
    return access.user;
  },
  async bobReadsNothingElse() {
    return {
      write: await refused(() => sc.saveSolidDatasetAt(people,
        sc.setThing(sc.createSolidDataset(), sc.createThing({ name: "x" })), { fetch: bob.fetch })),
      file: (await bob.fetch(secret)).status,
      container: (await bob.fetch(`${root}shared/`)).status,
      anonymous: (await fetch(people)).status,
    };
  },
  async logout() {
    await alice.logout();
    await bob.logout();
    return true;
  },
};

await runSteps(steps);
