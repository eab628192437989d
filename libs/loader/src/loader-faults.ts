import { OTHER_FAULT_POINTS } from '@cdp/faults';

export { faultPoint } from '@cdp/faults';
export const FAULT_POINTS_LOADER = { publish: OTHER_FAULT_POINTS.loaderPublish } as const;
