import { expect } from "chai";
import { codeOfHttpStatus, decodeGrpcMessage } from "../../bench/lib/grpc-status.js";

describe("The bench's gRPC status helpers", () => {
  describe("decodeGrpcMessage()", () => {
    it("returns a message without escapes as it is", () => {
      expect(decodeGrpcMessage('tool "a.b" is already registered')).to.equal('tool "a.b" is already registered');
    });

    it("decodes percent-encoded UTF-8, several bytes to a letter", () => {
      expect(decodeGrpcMessage("tool%20name%20%22Fs%20R%C3%A9ad%22%20is%20invalid")).to.equal(
        'tool name "Fs Réad" is invalid',
      );
    });

    it("keeps a % that starts no escape", () => {
      expect(decodeGrpcMessage("100% done, %zz%4")).to.equal("100% done, %zz%4");
    });
  });

  describe("codeOfHttpStatus()", () => {
    it("maps HTTP statuses without a grpc-status as the gRPC spec does", () => {
      expect([400, 401, 403, 404, 429, 502, 503, 504, 200, 500].map(codeOfHttpStatus)).to.deep.equal([
        13, 16, 7, 12, 14, 14, 14, 14, 2, 2,
      ]);
    });
  });
});
