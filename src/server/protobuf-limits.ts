/**
 * Deepest message nesting the server decodes. Each level of JSON inside a `google.protobuf.Struct`
 * costs two message levels (Struct and Value), so protobuf-es's default of 100 would stop
 * JSON at about 50 levels with a decoding error. At 1,000, inputs up to about 500 levels reach the
 * runner, whose JSON check then answers with a precise InputValidationError (its limit is 64).
 */
export const protobufRecursionLimit = 1000;
