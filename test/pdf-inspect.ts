// Reads back what a generated PDF really contains, without trusting the code that wrote it: the page count
// (pdf-lib's parser), the text shown on the page (Tj/TJ strings of the decoded content streams), and the QR
// code (the filled squares of the content stream, rasterised and decoded with jsQR).
import { PDFArray, PDFDocument, PDFRawStream, decodePDFRawStream, type PDFObject } from 'pdf-lib';
import jsQRModule from 'jsqr';

// jsqr is CommonJS typed as an ES default export: under Node's ESM interop the function is the module itself.
const jsQR = jsQRModule as unknown as typeof jsQRModule.default;

export interface PdfContents {
  pageCount: number;
  /** Every string the page shows, in drawing order. */
  texts: string[];
  /** The decoded content stream operators (for anything else a test wants to look at). */
  operators: string;
}

function decodeString(token: string): string {
  if (token.startsWith('<')) {
    const hex = token.slice(1, -1).replace(/\s+/g, '');
    return Buffer.from(hex.length % 2 ? `${hex}0` : hex, 'hex').toString('latin1');
  }
  // A literal string (…): undo the escapes of PDF 32000 §7.3.4.2.
  return token
    .slice(1, -1)
    .replace(/\\([nrtbf()\\]|[0-7]{1,3})/g, (_m, e: string) =>
      /^[0-7]/.test(e) ? String.fromCharCode(parseInt(e, 8)) : ({ n: '\n', r: '\r', t: '\t', b: '\b', f: '\f' } as Record<string, string>)[e] ?? e,
    );
}

export async function inspectPdf(bytes: Uint8Array): Promise<PdfContents> {
  const doc = await PDFDocument.load(bytes);
  const page = doc.getPage(0);
  const contents = page.node.Contents();
  const refs: PDFObject[] = contents instanceof PDFArray ? contents.asArray() : contents ? [contents] : [];
  let operators = '';
  for (const ref of refs) {
    const stream = doc.context.lookup(ref);
    if (stream instanceof PDFRawStream) operators += Buffer.from(decodePDFRawStream(stream).decode()).toString('latin1') + '\n';
  }
  const texts: string[] = [];
  for (const m of operators.matchAll(/(<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\))\s*Tj/g)) texts.push(decodeString(m[1]));
  for (const m of operators.matchAll(/\[((?:\s*(?:<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\)|-?[\d.]+))*)\s*\]\s*TJ/g)) {
    texts.push([...m[1].matchAll(/<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\)/g)].map((s) => decodeString(s[0])).join(''));
  }
  return { pageCount: doc.getPageCount(), texts, operators };
}

/**
 * Finds the QR code among the page's filled squares (all of one small size), rebuilds its module grid,
 * renders it with a quiet zone and decodes it. Returns the encoded text, or null when there is none.
 */
export function decodeQrFromOperators(operators: string): string | null {
  const squares = [...operators.matchAll(/(-?[\d.]+) (-?[\d.]+) (-?[\d.]+) (-?[\d.]+) re/g)]
    .map((m) => m.slice(1, 5).map(Number))
    .filter(([, , w, h]) => w === h && w > 0 && w < 10);
  if (squares.length === 0) return null;
  const size = squares[0][2];
  const minX = Math.min(...squares.map((s) => s[0]));
  const minY = Math.min(...squares.map((s) => s[1]));
  const cells = squares.map(([x, y]) => [Math.round((x - minX) / size), Math.round((y - minY) / size)]);
  const modules = Math.max(...cells.map((c) => Math.max(c[0], c[1]))) + 1;
  const scale = 4;
  const quiet = 4;
  const px = (modules + 2 * quiet) * scale;
  const rgba = new Uint8ClampedArray(px * px * 4).fill(255);
  for (const [col, yIndex] of cells) {
    const row = modules - 1 - yIndex; // PDF y grows upwards, image rows downwards
    for (let dy = 0; dy < scale; dy++) {
      for (let dx = 0; dx < scale; dx++) {
        const i = (((row + quiet) * scale + dy) * px + (col + quiet) * scale + dx) * 4;
        rgba[i] = rgba[i + 1] = rgba[i + 2] = 0;
      }
    }
  }
  return jsQR(rgba, px, px)?.data ?? null;
}
