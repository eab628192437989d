import type { PipeTransform } from '@nestjs/common';

/**
 * A body class-validator cannot express cleanly (a union told apart by its fields, a recursive
 * filter): its hand parser, run as a pipe so that every route validates in the same place, before
 * the handler. The parser throws `ApiError.invalid` in the spec's envelope.
 */
export class ParsePipe<T> implements PipeTransform<unknown, T> {
  constructor(private readonly parse: (value: unknown) => T) {}

  transform(value: unknown): T {
    return this.parse(value);
  }
}
