import { consentStateContract } from '../consent-state.contract.js';
import { MemoryConsentState } from './memory-consent-state.adapter.js';

consentStateContract('memory', () => Promise.resolve(new MemoryConsentState()));
