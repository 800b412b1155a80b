import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { parseAddrSpec } from '../../domain/addresses.js';
import { hashPassword, passwordProblem } from '../../lib/password.js';
import { CliError, configOf, customerNamed, iso, output, table, withStore } from '../context.js';

/** The password refused at once, with the policy's reason (lib/password.ts), when it may not be used. */
function checked(password: string): string {
  const problem = passwordProblem(password);
  if (problem) throw new CliError(problem);
  return password;
}

/**
 * A new password, from standard input (--password-stdin: its first line) or a prompt that does
 * not echo, never an argument; checked against the policy as soon as it is entered, so a prompt
 * asks to confirm only a password that would be accepted.
 */
async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return checked(Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]!);
  }
  if (!process.stdin.isTTY) throw new CliError('no terminal to ask for the password on; pipe it with --password-stdin');
  const ask = (q: string) =>
    new Promise<string>((resolve) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
      const out = rl as unknown as { _writeToOutput: (s: string) => void };
      process.stderr.write(q);
      out._writeToOutput = () => {}; // no echo
      rl.question('', (a) => {
        rl.close();
        process.stderr.write('\n');
        resolve(a);
      });
    });
  const first = checked(await ask('Password: '));
  if ((await ask('Again: ')) !== first) throw new CliError('the passwords differ');
  return first;
}

async function newPasswordHash(fromStdin: boolean): Promise<string> {
  return hashPassword(await readPassword(fromStdin));
}

/** `users add`: the address and the role checked, then the password asked for, then the user stored. */
async function addUser(
  email: string,
  o: { admin?: boolean; customer?: string; passwordStdin?: boolean },
  c: Command,
): Promise<void> {
  if (!!o.admin === (o.customer !== undefined)) throw new CliError('give exactly one of --admin or --customer NAME');
  const parsed = parseAddrSpec(email);
  if (!parsed.ok) throw new CliError(`"${email}" is not an e-mail address: ${parsed.error}`);
  configOf(c); // a missing or bad configuration is said before the password is asked for
  const hash = await newPasswordHash(!!o.passwordStdin);
  await withStore(c, async ({ store, now }) => {
    if (await store.users.find(email)) throw new CliError(`user ${email} already exists`);
    const customerId = o.customer !== undefined ? (await customerNamed(store, o.customer)).id : null;
    const u = await store.users.add({
      email,
      passwordHash: hash,
      role: o.admin ? 'admin' : 'customer',
      customerId,
      now,
    });
    output(
      c,
      { email: u.email, role: u.role, customer: o.customer ?? null, created_at: iso(u.created_at) },
      `user ${u.email} added (${o.admin ? 'admin' : `customer ${o.customer}`})`,
    );
  });
}

export function usersCommand(program: Command): void {
  const cmd = program
    .command('users')
    .description("dashboard users: admins see every customer, a customer's users only theirs");
  cmd
    .command('add <email>')
    .description('add a dashboard user (the password is asked for, or read with --password-stdin)')
    .option('--admin', 'an administrator: every customer')
    .option('--customer <name>', "a customer's user: that customer only")
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(addUser);
  cmd
    .command('list')
    .description('list dashboard users')
    .action(async (_o, c: Command) =>
      withStore(c, async ({ store }) => {
        const rows = (await store.users.list()).map((u) => ({
          email: u.email,
          role: u.role,
          customer: u.customer,
          created_at: iso(u.created_at),
        }));
        output(c, rows, table(rows, ['email', 'role', 'customer', 'created_at']));
      }),
    );
  cmd
    .command('remove <email>')
    .description('remove a user; their sessions end at once')
    .action(async (email: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        if (!(await store.users.remove(email))) throw new CliError(`no user ${email}`);
        output(c, { email: email.toLowerCase(), removed: true }, `user ${email.toLowerCase()} removed`);
      }),
    );
  cmd
    .command('passwd <email>')
    .description("set a user's password; their sessions end")
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(async (email: string, o: { passwordStdin?: boolean }, c: Command) => {
      configOf(c);
      const hash = await newPasswordHash(!!o.passwordStdin);
      await withStore(c, async ({ store }) => {
        if (!(await store.users.setPassword(email, hash))) throw new CliError(`no user ${email}`);
        output(
          c,
          { email: email.toLowerCase(), password_set: true },
          `password of ${email.toLowerCase()} set; their sessions have ended`,
        );
      });
    });
}
