// POST /v1/enrolments/bulk: each item in its own transaction with the same seat rule as a single enrolment
// (takeSeat is one conditional UPDATE), so one bad item fails alone and seats are never over-allocated.
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import type { BulkOutcome } from '../people/service.js';
import * as people from '../people/repo.js';
import type { Enrolment, EnrolmentBulkItemInput } from './schemas.js';
import { enrolInTransaction, inEnrolmentTransaction } from './service.js';

function learnerReference(item: EnrolmentBulkItemInput): { by: 'learner_id' | 'email' | 'external_id'; value: string } {
  const given = (['learner_id', 'email', 'external_id'] as const).filter((k) => item[k] !== undefined);
  if (given.length !== 1) {
    throw new AppError('validation_failed', 'Name the learner by exactly one of learner_id, email or external_id.', {
      errors: [{ pointer: '/learner_id', message: 'exactly one of learner_id, email, external_id is required' }],
    });
  }
  return { by: given[0], value: item[given[0]]! };
}

export async function bulkEnrol(ctx: AppContext, orgId: string, items: EnrolmentBulkItemInput[]): Promise<BulkOutcome<Enrolment>[]> {
  const out: BulkOutcome<Enrolment>[] = [];
  const lock = ctx.db.dialect;
  for (const [index, item] of items.entries()) {
    try {
      const ref = learnerReference(item);
      const enrolment = await inEnrolmentTransaction(ctx, async (trx) => {
        const learner =
          ref.by === 'learner_id'
            ? await people.findUser(trx, orgId, ref.value, lock)
            : ref.by === 'email'
              ? await people.findUserByEmail(trx, orgId, ref.value, lock)
              : await people.findUserByExternalId(trx, orgId, ref.value, lock);
        return enrolInTransaction(trx, ctx, orgId, learner, item);
      });
      out.push({ index, result: 'created', value: enrolment });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      out.push({ index, result: 'error', error: err });
    }
  }
  return out;
}
