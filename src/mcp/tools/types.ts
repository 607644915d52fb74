import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { EndpointFacts } from '../../domain/endpoint/state.ts';
import type { Verb } from '../../domain/endpoint/verbs.ts';
import type { FirstPage } from '../../todos/drain.ts';
import type { McpServices } from '../services.ts';

/** What a tool call knows: the services, the endpoint as authenticated for this very request, its session. */
export interface ToolContext {
  readonly services: McpServices;
  readonly endpoint: EndpointFacts;
  readonly sessionId: string | null;
  /** claim_next's first candidates, read with this request's bearer check (src/mcp/read-ahead.ts). */
  readonly firstPage?: FirstPage;
}

/**
 * One MCP tool (style.md §10: one a file). `input` is the zod schema the arguments must meet
 * (a mismatch is a protocol error, InvalidParams); an expected refusal is a HooklineError thrown
 * by `run`, which the server turns into an `isError` result carrying its stable code.
 */
export interface McpTool<S extends z.ZodObject = z.ZodObject> {
  readonly name: Verb;
  readonly title: string;
  readonly description: string;
  readonly input: S;
  readonly annotations: ToolAnnotations;
  /**
   * `result`: arguments that do not meet `input` are answered as an `invalid_argument` result
   * carrying the schema's message (a sentence), not as a protocol error. For tools whose
   * arguments are filters people type (list_events), where the spec asks for a named error.
   */
  readonly argumentErrors?: 'protocol' | 'result';
  run(ctx: ToolContext, args: z.infer<S>): Promise<CallToolResult>;
}

/**
 * Keeps each tool's argument type while the catalog holds them side by side, and its verb, so
 * the catalog can check each key against the tool's name.
 */
export const defineTool = <N extends Verb, S extends z.ZodObject>(
  tool: McpTool<S> & { readonly name: N },
): McpTool & { readonly name: N } => tool as unknown as McpTool & { readonly name: N };
