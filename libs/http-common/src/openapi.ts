import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';

/** The OpenAPI document, generated from the controllers and the ingestion schemas at boot. */
export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Customer data platform API')
    .setDescription(
      'The REST API of the spec (v3, v2) and the operator API (/admin/v1). Errors use one envelope.',
    )
    .setVersion('3')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'x-api-key' }, 'x-api-key')
    .addBearerAuth()
    .build();
  return SwaggerModule.createDocument(app, config);
}
