import t from 'tap';
import { ManualClock } from '../../../src/lib/clock.js';
import { BdatMemory } from '../../../src/outbound/smtp/session.js';

t.test('a host that refused BDAT is sent DATA until its time is up, on the injected clock', async (t) => {
  const clock = new ManualClock();
  const memory = new BdatMemory(clock, 1000);
  t.ok(memory.allows('mx.example.test'), 'unknown hosts are given BDAT');
  memory.refused('MX.Example.test');
  t.notOk(memory.allows('mx.example.TEST'), 'remembered whatever the case of the name');
  t.ok(memory.allows('mx.other.test'), 'only that host');
  clock.advance(999);
  t.notOk(memory.allows('mx.example.test'));
  clock.advance(1);
  t.ok(memory.allows('mx.example.test'), 'given BDAT again when its time is up');
  t.ok(memory.allows('mx.example.test'), 'and forgotten');
});

t.test('at most maxHosts are remembered, the one refused longest ago forgotten first', async (t) => {
  const clock = new ManualClock();
  const memory = new BdatMemory(clock, 60_000, 2);
  memory.refused('a.test');
  memory.refused('b.test');
  memory.refused('a.test'); // refused again: now the newest
  memory.refused('c.test');
  t.notOk(memory.allows('a.test'));
  t.ok(memory.allows('b.test'), 'the oldest went to make room');
  t.notOk(memory.allows('c.test'));
});
