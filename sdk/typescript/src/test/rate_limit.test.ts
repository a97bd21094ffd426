/**
 * A 429 surfaces as a RateLimitedError with the server's Retry-After. No server needed: a fetch
 * that answers what `mnemos serve` answers over its budget.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Mnemos, MnemosError, RateLimitedError, type Problem } from "../index.js";

const problem: Problem = {
  type: "urn:mnemos:problem:too-many-requests",
  title: "Too Many Requests",
  status: 429,
  detail: "this key is over its write budget (100/s, bursts of 200, per server process): retry after 7 s",
  instance: "/v1/agents/eve/sessions/s1/messages",
};

function answering(status: number, headers: Record<string, string>): typeof fetch {
  return async () =>
    new Response(JSON.stringify({ ...problem, status }), {
      status,
      headers: { "Content-Type": "application/problem+json", ...headers },
    });
}

test("a 429 is a RateLimitedError carrying Retry-After", async () => {
  const mnemos = new Mnemos({
    baseUrl: "http://mnemos.test",
    apiKey: "mk_x_y",
    fetch: answering(429, { "Retry-After": "7", RateLimit: '"write";r=0;t=7' }),
  });
  await assert.rejects(mnemos.recordMessages("eve", "s1", []), (e: unknown) => {
    assert.ok(e instanceof RateLimitedError);
    assert.ok(e instanceof MnemosError); // code that catches every API error still catches it
    assert.equal(e.status, 429);
    assert.equal(e.retryAfter, 7);
    assert.equal(e.problem.type, "urn:mnemos:problem:too-many-requests");
    return true;
  });
});

test("other errors are not rate limits", async () => {
  const mnemos = new Mnemos({
    baseUrl: "http://mnemos.test",
    apiKey: "mk_x_y",
    fetch: answering(503, {}),
  });
  await assert.rejects(mnemos.context("eve", "s1"), (e: unknown) => {
    assert.ok(e instanceof MnemosError && !(e instanceof RateLimitedError));
    assert.equal(e.status, 503);
    return true;
  });
});
