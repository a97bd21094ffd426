/**
 * A typed client of the mnemos HTTP API. Types come from the OpenAPI document
 * (`npm run generate`, openapi-typescript); calls go through openapi-fetch; every
 * error is thrown as a MnemosError carrying the server's RFC 9457 problem (a 429 as its subclass
 * RateLimitedError, with the seconds to wait).
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];
export type AgentConfig = Schemas["AgentConfig"];
export type MessageIn = Schemas["MessageIn"];
export type RecordResponse = Schemas["RecordResponse"];
export type ContextResponse = Schemas["ContextResponse"];
export type SearchResult = Schemas["SearchResult"];
export type FactPage = Schemas["FactPage"];
export type Fact = Schemas["Fact"];
export type ForgetResult = Schemas["ForgetResult"];
export type SessionEnd = Schemas["SessionEndSummary"];
export type FormStarted = Schemas["FormStarted"];
export type FormationSummary = Schemas["FormationSummary"];

/** An error answer of the API: `problem` is its RFC 9457 body (`errors` lists invalid fields). */
export class MnemosError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail ?? ""}`);
    this.name = "MnemosError";
  }

  get status(): number {
    return this.problem.status;
  }
}

/**
 * 429: the key is over its budget for this kind of operation (reads, writes or heavy ones such as
 * erasing a user); nothing was done. `retryAfter` is the server's `Retry-After`, in seconds.
 */
export class RateLimitedError extends MnemosError {
  constructor(
    problem: Problem,
    readonly retryAfter: number,
  ) {
    super(problem);
    this.name = "RateLimitedError";
  }
}

/** Seconds to wait, from `Retry-After` (delay-seconds or an HTTP date; 1 when absent). */
function retryAfterOf(response: Response): number {
  const value = response.headers.get("Retry-After")?.trim();
  if (!value) return 1;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 1 : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export interface MnemosOptions {
  /** e.g. "http://127.0.0.1:8000" */
  baseUrl: string;
  /** A key from `mnemos keys create --agent <id>` */
  apiKey: string;
  fetch?: typeof globalThis.fetch;
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function problemOf(error: unknown, response: Response): Problem {
  if (typeof error === "object" && error !== null && "status" in error && "title" in error) {
    return error as Problem;
  }
  return {
    type: "about:blank",
    title: response.statusText || "Error",
    status: response.status,
    detail: typeof error === "string" ? error : "",
    instance: new URL(response.url || "http://unknown/").pathname,
  };
}

function unwrap<T>(answer: Answer<T>): T {
  if (answer.error !== undefined || !answer.response.ok) {
    const problem = problemOf(answer.error, answer.response);
    if (answer.response.status === 429) {
      throw new RateLimitedError(problem, retryAfterOf(answer.response));
    }
    throw new MnemosError(problem);
  }
  return answer.data as T;
}

/** What an agent backend does with mnemos, one method per call; `api` reaches every route. */
export class Mnemos {
  readonly api: Client<paths>;

  constructor(options: MnemosOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: options.fetch,
    });
  }

  async registerAgent(config: AgentConfig): Promise<AgentConfig> {
    return unwrap(await this.api.POST("/v1/agents", { body: config }));
  }

  /** Store new messages (idempotent by message_id); a formation starts when thresholds are met. */
  async recordMessages(
    agentId: string,
    sessionId: string,
    messages: MessageIn[],
    options: { triggerFormation?: boolean } = {},
  ): Promise<RecordResponse> {
    return unwrap(
      await this.api.POST("/v1/agents/{agent_id}/sessions/{session_id}/messages", {
        params: { path: { agent_id: agentId, session_id: sessionId } },
        body: { messages, trigger_formation: options.triggerFormation ?? true },
      }),
    );
  }

  /** Form now, below the thresholds too, and wait for the run: its summary (200). */
  form(agentId: string, sessionId: string, options: { wait: true }): Promise<FormationSummary>;
  /** Form now, below the thresholds too: answers once the run is started (202). */
  form(agentId: string, sessionId: string, options?: { wait?: false }): Promise<FormStarted>;
  /** Form now, below the thresholds too: FormationSummary when `wait`, else FormStarted. */
  form(
    agentId: string,
    sessionId: string,
    options?: { wait?: boolean },
  ): Promise<FormStarted | FormationSummary>;
  async form(
    agentId: string,
    sessionId: string,
    options: { wait?: boolean } = {},
  ): Promise<FormStarted | FormationSummary> {
    return unwrap(
      await this.api.POST("/v1/agents/{agent_id}/sessions/{session_id}/form", {
        params: {
          path: { agent_id: agentId, session_id: sessionId },
          query: { wait: options.wait ?? false },
        },
      }),
    ) as FormStarted | FormationSummary;
  }

  /**
   * The `<MemoryContext>` XML for this turn; "" when the session has messages but nothing is
   * formed yet for it. A session with no recorded messages throws a MnemosError 404 (for a
   * session's first turn, `POST /v1/agents/{agent_id}/sessions/{session_id}/start` through `api`
   * answers without messages).
   */
  async context(agentId: string, sessionId: string, userId?: string): Promise<string> {
    const answer = unwrap(
      await this.api.GET("/v1/agents/{agent_id}/sessions/{session_id}/context", {
        params: {
          path: { agent_id: agentId, session_id: sessionId },
          query: { user_id: userId, format: "json" },
        },
      }),
    ) as ContextResponse;
    return answer.context;
  }

  async search(
    agentId: string,
    queries: string[],
    options: { userId?: string; sessionId?: string; topK?: number } = {},
  ): Promise<SearchResult> {
    return unwrap(
      await this.api.POST("/v1/agents/{agent_id}/search", {
        params: { path: { agent_id: agentId } },
        body: {
          queries,
          user_id: options.userId,
          session_id: options.sessionId,
          top_k: options.topK,
        },
      }),
    );
  }

  async facts(
    agentId: string,
    // cursor: a page's next_cursor (older facts) or prev_cursor (newer): skips nothing on deletes.
    options: { userId?: string; offset?: number; limit?: number; cursor?: string } = {},
  ): Promise<FactPage> {
    return unwrap(
      await this.api.GET("/v1/agents/{agent_id}/facts", {
        params: {
          path: { agent_id: agentId },
          query: {
            user_id: options.userId,
            offset: options.offset,
            limit: options.limit,
            cursor: options.cursor,
          },
        },
      }),
    );
  }

  /**
   * Hard-delete, for this agent, the user's facts, user-scope memory and own messages, and the
   * sessions they were the only user of, with their session memory (a key created with --erase).
   * Kept: agent-scope memory, which may have been formed from what they said, and, in sessions
   * shared with other users, the others' messages and the session memory, which may quote them.
   */
  async forgetUser(agentId: string, userId: string): Promise<ForgetResult> {
    return unwrap(
      await this.api.DELETE("/v1/agents/{agent_id}/users/{user_id}", {
        params: { path: { agent_id: agentId, user_id: userId } },
      }),
    );
  }

  /**
   * The user's data as JSON Lines, the file `mnemos export --agent A --user U` writes (a header,
   * one record a line, an end line with the counts): what forgetUser would delete. Any key that
   * may read the agent; `messages` adds their messages.
   */
  async exportUser(
    agentId: string,
    userId: string,
    options: { messages?: boolean } = {},
  ): Promise<string> {
    return unwrap(
      await this.api.GET("/v1/agents/{agent_id}/users/{user_id}/export", {
        params: {
          path: { agent_id: agentId, user_id: userId },
          query: { messages: options.messages },
        },
        parseAs: "text",
      }),
    );
  }

  /** Form the rest and consolidate the session memory; answers when both are done. */
  async endSession(agentId: string, sessionId: string): Promise<SessionEnd> {
    return unwrap(
      await this.api.POST("/v1/agents/{agent_id}/sessions/{session_id}/end", {
        params: { path: { agent_id: agentId, session_id: sessionId } },
      }),
    );
  }
}
