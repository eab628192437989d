export { MemoryPurchaseNotices } from './memory-purchase-notices.adapter.js';
