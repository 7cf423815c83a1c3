// Small schema building blocks shared by every module.
import { Type, type TSchema } from '@sinclair/typebox';

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T10:41:00.000Z'] });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/** An id path parameter with its type prefix, e.g. IdParam('crs'). Unknown shapes are simply not found. */
export function IdParams(name = 'id') {
  return Type.Object({ [name]: Type.String({ minLength: 1, maxLength: 64 }) });
}

/** The common fields of every resource. */
export function resourceFields<O extends string>(object: O) {
  return {
    id: Type.String(),
    object: Type.Literal(object),
    created_at: Timestamp,
    updated_at: Timestamp,
  };
}

/** Parses a JSON text column that holds a list. */
export function jsonList<T = string>(text: string | null | undefined): T[] {
  if (!text) return [];
  const value = JSON.parse(text) as unknown;
  return Array.isArray(value) ? (value as T[]) : [];
}
