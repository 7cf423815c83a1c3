// The printable certificate: one A4 landscape page with the learner's name, the course, the serial number,
// the dates, and the public verification URL as text and as a QR code. The QR code is drawn as vector squares
// (no raster image), so it stays sharp at any print size and adds only a few kilobytes.
import { PDFDocument, StandardFonts, rgb, fill, popGraphicsState, pushGraphicsState, rectangle, setFillingRgbColor, type PDFFont, type PDFPage } from 'pdf-lib';
import QRCode from 'qrcode';
import type { CertificateStatus } from '../../db/types.js';

export interface PrintableCertificate {
  learnerName: string;
  courseTitle: string;
  number: string;
  status: CertificateStatus;
  issuedAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  verificationUrl: string;
}

const PAGE = { width: 841.89, height: 595.28 }; // A4 landscape, in points
const INK = rgb(0.11, 0.16, 0.25);
const MUTED = rgb(0.36, 0.4, 0.47);
const ACCENT = rgb(0.12, 0.35, 0.6);
const ALERT = rgb(0.7, 0.1, 0.1);
/** Size of one QR module in points: 2.6 pt ≈ 0.9 mm, well above what phone cameras need. */
export const QR_MODULE_POINTS = 2.6;

const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });

export function formatDate(instant: string): string {
  return DATE.format(new Date(instant));
}

// Latin letters with a stroke or similar have no Unicode decomposition: give them their base letter by hand.
const UNDECOMPOSABLE: Record<string, string> = { Ł: 'L', ł: 'l', Đ: 'D', đ: 'd', Ħ: 'H', ħ: 'h', ı: 'i', Ŧ: 'T', ŧ: 't', Ŀ: 'L', ŀ: 'l' };

/**
 * The standard PDF fonts only cover Windows-1252. Characters outside it are reduced to their base letter
 * (ő → o, Ł → L); anything else (other scripts) becomes "?". The public verification page and the API show
 * the exact name; embedding a Unicode font would lift this limit on the printout.
 */
export function printable(font: PDFFont, text: string): string {
  let out = '';
  for (const ch of text) {
    if (encodable(font, ch)) out += ch;
    else out += UNDECOMPOSABLE[ch] ?? ([...ch.normalize('NFKD')].filter((c) => encodable(font, c)).join('') || '?');
  }
  return out;
}

function encodable(font: PDFFont, ch: string): boolean {
  try {
    font.encodeText(ch);
    return true;
  } catch {
    return false;
  }
}

/** Draws text centred on the page, shrinking it (down to minSize) to fit, then wrapping it onto more lines. */
function centred(page: PDFPage, text: string, y: number, font: PDFFont, size: number, color = INK, minSize = size, maxWidth = PAGE.width - 160): number {
  let s = size;
  while (s > minSize && font.widthOfTextAtSize(text, s) > maxWidth) s -= 1;
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    const candidate = line ? `${line} ${word}` : word;
    if (line && font.widthOfTextAtSize(candidate, s) > maxWidth) {
      lines.push(line);
      line = word;
    } else line = candidate;
  }
  lines.push(line);
  for (const l of lines.slice(0, 3)) {
    page.drawText(l, { x: (PAGE.width - font.widthOfTextAtSize(l, s)) / 2, y, size: s, font, color });
    y -= s * 1.25;
  }
  return y;
}

/** Fills one square per dark module in a single path: compact, and exactly the matrix the URL encodes. */
function drawQrCode(page: PDFPage, text: string, x: number, y: number): number {
  const { modules } = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const ops = [pushGraphicsState(), setFillingRgbColor(0, 0, 0)];
  for (let row = 0; row < modules.size; row++) {
    for (let col = 0; col < modules.size; col++) {
      if (modules.get(row, col)) {
        ops.push(rectangle(x + col * QR_MODULE_POINTS, y + (modules.size - 1 - row) * QR_MODULE_POINTS, QR_MODULE_POINTS, QR_MODULE_POINTS));
      }
    }
  }
  ops.push(fill(), popGraphicsState());
  page.pushOperators(...ops);
  return modules.size * QR_MODULE_POINTS;
}

export async function renderCertificatePdf(c: PrintableCertificate, now: Date): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle(`Certificate ${c.number}`);
  doc.setSubject(`${c.courseTitle} — ${c.learnerName}`);
  doc.setProducer('LMS Integration API');
  doc.setCreator('LMS Integration API');
  doc.setCreationDate(now);
  doc.setModificationDate(now);
  const page = doc.addPage([PAGE.width, PAGE.height]);
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const serif = await doc.embedFont(StandardFonts.TimesRomanBold);

  page.drawRectangle({ x: 24, y: 24, width: PAGE.width - 48, height: PAGE.height - 48, borderColor: ACCENT, borderWidth: 3 });
  page.drawRectangle({ x: 32, y: 32, width: PAGE.width - 64, height: PAGE.height - 64, borderColor: ACCENT, borderWidth: 0.75 });

  let y = PAGE.height - 110;
  centred(page, 'CERTIFICATE OF COMPLETION', y, bold, 30, ACCENT);
  y -= 50;
  centred(page, 'This certifies that', y, regular, 14, MUTED);
  y -= 46;
  y = centred(page, printable(serif, c.learnerName), y, serif, 36, INK, 20);
  y -= 14;
  centred(page, 'has successfully completed', y, regular, 14, MUTED);
  y -= 36;
  centred(page, printable(bold, c.courseTitle), y, bold, 22, INK, 14);

  // Details on the left, QR code on the right, along the bottom.
  const left = 70;
  let dy = 170;
  const detail = (label: string, value: string, color = INK) => {
    page.drawText(label, { x: left, y: dy, size: 10, font: regular, color: MUTED });
    page.drawText(value, { x: left + 110, y: dy, size: 11, font: bold, color });
    dy -= 20;
  };
  detail('Certificate no.', c.number);
  detail('Issued', formatDate(c.issuedAt));
  detail('Valid until', c.expiresAt ? formatDate(c.expiresAt) : 'Does not expire');
  if (c.status === 'revoked') detail('Status', `REVOKED${c.revokedAt ? ` on ${formatDate(c.revokedAt)}` : ''}`, ALERT);
  else if (c.status === 'expired') detail('Status', 'EXPIRED', ALERT);

  page.drawText('Verify this certificate at', { x: left, y: 72, size: 9, font: regular, color: MUTED });
  page.drawText(c.verificationUrl, { x: left, y: 58, size: 9, font: regular, color: ACCENT });

  const qrSize = QRCode.create(c.verificationUrl, { errorCorrectionLevel: 'M' }).modules.size * QR_MODULE_POINTS;
  const qrX = PAGE.width - 70 - qrSize;
  drawQrCode(page, c.verificationUrl, qrX, 58);
  page.drawText('Scan to verify', { x: qrX + (qrSize - regular.widthOfTextAtSize('Scan to verify', 8)) / 2, y: 46, size: 8, font: regular, color: MUTED });

  // No object streams: plain cross-reference tables are readable by every PDF tool, old and new.
  return doc.save({ useObjectStreams: false });
}
