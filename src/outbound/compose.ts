import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { SendRequest } from '../domain/send-request.js';
import type { Mailbox } from '../domain/addresses.js';

const asAddress = (m: Mailbox): Mail.Address => ({ name: m.name ?? '', address: m.address });

/**
 * Composes the MIME message with nodemailer's composer from validated fields only. Nothing from
 * the request reaches nodemailer as an option: no `path`, `href` or `raw`, and file and URL
 * access are disabled besides, so no request can make the server read a file or fetch a URL.
 */
export async function composeMessage(req: SendRequest, messageId: string, now: number): Promise<Buffer> {
  const mail: Mail.Options = {
    disableFileAccess: true,
    disableUrlAccess: true,
    from: asAddress(req.from),
    to: req.to.map(asAddress),
    subject: req.subject,
    messageId: `<${messageId}>`,
    date: new Date(now),
    attachments: req.attachments.map((a) => ({ filename: a.filename, content: a.content, contentType: a.contentType })),
    headers: req.headers.map(([key, value]) => ({ key, value })),
  };
  // Bcc recipients are in the envelope only; the composer leaves Bcc out of the headers.
  if (req.cc.length > 0) mail.cc = req.cc.map(asAddress);
  if (req.replyTo) mail.replyTo = asAddress(req.replyTo);
  if (req.text !== undefined) mail.text = req.text;
  if (req.html !== undefined) mail.html = req.html;
  return new MailComposer(mail).compile().build();
}
