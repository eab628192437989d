import { identityIndexContract, profileStateContract } from '../identity.contract.js';
import { identityProperties } from '../identity-properties.contract.js';
import { profileNameProperties } from '../profile-names.contract.js';
import { MemoryIdentityIndex } from './memory-identity-index.adapter.js';
import { MemoryProfileState } from './memory-profile-state.adapter.js';

identityIndexContract('memory', () => Promise.resolve(new MemoryIdentityIndex()));
profileStateContract('memory', () => Promise.resolve(new MemoryProfileState()));
identityProperties('memory', () => Promise.resolve(new MemoryIdentityIndex()), 2000);
profileNameProperties('memory', () => Promise.resolve(new MemoryProfileState()), 300);
