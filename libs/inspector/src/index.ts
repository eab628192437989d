export * from './inspector-entry.js';
export * from './inspector.port.js';
export * from './sampler.js';
export * from './verdicts.js';
