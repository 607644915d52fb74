import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, printTable, say } from '../client/output.ts';
import { CliExit } from '../support.ts';

interface FriendOut {
  id: string;
  state: string;
  direction: string;
  via: string;
  approver: { slug: string };
  requester: { name: string };
  requested_verbs: string[];
  granted_verbs: string[] | null;
  queue: string;
  message: string | null;
  friend_endpoint: { slug: string | null; mcp_url: string } | null;
  credential: string | null;
}

interface CredentialOut {
  slug: string;
  mcp_url: string;
  token: string;
  mcp_json: unknown;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function show(out: FriendOut): void {
  say(`${out.id}  ${out.state}  ${out.requester.name} -> ${out.approver.slug}`);
  if (out.granted_verbs) say(`  Grant        ${out.granted_verbs.join(', ')}`);
  if (out.friend_endpoint) say(`  Endpoint     ${out.friend_endpoint.slug}  ${out.friend_endpoint.mcp_url}`);
}

/** `hookline friends list|ask|approve|decline|narrow|revoke|withdraw|credential|accept` (the issue "Friends"). */
export function registerFriends(program: Command): void {
  const friends = program
    .command('friends')
    .description('friend requests and friendships of your endpoints (release 0.5.0)');

  withUrl(friends.command('list'))
    .description(
      'list the friend requests and friendships of your endpoints (names and messages are untrusted text)',
    )
    .option('--json', 'machine-readable JSON output')
    .action(async (_opts, cmd: Command) => {
      const rows = await clientFor(cmd).request<FriendOut[]>('GET', '/api/v1/friends');
      if (wantsJson(cmd)) return printJson(rows);
      if (rows.length === 0) return say('No friend requests yet.');
      printTable(
        rows.map((r) => ({
          ...r,
          requester: r.requester.name,
          endpoint: r.approver.slug,
          grant: (r.granted_verbs ?? r.requested_verbs).join(','),
        })),
        ['id', 'direction', 'state', 'requester', 'endpoint', 'queue', 'grant'],
      );
    });

  withUrl(friends.command('ask'))
    .description('ask, as one of your endpoints, another endpoint of this instance to be friends')
    .argument('<from>', 'your endpoint (slug or ep_ id)')
    .argument('<to>', 'the slug of the endpoint asked')
    .option('--verb <verb>', 'a verb asked for (repeat; default: create_for and the drain verbs)', collect)
    .option('--queue <queue>', "where work handed back lands (default: your endpoint's first queue)")
    .option('--message <text>', 'a note for the owner')
    .option('--json', 'machine-readable JSON output')
    .action(
      async (
        from: string,
        to: string,
        opts: { verb?: string[]; queue?: string; message?: string },
        cmd: Command,
      ) => {
        const out = await clientFor(cmd).request<FriendOut>('POST', '/api/v1/friends', {
          body: {
            from,
            to,
            ...(opts.verb ? { verbs: opts.verb } : {}),
            ...(opts.queue ? { queue: opts.queue } : {}),
            ...(opts.message ? { message: opts.message } : {}),
          },
        });
        if (wantsJson(cmd)) return printJson(out);
        show(out);
      },
    );

  withUrl(friends.command('approve'))
    .description('approve a request to one of your endpoints; this mints the friend endpoint')
    .argument('<id>', 'the friend request (fr_ id)')
    .option(
      '--verb <verb>',
      'grant only this verb (repeat; default: every grantable verb requested)',
      collect,
    )
    .option('--json', 'machine-readable JSON output')
    .action(async (id: string, opts: { verb?: string[] }, cmd: Command) => {
      const out = await clientFor(cmd).request<FriendOut>(
        'POST',
        `/api/v1/friends/${encodeURIComponent(id)}/approve`,
        {
          body: opts.verb ? { verbs: opts.verb } : {},
        },
      );
      if (wantsJson(cmd)) return printJson(out);
      show(out);
    });

  withUrl(friends.command('narrow'))
    .description('narrow a friendship: the friend endpoint keeps only these verbs (never widens)')
    .argument('<id>', 'the friendship (fr_ id)')
    .requiredOption('--verb <verb>', 'a verb it keeps (repeat for each)', collect)
    .option('--json', 'machine-readable JSON output')
    .action(async (id: string, opts: { verb: string[] }, cmd: Command) => {
      const out = await clientFor(cmd).request<FriendOut>(
        'POST',
        `/api/v1/friends/${encodeURIComponent(id)}/narrow`,
        {
          body: { verbs: opts.verb },
        },
      );
      if (wantsJson(cmd)) return printJson(out);
      show(out);
    });

  for (const [move, description] of [
    ['decline', 'decline a pending request to one of your endpoints'],
    ['revoke', 'revoke a friendship: the friend endpoint stops working'],
    ['withdraw', 'withdraw a pending request one of your endpoints sent'],
  ] as const) {
    withUrl(friends.command(move))
      .description(description)
      .argument('<id>', 'the friend request (fr_ id)')
      .option('--json', 'machine-readable JSON output')
      .action(async (id: string, _opts, cmd: Command) => {
        const out = await clientFor(cmd).request<FriendOut>(
          'POST',
          `/api/v1/friends/${encodeURIComponent(id)}/${move}`,
          {
            body: {},
          },
        );
        if (wantsJson(cmd)) return printJson(out);
        show(out);
      });
  }

  withUrl(friends.command('credential'))
    .description(
      "show, once, the credential of the friend endpoint minted for your endpoint's approved request",
    )
    .argument('<id>', 'the friend request (fr_ id)')
    .option('--json', 'machine-readable JSON output (includes the token)')
    .action(async (id: string, _opts, cmd: Command) => {
      const out = await clientFor(cmd).request<CredentialOut>(
        'POST',
        `/api/v1/friends/${encodeURIComponent(id)}/credential`,
      );
      if (wantsJson(cmd)) return printJson(out);
      say(`  MCP URL      ${out.mcp_url}`);
      say(`  Token        ${out.token}`);
      say('');
      say('Shown only now. MCP client configuration:');
      say(JSON.stringify(out.mcp_json, null, 2));
    });

  withUrl(friends.command('accept'))
    .description('take friend requests for one of your endpoints (publishes its A2A Agent Card), or stop')
    .argument('<ref>', 'the endpoint slug or ep_ id')
    .argument('<on|off>', 'on or off')
    .option('--json', 'machine-readable JSON output')
    .action(async (ref: string, onOff: string, _opts, cmd: Command) => {
      if (onOff !== 'on' && onOff !== 'off') throw new CliExit('hookline: say on or off', 1, 'usage');
      const accept = onOff === 'on';
      const out = await clientFor(cmd).request<{
        slug: string;
        accept_friend_requests: boolean;
        agent_card_url: string | null;
      }>('POST', `/api/v1/endpoints/${encodeURIComponent(ref)}/friend-requests`, { body: { accept } });
      if (wantsJson(cmd)) return printJson(out);
      say(
        out.accept_friend_requests
          ? `${out.slug} takes friend requests. Agent Card: ${out.agent_card_url}`
          : `${out.slug} takes no friend requests.`,
      );
    });
}
