/**
 * What a file dropped in `{incoming_bucket}/<tracker_id>/` holds, told by its name (spec "Bulk file
 * ingestion"): CSV files by their prefix, JSON-lines files by their ending.
 */
export type DataType = 'customers' | 'products' | 'orders' | 'events';

export interface FileKind {
  dataType: DataType;
  format: 'csv' | 'jsonl';
  gzip: boolean;
}

const CSV_PREFIXES: readonly DataType[] = ['products', 'customers', 'orders', 'events'];
const JSONL_ENDINGS: readonly DataType[] = ['customers', 'products', 'events', 'orders'];

/** The longest name an upload may have (one path segment). */
export const MAX_FILE_NAME = 255;

/** A name is one path segment of printable characters: nothing that could leave the account's prefix. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > MAX_FILE_NAME) return `must be 1 to ${MAX_FILE_NAME} characters`;
  if (name.includes('/') || name.includes('\\')) return 'must not contain a path separator';
  if (name === '.' || name === '..' || name.startsWith('.')) return 'must not start with a dot';
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain control characters';
  if (name.includes('.partial-')) return 'must not contain ".partial-"';
  if (!fileKind(name)) {
    return (
      'must start with svc_products, svc_customers, svc_orders or svc_events and end with .csv or .csv.gz, ' +
      'or end with customers.svc, products.svc, events.svc or orders.svc'
    );
  }
  return undefined;
}

export function fileKind(name: string): FileKind | undefined {
  const lower = name;
  for (const type of CSV_PREFIXES) {
    if (!lower.startsWith(`svc_${type}`)) continue;
    if (lower.endsWith('.csv')) return { dataType: type, format: 'csv', gzip: false };
    if (lower.endsWith('.csv.gz')) return { dataType: type, format: 'csv', gzip: true };
  }
  for (const type of JSONL_ENDINGS) {
    if (lower.endsWith(`${type}.svc`)) return { dataType: type, format: 'jsonl', gzip: false };
    if (lower.endsWith(`${type}.svc.gz`)) return { dataType: type, format: 'jsonl', gzip: true };
  }
  return undefined;
}
