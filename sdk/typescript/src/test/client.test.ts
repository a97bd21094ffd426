/**
 * The typed client against a live `mnemos serve` (Temporal dev server, a worker, the heuristic
 * LLM): `make sdk-test` starts the stack and passes MNEMOS_URL, MNEMOS_API_KEY and MNEMOS_AGENT.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Mnemos, MnemosError, type MessageIn } from "../index.js";

const baseUrl = process.env.MNEMOS_URL ?? "";
const apiKey = process.env.MNEMOS_API_KEY ?? "";
const agent = process.env.MNEMOS_AGENT ?? "";
const user = "ts-user";
const session = `ts-session-${Date.now()}`;

function say(i: number, content: string, role: "user" | "agent" = "user"): MessageIn {
  return {
    message_id: `${session}-${i}`,
    role,
    content,
    created_at: new Date(Date.UTC(2026, 10, 1, 9, i)).toISOString(),
    user_id: role === "user" ? user : null,
  };
}

test("a backend records, forms, reads and erases a user's memory", async () => {
  assert.ok(baseUrl && apiKey && agent, "run through `make sdk-test` (MNEMOS_URL, MNEMOS_API_KEY)");
  const mnemos = new Mnemos({ baseUrl, apiKey });
  await mnemos.registerAgent({ agent_id: agent, name: "TypeScript Agent" });

  const recorded = await mnemos.recordMessages(agent, session, [
    say(0, "I live in Lisbon and I work as a nurse at the children's hospital."),
    say(1, "Nice! How long have you been a nurse?", "agent"),
    say(2, "I have been a nurse for twelve years and I love cycling to work."),
  ]);
  assert.equal(recorded.recorded.inserted, 3);
  const again = await mnemos.recordMessages(agent, session, [say(0, "I live in Lisbon and I work as a nurse at the children's hospital.")]);
  assert.equal(again.recorded.duplicates, 1);

  const summary = await mnemos.form(agent, session, { wait: true });
  assert.ok((summary.facts_added ?? 0) >= 1, JSON.stringify(summary));

  const page = await mnemos.facts(agent, { userId: user });
  assert.ok(page.valid_total >= 1);
  const found = await mnemos.search(agent, ["Where does the user live?"], {
    userId: user,
    sessionId: session,
  });
  assert.ok(found.hits.some((hit) => hit.content.includes("Lisbon")), JSON.stringify(found.hits));
  const xml = await mnemos.context(agent, session, user);
  assert.match(xml, /^<MemoryContext/);
  assert.match(xml, /Lisbon/);

  const ended = await mnemos.endSession(agent, session);
  assert.ok(ended.formation !== undefined);

  // The user's data, as `mnemos export --user` writes it: a header first, an end line last.
  const lines = (await mnemos.exportUser(agent, user, { messages: true })).trim().split("\n");
  const types = lines.map((line) => JSON.parse(line).type);
  assert.equal(types[0], "header");
  assert.equal(types.at(-1), "end");
  assert.ok(lines.some((line) => line.includes("Lisbon")));
  assert.equal(types.filter((t) => t === "message").length, 3);

  const erased = await mnemos.forgetUser(agent, user);
  assert.ok((erased.agents[0]?.facts ?? 0) >= 1);
  assert.equal((await mnemos.facts(agent, { userId: user })).valid_total, 0);
});

test("errors are typed problems", async () => {
  const mnemos = new Mnemos({ baseUrl, apiKey });
  await assert.rejects(mnemos.recordMessages(agent, session, []), (e: unknown) => {
    assert.ok(e instanceof MnemosError);
    assert.equal(e.status, 422);
    assert.equal(e.problem.type, "urn:mnemos:problem:invalid-input");
    assert.deepEqual(e.problem.errors?.[0]?.loc, ["body", "messages"]);
    return true;
  });
  await assert.rejects(mnemos.search("someone-else", ["x"]), (e: unknown) => {
    assert.ok(e instanceof MnemosError && e.status === 403);
    return true;
  });
  const stranger = new Mnemos({ baseUrl, apiKey: "mk_nobody_nothing" });
  await assert.rejects(stranger.context(agent, session), (e: unknown) => {
    assert.ok(e instanceof MnemosError && e.status === 401);
    return true;
  });
});
