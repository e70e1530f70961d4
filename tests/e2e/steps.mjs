// What the Node client scripts share: a fetch that sends the owner's bearer
// token, a check, and the step runner (one JSON line per step; exit 1 at the
// first step that fails).

export function bearerFetch(token) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : {}));
    headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

export async function runSteps(steps) {
  for (const [name, run] of Object.entries(steps)) {
    try {
      console.log(JSON.stringify({ step: name, ok: true, result: await run() }));
    } catch (e) {
      console.log(JSON.stringify({ step: name, ok: false, error: String(e.stack ?? e) }));
      process.exit(1);
    }
  }
}
