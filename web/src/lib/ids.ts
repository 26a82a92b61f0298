// Event ids as the page holds them.

/** An event id as the API sends it: a decimal string (ids pass 2^53 from rank 8192 on, past what a
 *  number holds exactly). Opaque: compared and sent back as it came, never turned into a number. */
export type EventId = string;

/** Whether `text` is an event id (decimal digits), e.g. from a link. */
export function isEventId(text: string | null | undefined): text is EventId {
  return !!text && /^\d+$/.test(text) && text.length <= 20;
}

/** Numeric order of two event ids. */
export function compareIds(a: EventId, b: EventId): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** The event id `text` names (decimal digits, as a link carries it), without leading zeros; undefined if none. */
export function parseEventId(text: string | null | undefined): EventId | undefined {
  return isEventId(text) ? text.replace(/^0+(?=\d)/, "") : undefined;
}
