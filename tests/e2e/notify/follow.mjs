// @inrupt/solid-client-notifications 3 follows a Podviews view over
// WebSocketChannel2023: it discovers the notification gateway through the
// server's storage description, subscribes to the view's results (the
// topic) with a fetch that sends the consumer's bearer token, and receives
// a notification per delta while this script writes to the pod.
// Usage: node follow.mjs <node_modules dir> <topic> <consumer token> <resource URL>
//                        <owner token> <JSON list of Turtle bodies>
// Prints one JSON line per step; exits 1 at the first step that fails.
import { createRequire } from "node:module";
import path from "node:path";

import { bearerFetch, check, runSteps } from "../steps.mjs";

const [modules, topic, consumerToken, resource, ownerToken, bodies] = process.argv.slice(2);
const { WebsocketNotification } =
  createRequire(path.join(modules, "index.js"))("@inrupt/solid-client-notifications");

const received = [];
let wake = () => {};
const socket = new WebsocketNotification(topic, { fetch: bearerFetch(consumerToken) });
socket.on("message", (m) => { received.push(m); wake(); });
socket.on("error", (e) => { console.error("websocket error", e?.message ?? e); });

function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function until(state) {
  while (!received.some((m) => Number(m.state) >= state)) {
    await new Promise((resolve) => { wake = resolve; });
  }
}

const steps = {
  async connect() {
    const connected = new Promise((resolve) => socket.once("connected", resolve));
    await socket.connect();
    await within(30000, connected, "connection");
    return socket.gateway;
  },
};
JSON.parse(bodies).forEach((body, i) => {
  steps[`write${i + 1}`] = async () => {
    const r = await bearerFetch(ownerToken)(resource, {
      method: "PUT", headers: { "content-type": "text/turtle" }, body });
    check(r.ok, `the write answered ${r.status}`);
    const seq = Number(r.headers.get("podviews-seq"));
    await within(60000, until(seq), `notification of seq ${seq}`);
    return { seq, notifications: received.splice(0) };
  };
});
steps.disconnect = async () => {
  const closed = new Promise((resolve) => socket.once("closed", resolve));
  socket.disconnect();
  await within(30000, closed, "close");
  return received.length;
};

await runSteps(steps);
