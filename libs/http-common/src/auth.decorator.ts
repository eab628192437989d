import { SetMetadata } from '@nestjs/common';

/**
 * Which key a route needs (spec/NOTES.md "Authentication and keys"): `public` accepts the tracker id or
 * the private key, `private` only the private key, `admin` the operator's bearer token, `none` nothing.
 * A route without the decorator needs the private key.
 */
export type Access = 'none' | 'public' | 'private' | 'admin';
export const ACCESS_KEY = 'cdp:access';
export const Auth = (access: Access) => SetMetadata(ACCESS_KEY, access);
