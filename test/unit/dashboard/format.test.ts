import t from 'tap';
import { plural } from '../../../src/dashboard/format.js';

t.test('plural: the noun agrees with the count', async (t) => {
  t.equal(plural(1, 'attempt'), '1 attempt');
  t.equal(plural(2, 'attempt'), '2 attempts');
  t.equal(plural(0, 'attempt'), '0 attempts');
  t.equal(plural(1, 'delivery', 'deliveries'), '1 delivery');
  t.equal(plural(3, 'delivery', 'deliveries'), '3 deliveries');
});
