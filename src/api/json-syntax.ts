/**
 * Where a request body that JSON.parse refused stops being JSON (RFC 8259), and what was expected
 * there: V8's own messages give a position for some errors and none for others, and quote the
 * body. Runs only after JSON.parse failed, so the accept path never pays for it. One pass over
 * the text with an explicit stack (no recursion: nesting depth costs nothing).
 */
export interface JsonSyntaxError {
  /** 1-based line and column (in characters) of the first character that is wrong. */
  line: number;
  column: number;
  /** The same place as a byte offset into the UTF-8 body. */
  offset: number;
  expected: string;
  /** What is there instead: a short quote of it, or "the end of the body". */
  found: string;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const A_VALUE = 'a value (an object, array, string, number, true, false or null)';

type Want = 'value' | 'value_or_close' | 'key' | 'key_or_close' | 'colon' | 'comma_or_close' | 'end';

/** The first syntax error in `text`, or null when it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  const stack: Array<'{' | '['> = [];
  let i = 0;
  let want: Want = 'value';
  const fail = (expected: string, at = i): JsonSyntaxError => locate(text, at, expected);
  const afterValue = (): Want => (stack.length ? 'comma_or_close' : 'end');
  for (;;) {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++;
    const c = text[i];
    if (want === 'end') return i >= text.length ? null : fail('the end of the body after the JSON value');
    if (want === 'colon') {
      if (c !== ':') return fail("':' after a property name");
      i++;
      want = 'value';
    } else if (want === 'comma_or_close') {
      const object = stack[stack.length - 1] === '{';
      const close = object ? '}' : ']';
      if (c === ',') {
        i++;
        want = object ? 'key' : 'value';
      } else if (c === close) {
        i++;
        stack.pop();
        want = afterValue();
      } else return fail(`',' or '${close}' after ${object ? 'a property value' : 'an array element'}`);
    } else if ((want === 'key_or_close' && c === '}') || (want === 'value_or_close' && c === ']')) {
      i++;
      stack.pop();
      want = afterValue();
    } else if (want === 'key' || want === 'key_or_close') {
      if (c !== '"')
        return fail(want === 'key' ? 'a property name in double quotes' : "a property name in double quotes or '}'");
      const end = scanString(text, i);
      if (typeof end !== 'number') return end;
      i = end;
      want = 'colon';
    } else {
      if (c === '{' || c === '[') {
        stack.push(c);
        i++;
        want = c === '{' ? 'key_or_close' : 'value_or_close';
        continue;
      }
      const end =
        c === '"'
          ? scanString(text, i)
          : c === '-' || (c !== undefined && c >= '0' && c <= '9')
            ? scanNumber(text, i)
            : scanLiteral(text, i);
      if (typeof end !== 'number') return end;
      i = end;
      want = afterValue();
    }
  }
}

/** A string starting at its opening quote: the index after its closing quote, or the error in it. */
function scanString(text: string, start: number): number | JsonSyntaxError {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20)
      return locate(text, i, 'no control character inside a string (write it as an escape such as \\n or \\u0000)');
    if (c === 0x5c) {
      const e = text[i + 1];
      if (e === 'u') {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
          return locate(text, i, 'four hexadecimal digits after \\u');
        i += 5;
      } else if (e !== undefined && ESCAPES.has(e)) i++;
      else return locate(text, i, 'an escape of \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX');
    }
  }
  return locate(text, text.length, `a closing '"' for the string that starts at ${where(text, start)}`);
}

/** A number (RFC 8259 6): the index after it, or where it goes wrong. */
function scanNumber(text: string, start: number): number | JsonSyntaxError {
  const m = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  m.lastIndex = start;
  const found = m.exec(text);
  if (!found) return locate(text, start + 1, 'a digit after the minus sign');
  const end = start + found[0].length;
  const next = text[end];
  if (found[1] === '0' && next !== undefined && next >= '0' && next <= '9')
    return locate(text, start, 'a number without a leading zero');
  if (next === '.' || next === 'e' || next === 'E') return locate(text, end + 1, `a digit after '${next}'`);
  return end;
}

function scanLiteral(text: string, start: number): number | JsonSyntaxError {
  for (const word of ['true', 'false', 'null']) if (text.startsWith(word, start)) return start + word.length;
  return locate(text, start, A_VALUE);
}

/** "line L, column C" of an index. */
function where(text: string, index: number): string {
  const { line, column } = lineColumn(text, index);
  return `line ${line}, column ${column}`;
}

function lineColumn(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  // Columns count characters (code points), not UTF-16 units.
  let column = 1;
  for (const _ of text.slice(lineStart, index)) column++;
  return { line, column };
}

function locate(text: string, index: number, expected: string): JsonSyntaxError {
  return {
    ...lineColumn(text, index),
    offset: Buffer.byteLength(text.slice(0, index)),
    expected,
    found: quote(text, index),
  };
}

/** A short quote of what stands at `index`: one structural character, or a run up to the next delimiter. */
function quote(text: string, index: number): string {
  if (index >= text.length) return 'the end of the body';
  const run = /[^\s{}[\],:"]{1,20}/y;
  run.lastIndex = index;
  const m = run.exec(text);
  return JSON.stringify(m ? m[0] : [...text.slice(index, index + 2)][0]!);
}

/** The problem as one sentence: "line 3, column 3 (byte offset 13): expected ..., found ...". */
export function describeJsonSyntaxError(e: JsonSyntaxError): string {
  return `line ${e.line}, column ${e.column} (byte offset ${e.offset}): expected ${e.expected}, found ${e.found}`;
}
