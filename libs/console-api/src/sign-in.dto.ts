import { IsText } from '@cdp/http-api/validation';

/** `POST /console/api/session`: the account's private key, which the page sends once and never keeps. */
export class SignInDto {
  @IsText({ required: true })
  private_key!: string;
}
