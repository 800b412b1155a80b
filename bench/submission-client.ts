// The submission benchmark's load generator, run as its own process: `sessions` SMTP connections
// kept open, each authenticating once (AUTH PLAIN, when a key is given) and then sending its share
// of `count` messages of about 2 KB, MAIL, RCPT and DATA pipelined (both servers offer PIPELINING),
// the next message only after the 250 of the last. Prints "RATE <messages per second>".
// Usage: node submission-client.js PORT COUNT SESSIONS [KEY]
import net from 'node:net';

const [port, count, sessions] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const key = process.argv[5];

/** A 2 KB message: the header section of an application's mail, and a body of 76-character lines. */
function message(n: number): string {
  const head = `From: Shop <shop@example.com>\r\nTo: rcpt${n}@sink.test\r\nSubject: Order ${n}\r\nMessage-ID: <bench-${process.pid}-${n}@app.example.com>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n`;
  const line = `${'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod temp'}\r\n`;
  return head + line.repeat(Math.ceil((2048 - head.length) / line.length));
}

/** One connection: replies read in order, each a complete (possibly multiline) reply. */
class Connection {
  private buf = '';
  private waiting: Array<(r: string) => void> = [];
  constructor(private socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d) => {
      this.buf += d.toString('latin1');
      for (;;) {
        const m = /^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\r?\n/.exec(this.buf);
        if (!m || this.waiting.length === 0) return;
        this.buf = this.buf.slice(m[0].length);
        this.waiting.shift()!(m[0]);
      }
    });
  }
  replies(n: number, write?: string): Promise<string[]> {
    const out = Array.from({ length: n }, () => new Promise<string>((resolve) => this.waiting.push(resolve)));
    if (write !== undefined) this.socket.write(write);
    return Promise.all(out);
  }
}

const expect = (got: string[], codes: string[], what: string) => {
  got.forEach((r, i) => {
    if (!r.startsWith(codes[i]!)) throw new Error(`${what}: expected ${codes[i]}, got ${r.trim()}`);
  });
};

let next = 0;
async function session(): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const c = new Connection(socket);
  expect(await c.replies(1), ['220'], 'greeting');
  expect(await c.replies(1, 'EHLO app.example.com\r\n'), ['250'], 'EHLO');
  if (key)
    expect(
      await c.replies(1, `AUTH PLAIN ${Buffer.from(`\0posthaste\0${key}`).toString('base64')}\r\n`),
      ['235'],
      'AUTH',
    );
  while (next < count) {
    const n = next++;
    expect(
      await c.replies(3, `MAIL FROM:<app@app.example.com>\r\nRCPT TO:<rcpt${n}@sink.test>\r\nDATA\r\n`),
      ['250', '250', '354'],
      'MAIL, RCPT, DATA',
    );
    expect(await c.replies(1, `${message(n)}.\r\n`), ['250'], 'end of DATA');
  }
  await c.replies(1, 'QUIT\r\n');
  socket.end();
}

const t0 = performance.now();
await Promise.all(Array.from({ length: sessions }, session));
console.log(`RATE ${count / ((performance.now() - t0) / 1000)}`);
