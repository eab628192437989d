export * from './activity.js';
export * from './bulk-loader.js';
export * from './file-names.js';
export * from './loader.module.js';
