import fc from 'fast-check';
import t from 'tap';
import { describeJsonSyntaxError, findJsonSyntaxError } from '../../../src/api/json-syntax.js';

t.test('names the line, column, byte offset, what was expected and what was found', async (t) => {
  const cases: Array<[string, string]> = [
    [
      '{"from":',
      'line 1, column 9 (byte offset 8): expected a value (an object, array, string, number, true, false or null), found the end of the body',
    ],
    [
      '{\n  "a": 1\n  "b": 2}',
      `line 3, column 3 (byte offset 13): expected ',' or '}' after a property value, found "\\""`,
    ],
    ['{"a":1,}', `line 1, column 8 (byte offset 7): expected a property name in double quotes, found "}"`],
    ['{"a" 1}', `line 1, column 6 (byte offset 5): expected ':' after a property name, found "1"`],
    [
      '{"a":tru}',
      'line 1, column 6 (byte offset 5): expected a value (an object, array, string, number, true, false or null), found "tru"',
    ],
    [
      'hello',
      'line 1, column 1 (byte offset 0): expected a value (an object, array, string, number, true, false or null), found "hello"',
    ],
    ['{"a":1} x', 'line 1, column 9 (byte offset 8): expected the end of the body after the JSON value, found "x"'],
    ['[1,2', `line 1, column 5 (byte offset 4): expected ',' or ']' after an array element, found the end of the body`],
    ['{"é": 1,,}', 'line 1, column 9 (byte offset 9): expected a property name in double quotes, found ","'],
    [
      '{"a":"\\q"}',
      'line 1, column 7 (byte offset 6): expected an escape of \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX, found "\\\\q"',
    ],
    [
      '{"a":"\\u12G4"}',
      'line 1, column 7 (byte offset 6): expected four hexadecimal digits after \\u, found "\\\\u12G4"',
    ],
    [
      '"abc',
      `line 1, column 5 (byte offset 4): expected a closing '"' for the string that starts at line 1, column 1, found the end of the body`,
    ],
    ['{"a": 01}', 'line 1, column 7 (byte offset 6): expected a number without a leading zero, found "01"'],
    ['{"a": 1.}', 'line 1, column 9 (byte offset 8): expected a digit after \'.\', found "}"'],
    ['{"a": -x}', 'line 1, column 8 (byte offset 7): expected a digit after the minus sign, found "x"'],
    [
      '{"a":"x\u0001"}',
      'line 1, column 8 (byte offset 7): expected no control character inside a string (write it as an escape such as \\n or \\u0000), found "\\u0001"',
    ],
    ['{\n"😀": [1 2]}', `line 2, column 9 (byte offset 13): expected ',' or ']' after an array element, found "2"`],
  ];
  for (const [text, want] of cases) {
    t.throws(() => JSON.parse(text), `${JSON.stringify(text)} is not JSON`);
    const found = findJsonSyntaxError(text);
    t.equal(found && describeJsonSyntaxError(found), want, JSON.stringify(text));
  }
});

t.test('valid JSON has no syntax error, however deep', async (t) => {
  for (const text of ['{}', '[]', ' {"a":[1,-2.5e+3,true,false,null,{"b":"\\u00e9\\n"}]} ', '"x"', '0', '-0.0E-0'])
    t.equal(findJsonSyntaxError(text), null, text);
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  t.equal(findJsonSyntaxError(deep), null, 'a hundred thousand levels, no recursion');
  t.match(
    describeJsonSyntaxError(findJsonSyntaxError('['.repeat(100_000))!),
    /expected a value .* found the end of the body/,
  );
});

t.test('agrees with JSON.parse on what is JSON (generated texts)', async () => {
  const parses = (s: string) => {
    try {
      JSON.parse(s);
      return true;
    } catch {
      return false;
    }
  };
  // Valid documents, and the same documents cut short or with a character changed.
  const doc = fc.json({ depthSize: 'small' });
  const damaged = fc
    .tuple(doc, fc.nat(), fc.constantFrom('', ',', '}', ']', ':', '"', '\\', 'x', '0', ' ', '\u0001'))
    .map(([s, at, c]) => {
      const i = at % (s.length + 1);
      return s.slice(0, i) + c + s.slice(i + (c === '' ? Math.max(1, s.length - i) : 1));
    });
  fc.assert(
    fc.property(fc.oneof(doc, damaged, fc.string()), (s) => (findJsonSyntaxError(s) === null) === parses(s)),
    { numRuns: 20_000 },
  );
});
