import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { suppressionPolicy } from '../../config/settings.js';
import type { Report } from '../../domain/report.js';
import { CliError, configOf, output } from '../context.js';

/** A report as `reports parse --json` prints it (snake_case, what the report does not say as null). */
export function reportJson(r: Report): Record<string, unknown> {
  return {
    kind: r.kind,
    original_message_id: r.originalMessageId,
    recipients: r.recipients.map((x) => ({
      address: x.address,
      original_recipient: x.originalRecipient,
      action: x.action,
      status: x.status,
      reply_code: x.replyCode,
      diagnostic: x.diagnostic,
      classification: x.classification,
      permanent: x.permanent,
      suppress: x.suppress,
    })),
    feedback: r.feedback
      ? {
          feedback_type: r.feedback.feedbackType,
          user_agent: r.feedback.userAgent,
          arrival_date: r.feedback.arrivalDate,
          recipient: r.feedback.recipient,
        }
      : null,
  };
}

function human(r: Report): string {
  if (r.kind === 'none') return 'not a bounce or a complaint';
  const lines = [
    `${r.kind === 'dsn' ? 'bounce' : 'complaint'}${r.originalMessageId ? ` of <${r.originalMessageId}>` : ''}`,
  ];
  if (r.feedback)
    lines.push(
      `  ${r.feedback.feedbackType} from ${r.feedback.recipient ?? '(recipient not named)'}${r.feedback.userAgent ? ` (${r.feedback.userAgent})` : ''}`,
    );
  for (const x of r.recipients)
    lines.push(
      `  ${x.address || '(recipient not named)'}: ${x.action} ${x.status ?? '-'} ${x.classification}${x.suppress ? ', suppresses' : ''}${x.diagnostic ? `\n    ${x.diagnostic}` : ''}`,
    );
  return lines.join('\n');
}

async function readInput(file: string | undefined): Promise<Buffer> {
  if (file === undefined || file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }
  try {
    return readFileSync(file);
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
  }
}

export function reportsCommand(program: Command): void {
  const cmd = program.command('reports').description('bounces and complaints as posthaste reads them');
  cmd
    .command('parse [file]')
    .description(
      'what posthaste makes of a bounce or complaint (a file, or - for standard input), read as the daemon reads it, with the [bounces] policy of the configuration',
    )
    .action(async (file: string | undefined, _o: unknown, c: Command) => {
      const config = configOf(c, { orDefaults: true });
      const { readReport } = await import('../../reports/read.js');
      const report = readReport(await readInput(file), suppressionPolicy(config));
      output(c, reportJson(report), human(report));
    });
}
