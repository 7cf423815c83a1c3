// The scope table of the contract (§2). Descriptions are shown in the developer portal and the OpenAPI document.
export const SCOPES = {
  'organization:read': 'Read your organization (GET /v1/organization).',
  'seats:read': 'Read your seat allowance and how many seats are in use.',
  'users:read': "Read your organization's user accounts.",
  'users:write': "Create, change and remove your organization's user accounts.",
  'learners:read': "Read your organization's learner list.",
  'learners:write': 'Add, change and remove learners, one by one or in bulk.',
  'courses:read': 'Read the published course catalogue and its categories.',
  'enrolments:read': "Read enrolments of your organization's learners.",
  'enrolments:write': 'Enrol learners (within your seats), record progress, complete and withdraw.',
  'certificates:read': "Read and download your learners' certificates.",
  'certificates:write': 'Revoke certificates.',
  'webhooks:read': 'Read your webhook endpoints and their delivery log.',
  'webhooks:write': 'Create, change, test and remove webhook endpoints; retry deliveries.',
  'events:read': "Read your organization's event log.",
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.prototype.hasOwnProperty.call(SCOPES, value);
}

/** Parses a space-separated scope string, dropping duplicates; unknown names are returned separately. */
export function parseScopes(text: string): { scopes: Scope[]; unknown: string[] } {
  const scopes: Scope[] = [];
  const unknown: string[] = [];
  for (const part of text.split(/\s+/).filter(Boolean)) {
    if (isScope(part)) {
      if (!scopes.includes(part)) scopes.push(part);
    } else unknown.push(part);
  }
  return { scopes, unknown };
}
