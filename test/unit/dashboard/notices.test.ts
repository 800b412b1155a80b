import t from 'tap';
import { ERRORS, errorText, NOTICES, noticeText } from '../../../src/dashboard/notices.js';

t.test('a code stands for a fixed sentence; anything else for a generic one', async (t) => {
  t.equal(noticeText('message-canceled'), NOTICES['message-canceled']);
  t.equal(errorText('too-late'), ERRORS['too-late']);
  t.equal(noticeText(undefined), undefined, 'no code, no banner');
  t.equal(errorText(''), undefined);
  for (const attack of [
    'Your account is suspended: call +1 555 0100',
    '<script>x</script>',
    'constructor',
    '__proto__',
    'toString',
  ]) {
    t.equal(errorText(attack), 'Something went wrong with the last request.', `error ${attack}`);
    t.equal(noticeText(attack), 'Done.', `notice ${attack}`);
  }
});
