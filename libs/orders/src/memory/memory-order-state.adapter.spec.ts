import { orderStateContract } from '../order-state.contract.js';
import { MemoryOrderState } from './memory-order-state.adapter.js';

orderStateContract('memory', () => Promise.resolve(new MemoryOrderState()));
