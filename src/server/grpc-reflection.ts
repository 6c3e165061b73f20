import { toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { Server } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";

/**
 * Serves gRPC server reflection (v1 and v1alpha, through the official `@grpc/reflection`) for the
 * given proto files and their dependencies (the well-known types), so that grpcurl and `buf curl`
 * list and call every RPC without the proto files.
 *
 * The health service is served but not reflected: the descriptor the reflection package builds for
 * it from `grpc-health-check`'s proto cannot be resolved by `buf curl`, and health clients (probes,
 * meshes) carry the standard health proto themselves.
 */
export function addReflectionToGrpcServer(server: Server, files: readonly DescFile[]): void {
  const descriptors = new Map<string, Buffer>();
  const visit = (file: DescFile): void => {
    if (descriptors.has(file.proto.name)) return;
    for (const dependency of file.dependencies) visit(dependency);
    descriptors.set(file.proto.name, Buffer.from(toBinary(FileDescriptorProtoSchema, file.proto)));
  };
  files.forEach(visit);
  // The reflection package reads `fileDescriptorProtos` from the entries of a proto-loader package
  // definition; one entry holding every file is enough.
  const definition = { "toolruntime.descriptors": { format: "", fileDescriptorProtos: [...descriptors.values()] } };
  new ReflectionService(definition as unknown as ConstructorParameters<typeof ReflectionService>[0]).addToServer(
    server,
  );
}
