/**
 * The control plane's validation, for routes outside this lib (libs/console-api): the envelope
 * ValidationPipe and the constraints DTOs are written with, so they answer as the API's routes do.
 */
export {
  EnvelopeValidation,
  EnvelopeValidationPipe,
  type EnvelopeValidationOptions,
} from './envelope-validation.pipe.js';
export { IsText, Satisfies } from './constraints.js';
