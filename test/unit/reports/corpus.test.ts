import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { reportJson } from '../../../src/cli/commands/reports.js';
import { readReport } from '../../../src/reports/read.js';

// Real bounces and complaints, written by 73 mail systems none of them ours, with the reading the
// sisimai library gives for each (its set-of-emails; the corpus README says how to read them).
// Read from beside the repository, never copied into it; POSTHASTE_BOUNCE_CORPUS points elsewhere.
/** The directory that holds the repository (dist/test/unit/reports is four levels into it). */
const BESIDE = fileURLToPath(new URL('../../../../../', import.meta.url));
const DIR = process.env.POSTHASTE_BOUNCE_CORPUS ?? join(BESIDE, 'shared', 'corpus', 'bounces');

interface Expected {
  file: string;
  kind: 'dsn' | 'arf' | 'negative';
  recipients?: Array<{ address: string; status: string | null; reason: string; hard: boolean }>;
  complaints?: Array<{ address: string | null; feedbackType: string }>;
}

interface Printed {
  kind: string;
  recipients: Array<{ address: string; status: string | null; suppress: boolean; classification: string }>;
  feedback: { feedback_type: string } | null;
}

/** Sisimai calls these soft where a sender may fairly suppress: a full mailbox, a disabled account, a refusal after DATA. */
const ARGUABLE = new Set(['mailboxfull', 'suspend', 'filtered']);
/** Causes on the sender's side, or temporary ones, in sisimai's words: the address is not to blame. */
const NOT_THE_ADDRESS = new Set([
  'blocked',
  'spamdetected',
  'badreputation',
  'requireptr',
  'securityerror',
  'authfailure',
  'policyviolation',
  'norelaying',
  'rejected',
  'expired',
  'networkerror',
  'toomanyconn',
  'systemerror',
  'systemfull',
  'mailererror',
  'speeding',
  'mesgtoobig',
  'exceedlimit',
  'contenterror',
  'virusdetected',
  'notcompliantrfc',
  'syntaxerror',
  'delivered',
]);

if (!existsSync(`${DIR}/expected.json`)) {
  const where = `the real-bounce corpus (sisimai's set-of-emails, github.com/sisimai/set-of-emails, with an expected.json of sisimai's readings) is not at ${DIR}: put it at shared/corpus/bounces in the directory that holds the checkout, or point POSTHASTE_BOUNCE_CORPUS at it`;
  t.comment(where);
  void t.skip(where, async () => {});
} else {
  const samples = (JSON.parse(readFileSync(`${DIR}/expected.json`, 'utf8')) as { samples: Expected[] }).samples;

  t.test('posthaste reads real bounces and complaints as their senders meant them', async (t) => {
    let bounces = 0,
      recognised = 0,
      allFound = 0,
      rcpts = 0,
      classOk = 0,
      classN = 0,
      strict = 0,
      lenient = 0,
      wrongSuppress = 0,
      missedHard = 0,
      complaints = 0,
      complaintsOk = 0,
      negatives = 0,
      negativesOk = 0,
      threw = 0;
    const senderSuppressed: string[] = [];
    const times: number[] = [];
    for (const s of samples) {
      // As it would arrive over SMTP: CRLF line ends, no mbox "From " line.
      const raw = Buffer.from(
        readFileSync(`${DIR}/eml/${s.file}`)
          .toString('latin1')
          .replace(/^From [^\n]*\n/, '')
          .replace(/\r?\n/g, '\r\n'),
        'latin1',
      );
      let r: Printed;
      const started = performance.now();
      try {
        // The code path of `posthaste reports parse --json`.
        r = reportJson(readReport(raw)) as unknown as Printed;
      } catch (e) {
        threw++;
        t.fail(`${s.file}: ${(e as Error).message}`);
        continue;
      }
      times.push(performance.now() - started);
      if (s.kind === 'negative') {
        negatives++;
        if (r.kind === 'none') negativesOk++;
        continue;
      }
      if (s.kind === 'arf') {
        complaints++;
        if (r.kind === 'arf' && r.feedback?.feedback_type === s.complaints![0]!.feedbackType) complaintsOk++;
        continue;
      }
      bounces++;
      const expected = s.recipients!;
      rcpts += expected.length;
      if (r.kind !== 'dsn') {
        missedHard += expected.filter((e) => e.hard).length;
        continue;
      }
      recognised++;
      let every = true;
      for (const e of expected) {
        const got = r.recipients.find((x) => x.address.toLowerCase() === e.address.toLowerCase());
        if (!got) {
          every = false;
          if (e.hard) missedHard++;
          continue;
        }
        if (e.status) {
          classN++;
          if (got.status?.[0] === e.status[0]) classOk++;
        }
        if (got.suppress === e.hard) strict++;
        if (got.suppress === e.hard || (got.suppress && ARGUABLE.has(e.reason))) lenient++;
        if (got.suppress && !e.hard) wrongSuppress++;
        if (!got.suppress && e.hard) missedHard++;
        if (got.suppress && NOT_THE_ADDRESS.has(e.reason))
          senderSuppressed.push(`${s.file} (${e.reason}, read as ${got.classification})`);
      }
      if (every) allFound++;
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)} % (${a}/${b})`;
    t.comment(`${samples.length} messages: ${bounces} bounces, ${complaints} complaints, ${negatives} neither`);
    t.comment(`recognised as a bounce at all      ${pct(recognised, bounces)}`);
    t.comment(`every failed recipient found       ${pct(allFound, bounces)}`);
    t.comment(`status class (4.x.x / 5.x.x) right ${pct(classOk, classN)}`);
    t.comment(
      `hard/soft agrees, strictly         ${pct(strict, rcpts)}: ${wrongSuppress} suppressed that sisimai calls soft, ${missedHard} hard bounces missed`,
    );
    t.comment(
      `hard/soft agrees, counting sisimai's soft mailboxfull/suspend/filtered as agreement  ${pct(lenient, rcpts)}`,
    );
    t.comment(`complaints recognised              ${complaintsOk} / ${complaints}`);
    t.comment(`non-bounces read as none           ${negativesOk} / ${negatives}`);
    t.comment(`median ${median.toFixed(3)} ms a message`);
    t.ok(recognised / bounces >= 0.98, `recognised ${pct(recognised, bounces)}, goal 98 %`);
    t.ok(allFound / bounces >= 0.95, `every recipient found ${pct(allFound, bounces)}, goal 95 %`);
    t.ok(strict / rcpts >= 0.92, `hard/soft strictly ${pct(strict, rcpts)}, goal 92 %`);
    t.ok(lenient / rcpts >= 0.97, `hard/soft with the arguable ones ${pct(lenient, rcpts)}, goal 97 %`);
    t.same(senderSuppressed, [], "no cause on the sender's side, or temporary, suppresses the address");
    t.equal(complaintsOk, complaints, 'every complaint recognised, with its feedback type');
    t.equal(negativesOk, negatives, 'auto-replies and ordinary mail are not bounces');
    t.equal(threw, 0, 'nothing throws');
    t.ok(median < 2, `median ${median.toFixed(3)} ms a message, goal under 2 ms`);
  });
}
