// Outgoing e-mail. With SMTP_URL set, messages go over SMTP; without it they are written as .eml files to
// DATA_DIR/mail/ (one file per message, readable by any mail client and by the tests), and the path is logged.
// Every message has a plain-text and an HTML part. Messages may carry secrets (client secrets, sign-in links):
// the log names only the recipient, the subject and the file, never the body.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import pino from 'pino';
import type { Config } from '../config.js';
import { redactUrl } from '../config.js';
import { newId } from '../ids.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailLogger {
  info(obj: object, msg: string): void;
}

export interface SentMail {
  messageId: string;
  /** The .eml file written, when there is no SMTP server. */
  file: string | null;
}

export class Mailer {
  private readonly transport: Transporter;
  readonly outboxDir: string | null;

  constructor(
    private readonly config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'dataDir' | 'logLevel'>,
    private readonly log: MailLogger = pino({ level: config.logLevel }),
  ) {
    if (config.smtpUrl) {
      this.transport = nodemailer.createTransport(config.smtpUrl);
      this.outboxDir = null;
    } else {
      // The stream transport renders the complete RFC 5322 message into a buffer; we write it ourselves.
      this.transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
      this.outboxDir = join(config.dataDir, 'mail');
    }
  }

  /** Where messages go, for start-up logs. */
  describe(): string {
    return this.config.smtpUrl ? `SMTP ${redactUrl(this.config.smtpUrl)}` : `files in ${this.outboxDir}`;
  }

  async send(message: MailMessage): Promise<SentMail> {
    const info = await this.transport.sendMail({
      from: this.config.mailFrom,
      to: message.to,
      subject: message.subject,
      text: message.text,
      html: message.html,
    });
    if (!this.outboxDir) {
      this.log.info({ to: message.to, subject: message.subject }, 'mail sent over SMTP');
      return { messageId: info.messageId, file: null };
    }
    mkdirSync(this.outboxDir, { recursive: true, mode: 0o700 });
    // Time-ordered names (the id is a ULID), so the newest message sorts last.
    const file = join(this.outboxDir, `${newId('mail')}.eml`);
    writeFileSync(file, (info as unknown as { message: Buffer }).message, { mode: 0o600 });
    this.log.info({ to: message.to, subject: message.subject, file }, `mail written to ${file}`);
    return { messageId: info.messageId, file };
  }

  close(): void {
    this.transport.close();
  }
}
