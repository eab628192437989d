import { identifierStateContract } from '../identifier-state.contract.js';
import { MemoryIdentifierState } from './memory-identifier-state.adapter.js';

identifierStateContract('memory', () => Promise.resolve(new MemoryIdentifierState()));
