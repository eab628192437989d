import { ApiProperty } from '@nestjs/swagger';
import { MAX_FILE_NAME } from '@cdp/loader';
import { IsText } from '../validation/constraints.js';

/** `POST /v3/files/uploads`: the name of the file to upload into the account's incoming prefix. */
export class UploadUrlDto {
  @ApiProperty({
    description:
      'one path segment: svc_<type>….csv[.gz] or …<type>.svc (types customers, products, orders, events)',
    maxLength: MAX_FILE_NAME,
  })
  @IsText({ required: true })
  name!: string;
}
