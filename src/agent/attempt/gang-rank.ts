// What a rank of a multi-node job gets from its agent: the nodes file (one line per rank, an
// OpenMPI hostfile: the address, one slot, and the host's name as a comment) and, on rank 0, a free
// port for the gang's coordinator.

import { createServer } from "node:net";

/** `ADDRESS slots=1 # HOST rank R`, one line per rank, rank 0 first. */
export function nodesFile(nodes: readonly { host: string; address: string }[]): string {
  return nodes.map((node, rank) => `${node.address} slots=1 # ${node.host} rank ${rank}\n`).join("");
}

/** A TCP port nothing listens on now (the kernel's pick), for the job to listen on. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}
