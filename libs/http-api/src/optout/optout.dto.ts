import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { MAX_STRING } from '@cdp/contracts';
import { isJunkIdentifierValue, normalizeIdentifierValue, type Identifier } from '@cdp/domain';
import { IsText, OneOfRequired, Satisfies } from '../validation/constraints.js';

/** Spec "Data types": an email is anything, `@`, anything, `.`, anything. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * `POST /v3/optout` (spec "Compliance opt-out"): `requester` is required, and one of email, phone or
 * vuid (spec "Errors": 400 when requester is empty or none of them is supplied).
 */
export class OptOutDto {
  @ApiProperty({ description: 'who asks, for the audit', maxLength: MAX_STRING })
  @IsText({ required: true })
  requester!: string;

  @ApiPropertyOptional({ maxLength: MAX_STRING, format: 'email' })
  @IsOptional()
  @IsText()
  @Satisfies('isEmail', (v) => !isJunkIdentifierValue(v) && EMAIL.test(v.trim()), 'must be an email address')
  email?: string;

  @ApiPropertyOptional({ maxLength: MAX_STRING, description: 'matched exactly against the stored value' })
  @IsOptional()
  @IsText()
  phone?: string;

  @ApiPropertyOptional({ maxLength: MAX_STRING })
  @IsOptional()
  @IsText()
  @Satisfies('isCookieId', (v) => !isJunkIdentifierValue(v), 'must be a cookie id')
  vuid?: string;

  /** Never sent: the rule that one of the identifiers is. */
  @OneOfRequired(['email', 'phone', 'vuid'], 'one of email, phone or vuid is required')
  readonly identifiers?: never;
}

export interface OptOutRequest {
  requester: string;
  /** The email and vuid sent, normalized as the identity index keeps them. */
  identifiers: Identifier[];
  /** Matched exactly against the stored value (spec "Compliance opt-out"), so never normalized. */
  phone?: string;
}

/** A validated opt-out as the processor takes it. */
export function optOutRequest(body: OptOutDto): OptOutRequest {
  const identifiers: Identifier[] = [];
  if (typeof body.email === 'string')
    identifiers.push({ kind: 'email', value: normalizeIdentifierValue('email', body.email) });
  if (typeof body.vuid === 'string')
    identifiers.push({ kind: 'vuid', value: normalizeIdentifierValue('vuid', body.vuid) });
  return typeof body.phone === 'string'
    ? { requester: body.requester, identifiers, phone: body.phone }
    : { requester: body.requester, identifiers };
}
