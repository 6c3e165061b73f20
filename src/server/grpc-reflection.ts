import { toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { Server } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { protoPath as healthProtoPath } from "grpc-health-check";

/**
 * Serves gRPC server reflection (v1 and v1alpha, through the official `@grpc/reflection`) for the
 * given proto files and the health service, so that grpcurl and `buf curl` can list and call every
 * RPC without the proto files. `files` are protobuf-es file descriptors; their dependencies (the
 * well-known types) are included.
 */
export function addReflectionToGrpcServer(server: Server, files: readonly DescFile[]): void {
  const descriptors = new Map<string, Buffer>();
  const visit = (file: DescFile): void => {
    if (descriptors.has(file.proto.name)) return;
    for (const dependency of file.dependencies) visit(dependency);
    descriptors.set(file.proto.name, Buffer.from(toBinary(FileDescriptorProtoSchema, file.proto)));
  };
  files.forEach(visit);
  // The reflection package reads `fileDescriptorProtos` from each entry of a proto-loader package
  // definition; the health service's definition comes from its own proto, loaded the same way.
  const health = loadSync(healthProtoPath, { keepCase: true });
  const definition = {
    ...health,
    "toolruntime.descriptors": { format: "", fileDescriptorProtos: [...descriptors.values()] },
  };
  new ReflectionService(definition as unknown as ConstructorParameters<typeof ReflectionService>[0]).addToServer(
    server,
  );
}
