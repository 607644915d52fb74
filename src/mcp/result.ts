import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Tool results. Success carries the structured result and the same JSON as text (for clients
 * that read only text). An expected failure is `isError: true` with `{ code, message }`: the
 * code is stable (docs/reference/mcp-tools.md), the message is for people.
 */
export function ok(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

export function failure(code: string, message: string): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}` }],
    structuredContent: { code, message },
  };
}
