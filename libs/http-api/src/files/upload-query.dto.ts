import { IsText, Satisfies } from '../validation/constraints.js';

/**
 * The query of an upload URL the API serves (`PUT /v3/files/uploads/{tracker_id}/{name}`): the expiry
 * and the signature the API put there when it issued the URL. Their shape is checked here; whether the
 * signature is the API's own, and the URL still valid, is UploadSigner's (403).
 */
export class UploadQueryDto {
  @IsText({ required: true })
  @Satisfies('isExpiry', (v) => /^\d{1,15}$/.test(v), 'must be a whole number of seconds since 1970')
  expires!: string;

  @IsText({ required: true })
  @Satisfies('isSignature', (v) => /^[0-9a-f]{64}$/.test(v), 'must be 64 lowercase hexadecimal digits')
  signature!: string;
}
