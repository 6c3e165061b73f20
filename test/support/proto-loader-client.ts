import {
  loadPackageDefinition,
  credentials,
  type ChannelOptions,
  type Client,
  type GrpcObject,
  type ServiceClientConstructor,
} from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

/**
 * A grpc-js client for a service described by a .proto file on disk (health, reflection), the way
 * most grpc-js users build clients: proto-loader, then the generated constructor.
 */
export function createProtoLoaderClient(
  protoFile: string,
  serviceName: string,
  address: string,
  channelOptions: ChannelOptions = {},
): Client {
  const definition = loadPackageDefinition(
    loadSync(protoFile, { keepCase: true, longs: String, enums: String, defaults: true }),
  );
  let node: GrpcObject | ServiceClientConstructor = definition;
  for (const part of serviceName.split(".")) node = (node as GrpcObject)[part] as GrpcObject | ServiceClientConstructor;
  const constructor = node as ServiceClientConstructor;
  return new constructor(address, credentials.createInsecure(), channelOptions);
}
