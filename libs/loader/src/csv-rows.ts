import type { EventInput } from '@cdp/domain';
import type { Column } from './csv-columns.js';
import { fromText } from './field-text.js';
import {
  asSent,
  customerRecord,
  eventRecord,
  productRecord,
  type LoadContext,
  type LoadedRecord,
  type RecordProblem,
} from './record-rules.js';
import type { DataType } from './file-names.js';

/** The values of one CSV line by column, read by their types; empty fields left out (null: no value). */
interface LineValues {
  top: Record<string, string>;
  fields: Record<string, unknown>;
  identifiers: Record<string, unknown>;
  custom: Record<string, string>;
  order: Record<string, unknown>;
  item: Record<string, unknown>;
  problems: RecordProblem[];
}

export function lineValues(columns: readonly Column[], values: readonly string[]): LineValues {
  const line: LineValues = {
    top: {},
    fields: {},
    identifiers: {},
    custom: {},
    order: {},
    item: {},
    problems: [],
  };
  columns.forEach((column, i) => {
    const text = values[i] ?? '';
    if (text === '' || column.to === 'dropped') return;
    switch (column.to) {
      case 'top':
        line.top[column.name] = text;
        return;
      case 'identifier':
        line.identifiers[column.name] = text;
        return;
      case 'custom':
        line.custom[column.name] = text;
        return;
      default: {
        const read = fromText(column.type, text);
        const field = column.to === 'item' ? `item_${column.name}` : column.name;
        if ('reason' in read) line.problems.push({ field, reason: read.reason });
        else if (column.to === 'field') line.fields[column.name] = read.value;
        else if (column.to === 'order') line.order[column.name] = read.value;
        else line.item[column.name] = read.value;
      }
    }
  });
  return line;
}

/** One line of a customers, products or events file, as the equivalent API call reads it. */
export function lineRecord(
  dataType: Exclude<DataType, 'orders'>,
  line: LineValues,
  context: LoadContext,
): LoadedRecord | RecordProblem[] {
  if (line.problems.length) return line.problems;
  switch (dataType) {
    case 'customers':
      return customerRecord({ ...line.fields, ...line.custom }, context);
    case 'products':
      return productRecord({ ...line.fields, ...line.custom }, context);
    case 'events': {
      const input: EventInput = {
        type: line.top.type ?? '',
        identifiers: line.identifiers,
        data: { ...line.fields, ...line.custom },
      };
      if (line.top.action !== undefined) input.action = line.top.action;
      const record = eventRecord(input, context);
      // A CSV line's columns are flat: a problem names the column, not the API body's path to it.
      return Array.isArray(record) ? asSent(record, 'identifiers.', 'data.') : record;
    }
  }
}
