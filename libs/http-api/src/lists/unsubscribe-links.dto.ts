import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { MAX_STRING } from '@cdp/contracts';
import { isJunkIdentifierValue } from '@cdp/domain';
import { IsText, Satisfies } from '../validation/constraints.js';

/** Spec "Data types": an email is anything, `@`, anything, `.`, anything. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A link names at most this many lists: it must stay a URL a mail client keeps whole. */
export const MAX_LINK_LISTS = 50;
/** Longer than any token a link is made with (an email and MAX_LINK_LISTS list ids, signed). */
const MAX_TOKEN_LENGTH = 150_000;

/** `POST /v3/lists/unsubscribe-links`: whom the link unsubscribes, and from which lists (none: globally). */
export class UnsubscribeLinkDto {
  @ApiProperty({ maxLength: MAX_STRING, format: 'email' })
  @IsText({ required: true })
  @Satisfies('isEmail', (v) => !isJunkIdentifierValue(v) && EMAIL.test(v.trim()), 'must be an email address')
  email!: string;

  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_LINK_LISTS,
    description: 'the lists of the campaign; absent or empty: the link opts the address out globally',
  })
  @IsOptional()
  @IsArray({ message: 'must be an array of list ids' })
  @ArrayMaxSize(MAX_LINK_LISTS, { message: `must name at most ${MAX_LINK_LISTS} lists` })
  @IsString({ each: true, message: 'must be an array of list ids' })
  @MinLength(1, { each: true, message: 'must be an array of list ids' })
  @MaxLength(MAX_STRING, { each: true, message: `list ids have at most ${MAX_STRING} characters` })
  list_ids?: string[];
}

/** The query of an unsubscribe link: its signed token. */
export class UnsubscribeTokenQueryDto {
  @ApiProperty({ description: 'the signed token the link carries' })
  @IsString({ message: 'is required' })
  @MinLength(1, { message: 'is required' })
  @MaxLength(MAX_TOKEN_LENGTH, { message: 'is not a valid unsubscribe link' })
  token!: string;
}
