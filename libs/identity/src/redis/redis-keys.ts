/**
 * Key layout. Every key of an account carries `{<account>}` as its hash tag, so an account lives in
 * one cluster slot and a function may touch all of its keys.
 */
export const keys = {
  identities: (account: string) => `cdp:{${account}}:ids`,
  ready: (account: string) => `cdp:{${account}}:ready`,
  rebuilding: (account: string) => `cdp:{${account}}:rebuilding`,
  profile: (account: string, customerId: string) => `cdp:{${account}}:p:${customerId}`,
  profilePattern: (account: string) => `cdp:{${account}}:p:*`,
};
