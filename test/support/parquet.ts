import { DataType, tableFromIPC, type Decimal } from 'apache-arrow';
import { readParquet } from 'parquet-wasm';

/**
 * The rows of a Parquet file as plain objects (Arrow reads a timestamp of any unit as milliseconds). An exact decimal (a custom number field, Parquet
 * DECIMAL) reads as its text (`-12.5000`): Arrow gives its unscaled integer, which no JS number holds
 * exactly at 18 digits.
 */
export function parquetRows(bytes: Uint8Array): Record<string, unknown>[] {
  const table = tableFromIPC(readParquet(bytes).intoIPCStream());
  const scales = table.schema.fields
    .filter((f) => DataType.isDecimal(f.type))
    .map((f) => [f.name, (f.type as Decimal).scale] as const);
  return table.toArray().map((r) => {
    const row = (r as { toJSON(): Record<string, unknown> }).toJSON();
    for (const [name, scale] of scales) {
      const unscaled = row[name] as { toString(): string } | null | undefined;
      if (unscaled !== null && unscaled !== undefined) row[name] = decimalText(unscaled.toString(), scale);
    }
    return row;
  });
}

function decimalText(unscaled: string, scale: number): string {
  const negative = unscaled.startsWith('-');
  const digits = (negative ? unscaled.slice(1) : unscaled).padStart(scale + 1, '0');
  const text = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return negative ? `-${text}` : text;
}
