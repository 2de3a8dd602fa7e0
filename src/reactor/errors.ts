// Errors a request can end with; the API maps them to 404, 409 and 400.

export class NotFoundError extends Error {}
export class ConflictError extends Error {}
export class InvalidRequestError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}
