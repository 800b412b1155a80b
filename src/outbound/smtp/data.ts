// A message as it goes on the wire in an SMTP transaction: after DATA (RFC 5321 4.5.2) or as a
// BDAT chunk (RFC 3030), which is sent as it is.

/**
 * The message after DATA, as pieces for one corked write (the message itself is not copied): a
 * line starting with "." gets another (dot-stuffing), a bare LF goes as CRLF, and the ending "."
 * line follows, after a line ending if the message lacks one.
 */
export function dataPieces(message: Buffer): Array<Buffer | string> {
  const pieces: Array<Buffer | string> = [];
  let from = 0;
  if (message[0] === 0x2e) pieces.push('.');
  for (let lf = message.indexOf(0x0a); lf >= 0; lf = message.indexOf(0x0a, lf + 1)) {
    const bare = lf === 0 || message[lf - 1] !== 0x0d;
    const dot = message[lf + 1] === 0x2e;
    if (!bare && !dot) continue;
    pieces.push(message.subarray(from, bare ? lf : lf + 1), bare ? (dot ? '\r\n.' : '\r\n') : '.');
    from = lf + 1;
  }
  if (from < message.length) pieces.push(message.subarray(from));
  const last = message[message.length - 1];
  pieces.push(last === 0x0a ? '.\r\n' : last === 0x0d ? '\n.\r\n' : '\r\n.\r\n');
  return pieces;
}

/**
 * Whether the message is CRLF lines through to its end, which BDAT sends as they are: what DATA
 * would deliver of it, bare LFs made CRLF and a missing last line ending added, is then the same.
 */
export function crlfOnly(message: Buffer): boolean {
  const n = message.length;
  if (n < 2 || message[n - 2] !== 0x0d || message[n - 1] !== 0x0a) return false;
  for (let lf = message.indexOf(0x0a); lf >= 0; lf = message.indexOf(0x0a, lf + 1))
    if (lf === 0 || message[lf - 1] !== 0x0d) return false;
  return true;
}
