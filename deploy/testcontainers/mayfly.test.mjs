// Testcontainers for Node.js (testcontainers on npm, node:test): mayfly for one test file, ready
// once it logs "waiting for connections". The image is built from mayfly's Containerfile
// (`podman build -t mayfly:local .`) or pulled from where you pushed it.
import { after, before, test } from "node:test";
import { GenericContainer, Wait } from "testcontainers";
import { MongoClient } from "mongodb";

let container;
let client;

before(async () => {
  container = await new GenericContainer("mayfly:local")
    .withCommand(["--storage", "memory"])
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage("waiting for connections"))
    // Or the image's health check (`mayfly ping`): Wait.forHealthCheck()
    .start();
  const uri = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`;
  client = await MongoClient.connect(uri);
});

after(async () => {
  await client?.close();
  await container?.stop();
});

test("pings", async () => {
  await client.db("admin").command({ ping: 1 });
});
